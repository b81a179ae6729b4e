-- `moonadm upgrade apply`: kubeadm's phases; etcd upgrade and certificate renewal happen inside
-- control-plane, as in kubeadm.
local flow = require "framework.flow"

return flow.from_list("upgrade-apply", {
  "preflight",
  "control-plane",
  "upload-config",
  "kubeconfig",
  "kubelet-config",
  "bootstrap-token",
  "addon",
  "post-upgrade",
})
