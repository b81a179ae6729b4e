-- Node runtime "none": touches no kubelet (tests, files prepared ahead of a kubelet). Starting and
-- stopping only say so; the kubelet is never reported healthy.
local log = require "framework.log"

return {
  name = "none",
  start_kubelet = function() log.info("[kubelet-start] Node runtime \"none\": not starting the kubelet") end,
  stop_kubelet = function() log.v(1, "[kubelet] Node runtime \"none\": not stopping the kubelet") end,
  restart_kubelet = function() log.info("[kubelet] Node runtime \"none\": not restarting the kubelet") end,
  kubelet_healthy = function() return false end,
}
