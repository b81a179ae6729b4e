-- Node runtime `lab`: the node's kubelet is the lab's stand-in (`moonadm lab kubelet`), started by
-- `moonadm lab up` before any flow runs and watching the node's manifests and kubelet files by
-- itself. Starting or restarting it is therefore a nudge, and its health is its healthz endpoint on
-- 127.0.0.1:10248 inside the node's network namespace — exactly where kubeadm's wait looks.
local uv = require "luv"
local log = require "log"

local M = { name = "lab" }

-- GET http://127.0.0.1:PORT/healthz with a short timeout: true when it answers 200 "ok".
function M.kubelet_healthy(_ctx, port)
  port = port or 10248
  local result = false
  local tcp = uv.new_tcp()
  local timer = uv.new_timer()
  timer:start(1000, 0, function() tcp:close(); timer:close() end)
  tcp:connect("127.0.0.1", port, function(err)
    if err then tcp:close(); timer:stop(); timer:close() return end
    local buf = {}
    tcp:read_start(function(rerr, chunk)
      if chunk then buf[#buf + 1] = chunk return end
      result = table.concat(buf):match("^HTTP/1%.%d 200") ~= nil and table.concat(buf):match("\r\n\r\nok$") ~= nil
      tcp:close(); timer:stop(); timer:close()
      if rerr then result = false end
    end)
    tcp:write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
  end)
  uv.run()
  return result
end

function M.start_kubelet(ctx)
  if not M.kubelet_healthy(ctx) then
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
