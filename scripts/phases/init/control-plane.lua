-- init phase "control-plane": Generate all static Pod manifest files necessary to establish the control plane.
-- Its body lands with the node files issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "control-plane",
  desc = "Generate all static Pod manifest files necessary to establish the control plane",
  requires = { "pki", "kubeconfig" },
  provides = { "control-plane-manifests" },
  children = {
    { name = "apiserver", desc = "Generates the kube-apiserver static Pod manifest", run = phase.todo("control-plane/apiserver") },
    { name = "controller-manager", desc = "Generates the kube-controller-manager static Pod manifest", run = phase.todo("control-plane/controller-manager") },
    { name = "scheduler", desc = "Generates the kube-scheduler static Pod manifest", run = phase.todo("control-plane/scheduler") },
  },
}
