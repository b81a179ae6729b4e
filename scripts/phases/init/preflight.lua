-- init phase "preflight": Run pre-flight checks.
-- These are the checks on files and the user; the node checks (ports, swap, binaries, CPU, memory,
-- kubelet skew) join them with the node files issue.
local preflight = require "preflight"

local MANIFESTS <const> = "/etc/kubernetes/manifests"

return {
  name = "preflight",
  desc = "Run pre-flight checks",
  always_run = true,
  provides = { "preflight" },
  run = function(ctx)
    local checks = { preflight.is_privileged_user }
    for _, c in ipairs { "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd" } do
      checks[#checks + 1] = preflight.file_available(("%s/%s.yaml"):format(MANIFESTS, c))
    end
    local etcd = ctx.cfg.cluster and ctx.cfg.cluster.etcd
    if not (etcd and etcd["external"]) then
      checks[#checks + 1] = preflight.dir_available((etcd and etcd["local"] and etcd["local"].dataDir) or "/var/lib/etcd")
    end
    require("log").info("[preflight] Running pre-flight checks")
    preflight.run(ctx, checks)
  end,
}
