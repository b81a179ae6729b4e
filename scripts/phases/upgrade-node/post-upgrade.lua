-- upgrade node phase "post-upgrade": Run post upgrade tasks.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "post-upgrade",
  desc = "Run post upgrade tasks",
  run = phase.todo("post-upgrade"),
}
