-- `moonadm reset`: kubeadm's reset phases.
local flow = require "flow"

return flow.new("reset")
  :append("preflight")
  :append("remove-etcd-member")
  :append("cleanup-node")
