-- init phase "mark-control-plane": Mark a node as a control-plane.
-- Its body lands with the init issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "mark-control-plane",
  desc = "Mark a node as a control-plane",
  requires = { "local-apiserver" },
  run = phase.todo("mark-control-plane"),
}
