-- `moonadm join`: kubeadm v1.35's join phases, both orders on their own lines. With
-- ControlPlaneKubeletLocalMode (the default, and kubeadm v1.35's only way) the kubelet of a new
-- control plane talks to its local kube-apiserver, so the local etcd member must exist before the
-- wait for the TLS bootstrap (KEP-4471): etcd-join runs right after kubelet-start. With the gate off
-- (moonadm's experiment) it is kubeadm's old order: the kubelet bootstraps through the control-plane
-- endpoint and control-plane-join/etcd adds the member afterwards.
local flow = require "framework.flow"
local when = flow.when

return flow.from_list("join", {
  "preflight",
  "control-plane-prepare",
  "check-etcd",
  "kubelet-start",
  when("ControlPlaneKubeletLocalMode", "etcd-join"),
  "kubelet-wait-bootstrap",
  "control-plane-join",
  when("ControlPlaneKubeletLocalMode=false", "control-plane-join/etcd"),
  "control-plane-join/mark-control-plane",
  "control-plane-endpoint", -- moonadm's own: the cluster's virtual IP (keepalived + haproxy), when it has one
  "wait-control-plane",
})
