-- init phase "kubelet-finalize": Updates settings relevant to the kubelet after TLS bootstrap.
-- Its body lands with the init issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "kubelet-finalize",
  desc = "Updates settings relevant to the kubelet after TLS bootstrap",
  requires = { "kubelet-started" },
  children = {
    { name = "enable-client-cert-rotation", desc = "Enable kubelet client certificate rotation", run = phase.todo("kubelet-finalize/enable-client-cert-rotation") },
  },
}
