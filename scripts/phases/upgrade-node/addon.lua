-- upgrade node phase "addon": Upgrade the default kubeadm addons.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "addon",
  desc = "Upgrade the default kubeadm addons",
  children = {
    { name = "coredns", desc = "Upgrade the CoreDNS addon", run = phase.todo("addon/coredns") },
    { name = "kube-proxy", desc = "Upgrade the kube-proxy addon", run = phase.todo("addon/kube-proxy") },
  },
}
