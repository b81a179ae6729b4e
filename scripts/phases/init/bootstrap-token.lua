-- init phase "bootstrap-token": Generates bootstrap tokens used to join a node to a cluster.
-- Its body lands with the init issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "bootstrap-token",
  desc = "Generates bootstrap tokens used to join a node to a cluster",
  requires = { "local-apiserver" },
  provides = { "bootstrap-token" },
  run = phase.todo("bootstrap-token"),
}
