-- join phase "kubelet-wait-bootstrap": Wait for the kubelet to bootstrap itself.
-- Its body lands with the join issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "kubelet-wait-bootstrap",
  desc = "Wait for the kubelet to bootstrap itself",
  requires = { "kubelet-started" },
  provides = { "kubelet-bootstrapped" },
  run = phase.todo("kubelet-wait-bootstrap"),
}
