-- upgrade node phase "kubelet-config": Upgrade the kubelet configuration for this node.
-- config.yaml from kubelet-config; NodeLocalCRISocket migration (seed 002) (scripts/upgrade/kubelet_config.lua).
local lazy = require "framework.lazy"
local kubelet_config = lazy.require "upgrade.kubelet_config"
return {
  name = "kubelet-config",
  flags = { "config", "dry-run", "kubeconfig", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Upgrade the kubelet configuration for this node",
  run = function(ctx) kubelet_config.run(ctx) end,
}
