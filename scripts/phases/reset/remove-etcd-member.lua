-- reset phase "remove-etcd-member": Remove a local etcd member..
-- Its body lands with the reset issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "remove-etcd-member",
  desc = "Remove a local etcd member.",
  run = phase.todo("remove-etcd-member"),
}
