-- rotate-ca phase "trust-new": once every control plane signs with the new CA, this node trusts it alone.
local lazy = require "framework.lazy"
local stages = lazy.require "rotation.stages"
return {
  name = "trust-new",
  desc = "Trust only the new CA on this node, once every control plane signs with it",
  data = { "rotation_waiting" }, -- set by the first stage that waits for other nodes: the later ones do not run
  run_if = function(ctx) return stages.ready_for(ctx, "issued", "dropping the old CA") end,
  run = function(ctx) stages.trust_new(ctx) end,
}
