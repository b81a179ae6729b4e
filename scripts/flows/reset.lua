-- `moonadm reset`: kubeadm's reset phases.
local flow = require "framework.flow"

return flow.from_list("reset", {
  "preflight",
  "remove-etcd-member",
  "cleanup-node",
})
