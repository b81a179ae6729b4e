-- reset phase "cleanup-node": Run cleanup node..
-- Its body lands with the reset issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "cleanup-node",
  desc = "Run cleanup node.",
  aliases = { "cleanupnode" },
  run = phase.todo("cleanup-node"),
}
