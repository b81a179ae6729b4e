-- init phase "kubelet-start": Write kubelet settings and (re)start the kubelet.
-- Its body lands with the node files issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "kubelet-start",
  desc = "Write kubelet settings and (re)start the kubelet",
  requires = { "kubeconfig" },
  provides = { "kubelet-started" },
  run = phase.todo("kubelet-start"),
}
