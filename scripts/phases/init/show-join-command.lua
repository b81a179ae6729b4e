-- init phase "show-join-command": Show the join command for control-plane and worker node.
-- The join commands with the CA hash (scripts/cluster/join_command.lua, scripts/cluster/show_join.lua).
local lazy = require "framework.lazy"
local show_join = lazy.require "cluster.show_join"

return {
  name = "show-join-command",
  flags = {}, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Show the join command for control-plane and worker node",
  always_run = true,
  run = function(ctx) show_join.run(ctx) end,
}
