-- upgrade apply phase "bootstrap-token": Configures bootstrap token and cluster-info RBAC rules.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "bootstrap-token",
  desc = "Configures bootstrap token and cluster-info RBAC rules",
  run = phase.todo("bootstrap-token"),
}
