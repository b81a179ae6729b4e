-- A fault-injecting HTTP proxy for tests/e2e/faults_spec.lua (luv), in front of `kubectl proxy`
-- (which carries the admin credentials to the real kube-apiserver over TLS):
--   moonadm lua fault_proxy.lua PORTFILE UPSTREAM_PORT CONTROLFILE
-- CONTROLFILE (re-read for every connection) returns {mode=, n=, id=} (a new id restarts the count):
--   mode "pass"            forward every request
--   mode "storm", n=N      the next N requests get 429 (Retry-After: 1) and 500 in turn, then pass
--   mode "storm", n=-1     every request gets 429/500, forever
--   mode "reset", n=N      the next N connections are closed without an answer, then pass
-- Every request line and what it got is appended to PORTFILE .. ".log".
local uv = require "luv"
local portfile, upstream, control = arg[1], tonumber(arg[2]), arg[3]
local served, gen, logf = 0, nil, assert(io.open(portfile .. ".log", "a"))
logf:setvbuf("line")

-- The control file's settings; a new `id` starts its count afresh.
local function ctl()
  local ok, c = pcall(dofile, control)
  c = ok and type(c) == "table" and c or { mode = "pass", n = 0 }
  if c.id ~= gen then gen, served = c.id, 0 end
  return c
end

local server = uv.new_tcp()
assert(server:bind("127.0.0.1", 0))
server:listen(128, function()
  local c = uv.new_tcp()
  server:accept(c)
  local cfg = ctl()
  if cfg.mode == "reset" and (cfg.n < 0 or served < cfg.n) then
    served = served + 1
    logf:write("reset connection\n")
    c:close()
    return
  end
  local buf, up, piping = "", nil, false
  c:read_start(function(err, chunk)
    if err or not chunk then
      if up and not up:is_closing() then up:close() end
      if not c:is_closing() then c:close() end
      return
    end
    if piping then up:write(chunk) return end
    buf = buf .. chunk
    local head_end = buf:find("\r\n\r\n", 1, true)
    if not head_end then return end
    local line = buf:match("^[^\r]*")
    cfg = ctl()
    if cfg.mode == "storm" and (cfg.n < 0 or served < cfg.n) then
      served = served + 1
      local st = served % 2 == 1 and 429 or 500
      local body = ('{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected %d","code":%d}'):format(st, st)
      logf:write(line .. " -> " .. st .. "\n")
      c:write(("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nRetry-After: 1\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s")
        :format(st, st == 429 and "Too Many Requests" or "Internal Server Error", #body, body), function() c:close() end)
      return
    end
    -- pass: pipe this connection to the upstream from here on (one decision per connection)
    logf:write(line .. " -> pass\n")
    piping = true
    up = uv.new_tcp()
    local pending = buf
    up:connect("127.0.0.1", upstream, function(cerr)
      if cerr then c:close() up:close() return end
      up:write(pending)
      up:read_start(function(e2, data)
        if e2 or not data then
          if not c:is_closing() then c:shutdown(function() c:close() end) end
          if not up:is_closing() then up:close() end
          return
        end
        c:write(data)
      end)
    end)
  end)
end)
local f = assert(io.open(portfile .. ".tmp", "w"))
f:write(server:getsockname().port)
f:close()
os.rename(portfile .. ".tmp", portfile)
uv.run()
