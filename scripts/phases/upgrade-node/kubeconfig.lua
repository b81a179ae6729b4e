-- upgrade node phase "kubeconfig": Upgrade kubeconfig files for this node.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "kubeconfig",
  desc = "Upgrade kubeconfig files for this node",
  hidden = true,
  run = phase.todo("kubeconfig"),
}
