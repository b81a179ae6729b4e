-- init phase "upload-config": Upload the kubeadm and kubelet configuration to a ConfigMap.
-- kubeadm-config, kubelet-config and their RBAC (scripts/cluster/upload_config.lua).
local lazy = require "framework.lazy"
local upload_config = lazy.require "cluster.upload_config"

return {
  name = "upload-config",
  flags = { "config", "cri-socket", "dry-run", "kubeconfig" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Upload the kubeadm and kubelet configuration to a ConfigMap",
  requires = { "local-apiserver" },
  provides = { "cluster-config" },
  children = {
    { name = "kubeadm", desc = "Upload the kubeadm ClusterConfiguration to a ConfigMap", run = function(ctx) upload_config.upload_kubeadm(ctx) end },
    { name = "kubelet", desc = "Upload the kubelet component config to a ConfigMap", run = function(ctx) upload_config.upload_kubelet(ctx) end },
  },
}
