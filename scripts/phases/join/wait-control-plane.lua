-- join phase "wait-control-plane": Wait for the control plane to start.
-- Its body lands with the join issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "wait-control-plane",
  desc = "Wait for the control plane to start",
  requires = { "control-plane-manifests" },
  run = phase.todo("wait-control-plane"),
}
