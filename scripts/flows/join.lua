-- `moonadm join`: kubeadm v1.35's join phases. With ControlPlaneKubeletLocalMode (the default, and
-- kubeadm v1.35's only way) the kubelet of a new control plane talks to its local kube-apiserver,
-- so the local etcd member must exist before waiting for the TLS bootstrap (KEP-4471): etcd-join
-- and kubelet-wait-bootstrap run between kubelet-start and control-plane-join. With the gate off
-- (moonadm's experiment) this is kubeadm's old order: kubelet-start waits for the bootstrap itself
-- and control-plane-join/etcd adds the member.
local flow = require "flow"
local when = flow.when

return flow.from_list("join", {
  "preflight",
  "control-plane-prepare",
  "check-etcd",
  "kubelet-start",
  when("ControlPlaneKubeletLocalMode", "etcd-join"),
  when("ControlPlaneKubeletLocalMode", "kubelet-wait-bootstrap"),
  "control-plane-join",
  "wait-control-plane",
})
