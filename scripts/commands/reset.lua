-- `moonadm reset [flags]` and `moonadm reset phase <name>`: kubeadm's reset (docs/reset.md).
-- Before any phase, the cluster's configuration is read with --kubeconfig (scripts/flows/reset/data.lua);
-- after a whole reset, kubeadm's note on what it does not clean.
local flowcmd = require "commands.flowcmd"
local log = require "framework.log"
local reset_data = require "flows.reset.data"

local M = {}

M.flags = {
  { name = "cert-dir", type = "string", help = "The path to the directory where the certificates are stored (default /etc/kubernetes/pki)" },
  { name = "cleanup-tmp-dir", type = "bool", help = "Cleanup the \"/etc/kubernetes/tmp\" directory" },
  { name = "cri-socket", type = "string", help = "Path to the CRI socket to connect" },
  { name = "force", short = "f", type = "bool", help = "Reset the node without prompting for confirmation" },
  { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf", help = "The kubeconfig file to use when talking to the cluster" },
  { name = "unsafe-wipe-etcd-data", type = "bool", help = "moonadm: delete this control plane's etcd data even when its member could not be removed from the etcd cluster (that can cost the cluster its quorum)" },
}

-- kubeadm v1.35's closing note, then what it means on this node.
M.NOTE = [[
The reset process does not perform cleanup of CNI plugin configuration,
network filtering rules and kubeconfig files.

For information on how to perform this cleanup manually, please see:
    https://k8s.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/

Not cleaned by moonadm reset: the CNI configuration in /etc/cni/net.d, iptables/nftables and IPVS
rules (iptables -F && iptables -t nat -F && iptables -t mangle -F && iptables -X; ipvsadm --clear),
and $HOME/.kube/config.
]]

local OPTS <const> = { name = "reset", flow = "reset", kind = "reset", flags = M.flags, cmd = "reset", cmd_words = { "reset" },
  desc = "Performs a best effort revert of changes made to this host by 'moonadm init' or 'moonadm join'",
  prepare = function(ctx) reset_data.prepare(ctx) end, prepare_data = reset_data.DATA,
  -- reset removes the journal's directory: a journal of the reset itself would only bring it back
  no_journal = true }

M.help, M.help_for = flowcmd.help_tree(OPTS)

local function wants_note(argv)
  for _, a in ipairs(argv) do
    if a == "-h" or a == "--help" then return false end
  end
  return argv[1] ~= "phase"
end

function M.main(argv)
  local code = flowcmd.main(setmetatable({ argv = argv }, { __index = OPTS }))
  if code == 0 and wants_note(argv) then log.result(M.NOTE) end
  return code
end

return M
