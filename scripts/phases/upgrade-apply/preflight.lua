-- upgrade apply phase "preflight": Run preflight checks before upgrade.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "preflight",
  desc = "Run preflight checks before upgrade",
  always_run = true,
  run = phase.todo("preflight"),
}
