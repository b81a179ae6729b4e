-- join phase "control-plane-join": Join a machine as a control plane instance.
local lazy = require "framework.lazy"
local phase = require "framework.phase"
local nodeview = lazy.require "node.view"
local etcd_join = lazy.require "etcd.join"
local cluster_node = lazy.require "cluster.node"

return {
  name = "control-plane-join",
  flags = { "apiserver-advertise-address", "config", "control-plane", "dry-run", "node-name", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Join a machine as a control plane instance",
  requires = { "kubelet-started", "kubelet-bootstrapped" }, -- the Node it marks exists once the kubelet has bootstrapped
  requires_why = { ["kubelet-bootstrapped"] = "control-plane-join marks this node's Node object, which the kubelet registers only after its TLS bootstrap: keep kubelet-wait-bootstrap before it (in both join orders)." },
  children = {
    -- kubeadm's old place for the etcd member add (the old join order, ControlPlaneKubeletLocalMode=false:
    -- flows/join.lua gates its line; the gate here holds for a flow that lists this parent alone).
    phase.when(phase.gate("ControlPlaneKubeletLocalMode", false),
      { name = "etcd", desc = "Add a new local etcd member", run = function(ctx) etcd_join.join(ctx) end,
        requires = { "pki" }, provides = { "local-etcd" } }),
    { name = "mark-control-plane", desc = "Mark a node as a control-plane", run = function(ctx)
      if not nodeview.is_control_plane(ctx) then return end
      cluster_node.mark_control_plane(ctx)
    end },
  },
}
