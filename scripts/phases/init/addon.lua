-- init phase "addon": Install required addons for passing conformance tests.
-- Its body lands with the init issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "addon",
  desc = "Install required addons for passing conformance tests",
  requires = { "local-apiserver" },
  children = {
    { name = "coredns", desc = "Install the CoreDNS addon to a Kubernetes cluster", run = phase.todo("addon/coredns") },
    { name = "kube-proxy", desc = "Install the kube-proxy addon to a Kubernetes cluster", run = phase.todo("addon/kube-proxy") },
  },
}
