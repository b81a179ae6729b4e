-- `moonadm certs rotate-ca`: a CA rotation's steps on this control plane (scripts/rotation/stages.lua).
-- Run on every control plane in turn, again and again: each run takes this node as far as the others
-- allow, and says which node to run it on next.
local flow = require "framework.flow"

return flow.from_list("rotate-ca", {
  "preflight",
  "start",
  "trust-both",
  "issue",
  "trust-new",
  "finish",
})
