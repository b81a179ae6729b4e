-- join phase "check-etcd": Check that the local etcd is healthy.
-- Its body lands with the join issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "check-etcd",
  desc = "Check that the local etcd is healthy",
  hidden = true,
  requires = { "pki" },
  run = phase.todo("check-etcd"),
}
