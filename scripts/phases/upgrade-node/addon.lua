-- upgrade node phase "addon": Upgrade the default kubeadm addons.
-- Only on a control plane, once every control plane runs the new kube-apiserver (scripts/upgrade/addon.lua).
local lazy = require "framework.lazy"
local upgrade_addon = lazy.require "upgrade.addon"
return {
  name = "addon",
  flags = { "config", "dry-run", "kubeconfig", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Upgrade the default kubeadm addons",
  children = {
    { name = "coredns", desc = "Upgrade the CoreDNS addon", run = function(ctx) upgrade_addon.coredns(ctx) end },
    { name = "kube-proxy", desc = "Upgrade the kube-proxy addon", run = function(ctx) upgrade_addon.kube_proxy(ctx) end },
  },
}
