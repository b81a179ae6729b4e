-- post-upgrade (kubeadm v1.35 keeps the phase for clean-ups it no longer needs): the final
-- message of the run, saying what to do next.
local log = require "framework.log"

local M = {}

function M.apply(ctx)
  local target = ctx.cfg.cluster.kubernetesVersion
  log.info("[upgrade] SUCCESS! A control plane node of your cluster was upgraded to %q.", target)
  log.info("")
  log.info("[upgrade] Now please proceed with upgrading the rest of the nodes by following the right order.")
end

function M.node(ctx)
  log.info("[upgrade] The upgrade for this node was successfully completed (cluster version %s)!",
    tostring(ctx.cfg.cluster.kubernetesVersion))
  log.info("[upgrade] Now you should go ahead and upgrade the kubelet package using your package manager.")
end

return M
