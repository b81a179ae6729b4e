-- rotate-ca phase "finish": once every control plane trusts only the new CA, the old one leaves what
-- the API servers publish and the rotation ends.
local lazy = require "framework.lazy"
local stages = lazy.require "rotation.stages"
return {
  name = "finish",
  desc = "End the rotation once every control plane trusts only the new CA",
  data = { "rotation_waiting" }, -- set by the first stage that waits for other nodes: the later ones do not run
  run_if = function(ctx) return stages.ready_for(ctx, "trust-new", "ending the rotation") end,
  run = function(ctx) stages.finish(ctx) end,
}
