-- `moonadm reset [flags]` and `moonadm reset phase <name>`.
local flowcmd = require "commands.flowcmd"

local M = {}

M.flags = {
  { name = "cert-dir", type = "string", help = "The path to the directory where the certificates are stored (default /etc/kubernetes/pki)" },
  { name = "cleanup-tmp-dir", type = "bool", help = "Cleanup the \"/etc/kubernetes/tmp\" directory" },
  { name = "cri-socket", type = "string", help = "Path to the CRI socket to connect" },
  { name = "force", short = "f", type = "bool", help = "Reset the node without prompting for confirmation" },
  { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf", help = "The kubeconfig file to use when talking to the cluster" },
}

function M.main(argv)
  return flowcmd.main { name = "reset", flow = "reset", kind = "reset", argv = argv, flags = M.flags,
    desc = "Performs a best effort revert of changes made to this host by 'moonadm init' or 'moonadm join'" }
end

return M
