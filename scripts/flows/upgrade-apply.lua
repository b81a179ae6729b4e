-- `moonadm upgrade apply`: kubeadm's phases; etcd upgrade and certificate renewal happen inside
-- control-plane, as in kubeadm.
local flow = require "flow"

return flow.new("upgrade-apply")
  :append("preflight")
  :append("control-plane")
  :append("upload-config")
  :append("kubeconfig")
  :append("kubelet-config")
  :append("bootstrap-token")
  :append("addon")
  :append("post-upgrade")
