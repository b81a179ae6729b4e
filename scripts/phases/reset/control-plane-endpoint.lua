-- reset phase "control-plane-endpoint" (moonadm's own): removes the virtual IP's files moonadm wrote
-- (keepalived's and haproxy's configuration, the reader token) and the VIP if this node still holds
-- it, once cleanup-node has removed their manifests and the pods stopped. Nothing to do on a node
-- without them.
local lazy = require "framework.lazy"
local vip = lazy.require "endpoint.vip"

return {
  name = "control-plane-endpoint",
  flags = { "dry-run" },
  desc = "Remove the control-plane endpoint's virtual IP files (keepalived + haproxy)",
  run = function(ctx)
    vip.release_address(ctx)
    vip.remove_files(ctx)
  end,
}
