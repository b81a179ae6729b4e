-- upgrade node phase "addon": Upgrade the default kubeadm addons.
-- Only on a control plane, once every control plane runs the new kube-apiserver (scripts/upgrade/addon.lua).
return {
  name = "addon",
  flags = { "config", "dry-run", "kubeconfig", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Upgrade the default kubeadm addons",
  children = {
    { name = "coredns", desc = "Upgrade the CoreDNS addon", run = function(ctx) require("upgrade.addon").coredns(ctx) end },
    { name = "kube-proxy", desc = "Upgrade the kube-proxy addon", run = function(ctx) require("upgrade.addon").kube_proxy(ctx) end },
  },
}
