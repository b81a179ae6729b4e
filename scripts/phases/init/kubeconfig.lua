-- init phase "kubeconfig": Generate all kubeconfig files necessary to establish the control plane and the admin kubeconfig file.
-- Its body lands with the PKI issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "kubeconfig",
  desc = "Generate all kubeconfig files necessary to establish the control plane and the admin kubeconfig file",
  requires = { "pki" },
  provides = { "kubeconfig" },
  children = {
    { name = "admin", desc = "Generate a kubeconfig file for the admin to use and for kubeadm itself", run = phase.todo("kubeconfig/admin") },
    { name = "super-admin", desc = "Generate a kubeconfig file for the super-admin", run = phase.todo("kubeconfig/super-admin") },
    { name = "kubelet", desc = "Generate a kubeconfig file for the kubelet to use *only* for cluster bootstrapping purposes", run = phase.todo("kubeconfig/kubelet") },
    { name = "controller-manager", desc = "Generate a kubeconfig file for the controller manager to use", run = phase.todo("kubeconfig/controller-manager") },
    { name = "scheduler", desc = "Generate a kubeconfig file for the scheduler to use", run = phase.todo("kubeconfig/scheduler") },
  },
}
