-- `moonadm upgrade node`: kubeadm's phases for every node after the first control plane.
local flow = require "flow"

return flow.new("upgrade-node")
  :append("preflight")
  :append("control-plane")
  :append("kubeconfig")
  :append("kubelet-config")
  :append("addon")
  :append("post-upgrade")
