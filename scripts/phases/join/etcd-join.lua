-- join phase "etcd-join": Join etcd for control plane nodes.
-- Its body lands with the join issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "etcd-join",
  desc = "Join etcd for control plane nodes",
  requires = { "pki", "kubelet-started" },
  provides = { "local-etcd" },
  run = phase.todo("etcd-join"),
}
