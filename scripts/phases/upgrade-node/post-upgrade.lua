-- upgrade node phase "post-upgrade": Run post upgrade tasks.
return {
  name = "post-upgrade",
  flags = { "config", "dry-run", "kubeconfig" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run post upgrade tasks",
  run = function(ctx) require("upgrade.post").node(ctx) end,
}
