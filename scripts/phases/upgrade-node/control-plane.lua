-- upgrade node phase "control-plane": Upgrade the control plane instance deployed on this node, if any.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "control-plane",
  desc = "Upgrade the control plane instance deployed on this node, if any",
  run = phase.todo("control-plane"),
}
