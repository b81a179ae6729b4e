-- upgrade apply phase "control-plane": Upgrade the control plane.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "control-plane",
  desc = "Upgrade the control plane",
  run = phase.todo("control-plane"),
}
