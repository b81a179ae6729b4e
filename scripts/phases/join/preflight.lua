-- join phase "preflight": Run join pre-flight checks.
-- Its body lands with the node files issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "preflight",
  desc = "Run join pre-flight checks",
  always_run = true,
  provides = { "preflight" },
  run = phase.todo("preflight"),
}
