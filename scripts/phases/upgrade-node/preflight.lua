-- upgrade node phase "preflight": Run upgrade node pre-flight checks.
return {
  name = "preflight",
  flags = { "config", "ignore-preflight-errors" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run upgrade node pre-flight checks",
  always_run = true,
  run = function(ctx) require("upgrade.preflight").node(ctx) end,
}
