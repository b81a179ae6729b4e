-- rotate-ca phase "start": a new rotation of the CAs --ca names (new CAs, their keys sealed in the
-- cluster, the certificate key printed), or the one under way taken up.
local lazy = require "framework.lazy"
local stages = lazy.require "rotation.stages"
return {
  name = "start",
  desc = "Start a rotation of the CAs --ca names, or take up the one under way",
  data = { "rotation_key", "rotation_waiting" }, -- the certificate key a new rotation made; no rotation: nothing to do
  always_run = true, -- it reads the rotation every run: what the later phases need
  run = function(ctx) stages.start(ctx) end,
}
