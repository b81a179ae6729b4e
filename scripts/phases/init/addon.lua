-- init phase "addon": Install required addons for passing conformance tests.
-- CoreDNS and kube-proxy as kubeadm creates them (scripts/cluster/addons.lua).

return {
  name = "addon",
  desc = "Install required addons for passing conformance tests",
  requires = { "local-apiserver" },
  children = {
    { name = "coredns", desc = "Install the CoreDNS addon to a Kubernetes cluster", run = function(ctx) require("cluster.addons").coredns(ctx) end },
    { name = "kube-proxy", desc = "Install the kube-proxy addon to a Kubernetes cluster", run = function(ctx) require("cluster.addons").kube_proxy(ctx) end },
  },
}
