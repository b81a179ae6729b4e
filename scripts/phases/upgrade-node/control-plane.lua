-- upgrade node phase "control-plane": Upgrade the control plane instance deployed on this node, if any.
-- As upgrade apply's (scripts/upgrade/control_plane.lua), to the version stored in kubeadm-config.
local lazy = require "framework.lazy"
local control_plane = lazy.require "upgrade.control_plane"
return {
  name = "control-plane",
  flags = { "certificate-renewal", "config", "dry-run", "etcd-upgrade", "kubeconfig", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Upgrade the control plane instance deployed on this node, if any",
  run = function(ctx) control_plane.run(ctx, { node = true }) end,
}
