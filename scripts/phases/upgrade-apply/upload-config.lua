-- upgrade apply phase "upload-config": Upload the kubeadm and kubelet configurations to ConfigMaps.
-- kubeadm-config without ClusterStatus, kubelet-config, cri-socket annotation removed (scripts/upgrade/upload_config.lua).
local lazy = require "framework.lazy"
local upload_config = lazy.require "upgrade.upload_config"
return {
  name = "upload-config",
  flags = { "config", "dry-run", "kubeconfig" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Upload the kubeadm and kubelet configurations to ConfigMaps",
  aliases = { "uploadconfig" },
  children = {
    { name = "kubeadm", desc = "Upload the kubeadm ClusterConfiguration to a ConfigMap", run = function(ctx) upload_config.kubeadm(ctx) end },
    { name = "kubelet", desc = "Upload the kubelet configuration to a ConfigMap", run = function(ctx) upload_config.kubelet(ctx) end },
  },
}
