-- upgrade node phase "post-upgrade": Run post upgrade tasks.
return {
  name = "post-upgrade",
  desc = "Run post upgrade tasks",
  run = function(ctx) require("upgrade.post").node(ctx) end,
}
