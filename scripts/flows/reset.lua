-- `moonadm reset`: kubeadm's reset phases.
local flow = require "framework.flow"

return flow.from_list("reset", {
  "preflight",
  "remove-etcd-member",
  "cleanup-node",
  "control-plane-endpoint", -- moonadm's own: the virtual IP's files, when this node has them
})
