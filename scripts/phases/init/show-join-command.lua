-- init phase "show-join-command": Show the join command for control-plane and worker node.
-- Its body lands with the init issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "show-join-command",
  desc = "Show the join command for control-plane and worker node",
  run = phase.todo("show-join-command"),
}
