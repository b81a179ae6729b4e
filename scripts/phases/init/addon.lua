-- init phase "addon": Install required addons for passing conformance tests.
-- CoreDNS and kube-proxy as kubeadm creates them (scripts/cluster/addons.lua).
local lazy = require "framework.lazy"
local cluster_addons = lazy.require "cluster.addons"

return {
  name = "addon",
  flags = { "apiserver-advertise-address", "apiserver-bind-port", "config", "control-plane-endpoint", "dry-run", "feature-gates", "image-repository", "kubeconfig", "kubernetes-version", "pod-network-cidr", "print-manifest", "service-cidr", "service-dns-domain" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Install required addons for passing conformance tests",
  requires = { "local-apiserver" },
  children = {
    { name = "coredns", desc = "Install the CoreDNS addon to a Kubernetes cluster", run = function(ctx) cluster_addons.coredns(ctx) end },
    { name = "kube-proxy", desc = "Install the kube-proxy addon to a Kubernetes cluster", run = function(ctx) cluster_addons.kube_proxy(ctx) end },
  },
}
