-- upgrade node phase "preflight": Run upgrade node pre-flight checks.
return {
  name = "preflight",
  desc = "Run upgrade node pre-flight checks",
  always_run = true,
  run = function(ctx) require("upgrade.preflight").node(ctx) end,
}
