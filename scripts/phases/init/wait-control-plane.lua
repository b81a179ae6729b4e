-- init phase "wait-control-plane": Wait for the control plane to start.
-- Its body lands with the init issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "wait-control-plane",
  desc = "Wait for the control plane to start",
  requires = { "kubelet-started", "control-plane-manifests" },
  provides = { "local-apiserver" },
  run = phase.todo("wait-control-plane"),
}
