-- init phase "control-plane": Generate all static Pod manifest files necessary to establish the control plane.
-- Each subphase builds its component's Pod from the configuration (scripts/manifests/), applies the
-- user's patches and writes /etc/kubernetes/manifests/<component>.yaml (0600) atomically.
local lazy = require "framework.lazy"
local manifests = lazy.require "manifests"

local function create(component)
  return function(ctx) manifests.create_logged(ctx, component) end
end

return {
  name = "control-plane",
  flags = { "apiserver-advertise-address", "apiserver-bind-port", "cert-dir", "config", "control-plane-endpoint", "dry-run", "feature-gates", "image-repository", "kubernetes-version", "patches", "pod-network-cidr", "service-cidr" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Generate all static Pod manifest files necessary to establish the control plane",
  requires = { "pki", "kubeconfig" },
  provides = { "control-plane-manifests" },
  children = {
    { name = "apiserver", desc = "Generates the kube-apiserver static Pod manifest", run = create("kube-apiserver") },
    { name = "controller-manager", desc = "Generates the kube-controller-manager static Pod manifest", run = create("kube-controller-manager") },
    { name = "scheduler", desc = "Generates the kube-scheduler static Pod manifest", run = create("kube-scheduler") },
  },
}
