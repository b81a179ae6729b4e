-- upgrade apply phase "upload-config": Upload the kubeadm and kubelet configurations to ConfigMaps.
-- Its body lands with the upgrade issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "upload-config",
  desc = "Upload the kubeadm and kubelet configurations to ConfigMaps",
  aliases = { "uploadconfig" },
  children = {
    { name = "kubeadm", desc = "Upload the kubeadm ClusterConfiguration to a ConfigMap", run = phase.todo("upload-config/kubeadm") },
    { name = "kubelet", desc = "Upload the kubelet configuration to a ConfigMap", run = phase.todo("upload-config/kubelet") },
  },
}
