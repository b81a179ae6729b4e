-- upgrade apply phase "kubelet-config": Upgrade the kubelet configuration for this node.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "kubelet-config",
  desc = "Upgrade the kubelet configuration for this node",
  run = phase.todo("kubelet-config"),
}
