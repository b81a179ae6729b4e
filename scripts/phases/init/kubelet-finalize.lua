-- init phase "kubelet-finalize": Updates settings relevant to the kubelet after TLS bootstrap.
-- kubelet.conf switched to the rotating client certificate (scripts/cluster/kubelet_finalize.lua).
local lazy = require "framework.lazy"
local kubelet_finalize = lazy.require "cluster.kubelet_finalize"

return {
  name = "kubelet-finalize",
  flags = { "cert-dir", "config", "dry-run" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Updates settings relevant to the kubelet after TLS bootstrap",
  requires = { "kubelet-started" },
  children = {
    { name = "enable-client-cert-rotation", desc = "Enable kubelet client certificate rotation", run = function(ctx) kubelet_finalize.run(ctx) end },
  },
}
