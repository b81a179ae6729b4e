-- init phase "upload-config": Upload the kubeadm and kubelet configuration to a ConfigMap.
-- Its body lands with the init issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "upload-config",
  desc = "Upload the kubeadm and kubelet configuration to a ConfigMap",
  requires = { "local-apiserver" },
  provides = { "cluster-config" },
  children = {
    { name = "kubeadm", desc = "Upload the kubeadm ClusterConfiguration to a ConfigMap", run = phase.todo("upload-config/kubeadm") },
    { name = "kubelet", desc = "Upload the kubelet component config to a ConfigMap", run = phase.todo("upload-config/kubelet") },
  },
}
