-- Node runtime `lab`: the node's kubelet is the lab's stand-in (`moonadm lab kubelet`), started by
-- `moonadm lab up` before any flow runs and watching the node's manifests and kubelet files by
-- itself. Starting or restarting it is therefore a nudge, and its health is its healthz endpoint on
-- 127.0.0.1:10248 inside the node's network namespace — exactly where kubeadm's wait looks.
local uv = require "luv"
local log = require "framework.log"

local M = { name = "lab" }

-- GET http://127.0.0.1:PORT/healthz with a short timeout: true when it answers 200 "ok".
function M.kubelet_healthy(_ctx, port)
  port = port or 10248
  local result, done = false, false
  local tcp = uv.new_tcp()
  local timer = uv.new_timer()
  local function finish(ok)
    if done then return end
    done, result = true, ok
    timer:stop()
    timer:close()
    tcp:close()
  end
  timer:start(1000, 0, function() finish(false) end)
  tcp:connect("127.0.0.1", port, function(err)
    if err then return finish(false) end
    local buf = {}
    tcp:read_start(function(rerr, chunk)
      if chunk and not rerr then buf[#buf + 1] = chunk return end
      local text = table.concat(buf)
      finish(not rerr and text:match("^HTTP/1%.%d 200") ~= nil and text:match("\r\n\r\nok$") ~= nil)
    end)
    tcp:write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
  end)
  uv.run()
  return result
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
