-- init phase "show-join-command": Show the join command for control-plane and worker node.
-- The join commands with the CA hash (scripts/cluster/joincmd.lua, scripts/cluster/showjoin.lua).

return {
  name = "show-join-command",
  flags = {}, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Show the join command for control-plane and worker node",
  always_run = true,
  run = function(ctx) require("cluster.showjoin").run(ctx) end,
}
