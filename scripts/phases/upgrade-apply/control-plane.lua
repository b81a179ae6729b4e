-- upgrade apply phase "control-plane": Upgrade the control plane.
-- etcd first (data dir backed up), then each component's manifest replaced with a backup, waited for
-- and rolled back on failure; certificates renewed unless --certificate-renewal=false (scripts/upgrade/control_plane.lua).
local lazy = require "framework.lazy"
local control_plane = lazy.require "upgrade.control_plane"
return {
  name = "control-plane",
  flags = { "certificate-renewal", "config", "dry-run", "etcd-upgrade", "kubeconfig", "patches" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Upgrade the control plane",
  run = function(ctx) control_plane.run(ctx) end,
}
