-- upgrade apply phase "kubelet-config": Upgrade the kubelet configuration for this node.
-- config.yaml from kubelet-config; NodeLocalCRISocket migration (seed 002) (scripts/upgrade/kubeletconfig.lua).
return {
  name = "kubelet-config",
  desc = "Upgrade the kubelet configuration for this node",
  run = function(ctx) require("upgrade.kubeletconfig").run(ctx) end,
}
