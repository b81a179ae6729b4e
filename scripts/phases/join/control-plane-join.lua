-- join phase "control-plane-join": Join a machine as a control plane instance.
local phase = require "phase"
local data = require "join.data"

return {
  name = "control-plane-join",
  flags = { "apiserver-advertise-address", "config", "control-plane", "dry-run", "node-name", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Join a machine as a control plane instance",
  requires = { "kubelet-started" },
  children = {
    -- kubeadm's old place for the etcd member add, only in the old join order (moonadm's experiment
    -- with ControlPlaneKubeletLocalMode=false); the stock order adds the member in etcd-join.
    phase.when(phase.gate("ControlPlaneKubeletLocalMode", false),
      { name = "etcd", desc = "Add a new local etcd member", run = function(ctx) require("join.etcd").join(ctx) end,
        requires = { "pki" }, provides = { "local-etcd" } }),
    { name = "mark-control-plane", desc = "Mark a node as a control-plane", run = function(ctx)
      if not data.is_control_plane(ctx) then return end
      data.admin(ctx)
      require("cluster.node").mark_control_plane(ctx)
    end },
  },
}
