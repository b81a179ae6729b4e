-- join phase "control-plane-prepare": Prepare the machine for serving a control plane.
-- Its body lands with the join issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "control-plane-prepare",
  desc = "Prepare the machine for serving a control plane",
  provides = { "pki", "kubeconfig", "control-plane-manifests" },
  children = {
    { name = "download-certs", desc = "Download certificates shared among control-plane nodes from the kubeadm-certs Secret", run = phase.todo("control-plane-prepare/download-certs") },
    { name = "certs", desc = "Generate the certificates for the new control plane components", run = phase.todo("control-plane-prepare/certs") },
    { name = "kubeconfig", desc = "Generate the kubeconfig for the new control plane components", run = phase.todo("control-plane-prepare/kubeconfig") },
    { name = "control-plane", desc = "Generate the manifests for the new control plane components", run = phase.todo("control-plane-prepare/control-plane") },
  },
}
