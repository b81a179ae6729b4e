-- rotate-ca phase "issue": once every control plane trusts both CAs, the new one signs here and
-- reissues this node's leaves.
local lazy = require "framework.lazy"
local stages = lazy.require "rotation.stages"
return {
  name = "issue",
  desc = "Sign with the new CA on this node and reissue its certificates, once every control plane trusts both",
  data = { "rotation_waiting" }, -- set by the first stage that waits for other nodes: the later ones do not run
  run_if = function(ctx) return stages.ready_for(ctx, "trust-both", "signing with the new CA") end,
  run = function(ctx) stages.issue(ctx) end,
}
