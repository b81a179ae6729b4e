-- `moonadm upgrade node`: kubeadm's phases for every node after the first control plane.
local flow = require "framework.flow"

return flow.from_list("upgrade-node", {
  "preflight",
  "control-plane",
  "kubeconfig",
  "kubelet-config",
  "addon",
  "post-upgrade",
})
