-- upgrade node phase "preflight": Run upgrade node pre-flight checks.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "preflight",
  desc = "Run upgrade node pre-flight checks",
  always_run = true,
  run = phase.todo("preflight"),
}
