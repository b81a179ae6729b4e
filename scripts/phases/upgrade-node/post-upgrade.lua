-- upgrade node phase "post-upgrade": Run post upgrade tasks.
local lazy = require "framework.lazy"
local upgrade_post = lazy.require "upgrade.post"
return {
  name = "post-upgrade",
  flags = { "config", "dry-run", "kubeconfig" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run post upgrade tasks",
  run = function(ctx) upgrade_post.node(ctx) end,
}
