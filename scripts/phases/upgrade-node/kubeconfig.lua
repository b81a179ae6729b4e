-- upgrade node phase "kubeconfig": Upgrade kubeconfig files for this node.
-- kubelet.conf from the control-plane endpoint to the local API server on control planes (seed 000).
local lazy = require "framework.lazy"
local kubelet_conf = lazy.require "upgrade.kubelet_conf"
return {
  name = "kubeconfig",
  desc = "Upgrade kubeconfig files for this node",
  hidden = true,
  run = function(ctx) kubelet_conf.run(ctx) end,
}
