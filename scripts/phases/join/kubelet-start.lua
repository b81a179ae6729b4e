-- join phase "kubelet-start": Write kubelet settings, certificates and (re)start the kubelet.
-- Its body lands with the join issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "kubelet-start",
  desc = "Write kubelet settings, certificates and (re)start the kubelet",
  -- In the old join order (ControlPlaneKubeletLocalMode=false) kubelet-start also waits for the
  -- TLS bootstrap itself, as kubeadm did before KEP-4471.
  provides = function(ctx)
    if ctx:gate("ControlPlaneKubeletLocalMode") then return { "kubelet-started" } end
    return { "kubelet-started", "kubelet-bootstrapped" }
  end,
  run = phase.todo("kubelet-start"),
}
