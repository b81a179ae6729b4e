-- upgrade apply phase "preflight": Run preflight checks before upgrade.
-- Cluster health, the version policy, --print-config, the confirmation prompt (scripts/upgrade/preflight.lua).
return {
  name = "preflight",
  desc = "Run preflight checks before upgrade",
  always_run = true,
  run = function(ctx) require("upgrade.preflight").apply(ctx) end,
}
