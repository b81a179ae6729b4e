-- reset phase "preflight": Run reset pre-flight checks.
-- Its body lands with the reset issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "preflight",
  desc = "Run reset pre-flight checks",
  always_run = true,
  run = phase.todo("preflight"),
}
