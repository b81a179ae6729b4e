-- Node runtime `lab`: the node's kubelet is the lab's stand-in (`moonadm lab kubelet`), started by
-- `moonadm lab up` before any flow runs and watching the node's manifests and kubelet files by
-- itself. Starting or restarting it is therefore a nudge, and its health is its healthz endpoint on
-- 127.0.0.1:10248 inside the node's network namespace — exactly where kubeadm's wait looks.
local healthz = require "kubelet.healthz"
local log = require "framework.log"

local M = { name = "lab" }

-- One probe of the stand-in's healthz (kubelet/healthz.lua).
function M.kubelet_healthy(_ctx, host, port)
  return healthz.probe(host or "127.0.0.1", port or 10248)
end

function M.start_kubelet(ctx)
  -- The stand-in is single-threaded: while it waits on the API it answers healthz a little late.
  local healthy = false
  for _ = 1, 10 do
    healthy = M.kubelet_healthy(ctx)
    if healthy then break end
  end
  if not healthy then
    log.warn("[kubelet-start] the lab's kubelet stand-in does not answer on 127.0.0.1:10248: is this node in a lab (`moonadm lab exec NODE -- ...`)?")
  end
  return true
end

M.restart_kubelet = M.start_kubelet

function M.stop_kubelet()
  -- The stand-in keeps running between flows, as a real kubelet service would after `systemctl stop`
  -- only through `moonadm lab down`.
  return true
end

return M
