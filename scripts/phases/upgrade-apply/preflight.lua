-- upgrade apply phase "preflight": Run preflight checks before upgrade.
-- Cluster health, the version policy, --print-config, the confirmation prompt (scripts/upgrade/preflight.lua).
local lazy = require "framework.lazy"
local upgrade_preflight = lazy.require "upgrade.preflight"
return {
  name = "preflight",
  flags = { "allow-experimental-upgrades", "allow-release-candidate-upgrades", "config", "dry-run", "force", "ignore-preflight-errors", "kubeconfig", "yes" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run preflight checks before upgrade",
  always_run = true,
  run = function(ctx) upgrade_preflight.apply(ctx) end,
}
