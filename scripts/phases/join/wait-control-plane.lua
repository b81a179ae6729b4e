-- join phase "wait-control-plane": Wait for the control plane to start.
-- A joining control plane waits for its own components (kube-apiserver on its advertise address),
-- as kubeadm v1.35 does; a worker has none.
local lazy = require "framework.lazy"
local nodeview = lazy.require "node.view"
local cluster_wait = lazy.require "cluster.wait"

return {
  name = "wait-control-plane",
  flags = {}, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Wait for the control plane to start",
  requires = { "control-plane-manifests" },
  run = function(ctx)
    if not nodeview.is_control_plane(ctx) then return end
    cluster_wait.run(ctx)
  end,
}
