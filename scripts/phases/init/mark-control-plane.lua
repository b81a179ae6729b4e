-- init phase "mark-control-plane": Mark a node as a control-plane.
-- Labels and taints this node once the kubelet registered it (scripts/cluster/node.lua).
local lazy = require "framework.lazy"
local cluster_node = lazy.require "cluster.node"

return {
  name = "mark-control-plane",
  flags = { "config", "dry-run", "node-name" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Mark a node as a control-plane",
  requires = { "local-apiserver" },
  run = function(ctx) cluster_node.mark_control_plane(ctx) end,
}
