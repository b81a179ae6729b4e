-- `moonadm upgrade plan|apply|node` (plan lands with the upgrade issue).
local errors = require "errors"
local flowcmd = require "commands.flowcmd"

local M = {}

local shared = {
  { name = "certificate-renewal", type = "bool", default = true, help = "Perform the renewal of certificates used by component changed during upgrades" },
  { name = "etcd-upgrade", type = "bool", default = true, help = "Perform the upgrade of etcd" },
  { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf", help = "The kubeconfig file to use when talking to the cluster" },
  { name = "patches", type = "string", help = "Path to a directory that contains files named \"target[suffix][+patchtype].extension\"" },
}

M.apply_flags = {
  { name = "allow-experimental-upgrades", type = "bool", help = "Show unstable versions of Kubernetes as an upgrade alternative" },
  { name = "allow-release-candidate-upgrades", type = "bool", help = "Show release candidate versions of Kubernetes as an upgrade alternative" },
  { name = "force", short = "f", type = "bool", help = "Force upgrading although some requirements might not be met" },
  { name = "print-config", type = "bool", help = "Specifies whether the configuration file that will be used in the upgrade should be printed or not" },
  { name = "yes", short = "y", type = "bool", help = "Perform the upgrade and do not prompt for confirmation (non-interactive mode)" },
}
for _, f in ipairs(shared) do M.apply_flags[#M.apply_flags + 1] = f end

function M.main(argv)
  local sub = argv[1]
  local rest = table.move(argv, 2, #argv, 1, {})
  if sub == "apply" then
    return flowcmd.main { name = "upgrade-apply", flow = "upgrade-apply", kind = "upgrade", argv = rest,
      flags = M.apply_flags, desc = "Upgrade your Kubernetes cluster to the specified version" }
  elseif sub == "node" then
    return flowcmd.main { name = "upgrade-node", flow = "upgrade-node", kind = "upgrade", argv = rest,
      flags = shared, desc = "Upgrade commands for a node in the cluster" }
  elseif sub == "plan" then
    errors.not_implemented("upgrade plan")
  end
  io.stderr:write("usage: moonadm upgrade plan|apply|node [flags]\n")
  return 1
end

return M
