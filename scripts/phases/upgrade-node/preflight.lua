-- upgrade node phase "preflight": Run upgrade node pre-flight checks.
local lazy = require "framework.lazy"
local upgrade_preflight = lazy.require "upgrade.preflight"
return {
  name = "preflight",
  flags = { "config", "ignore-preflight-errors" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run upgrade node pre-flight checks",
  always_run = true,
  run = function(ctx) upgrade_preflight.node(ctx) end,
}
