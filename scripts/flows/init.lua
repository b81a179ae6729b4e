-- `moonadm init`: kubeadm v1.35's init phases, in kubeadm's order.
local flow = require "flow"

return flow.new("init")
  :append("preflight")
  :append("certs")
  :append("kubeconfig")
  :append("etcd")
  :append("control-plane")
  :append("kubelet-start")
  :append("wait-control-plane")
  :append("upload-config")
  :append("upload-certs")
  :append("mark-control-plane")
  :append("bootstrap-token")
  :append("kubelet-finalize")
  :append("addon")
  :append("show-join-command")
