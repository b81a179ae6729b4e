-- init phase "wait-control-plane": Wait for the control plane to start.
-- kubelet healthz, then every component health endpoint (scripts/cluster/wait.lua).
local lazy = require "framework.lazy"
local cluster_wait = lazy.require "cluster.wait"

return {
  name = "wait-control-plane",
  flags = {}, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Wait for the control plane to start",
  requires = { "kubelet-started", "control-plane-manifests" },
  provides = { "local-apiserver" },
  run = function(ctx) cluster_wait.run(ctx) end,
}
