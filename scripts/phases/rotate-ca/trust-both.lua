-- rotate-ca phase "trust-both": this node's CA files trust the old and the new CA (the old one signs).
local lazy = require "framework.lazy"
local stages = lazy.require "rotation.stages"
return {
  name = "trust-both",
  desc = "Trust the old and the new CA on this node",
  run_if = function(ctx) return stages.ready_for(ctx, "none", "trusting both CAs") end, -- a rotation is under way
  run = function(ctx) stages.trust_both(ctx) end,
}
