-- join phase "control-plane-join": Join a machine as a control plane instance.
-- Its body lands with the join issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "control-plane-join",
  desc = "Join a machine as a control plane instance",
  requires = { "kubelet-started" },
  children = {
    -- kubeadm's old place for the etcd member add, only in the old join order (moonadm's experiment
    -- with ControlPlaneKubeletLocalMode=false); the stock order adds the member in etcd-join.
    phase.when(phase.gate("ControlPlaneKubeletLocalMode", false),
      { name = "etcd", desc = "Add a new local etcd member", run = phase.todo("control-plane-join/etcd"),
        requires = { "pki" }, provides = { "local-etcd" } }),
    { name = "mark-control-plane", desc = "Mark a node as a control-plane", run = phase.todo("control-plane-join/mark-control-plane") },
  },
}
