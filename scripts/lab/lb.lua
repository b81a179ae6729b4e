-- The control-plane endpoint of an HA lab: a TCP load balancer (libuv) that sends each
-- connection to a healthy kube-apiserver, round-robin, and checks every backend each second by
-- connecting to it; a backend that refuses is dropped until it answers again.
local uv = require "luv"

local M = {}

local function log(fmt, ...)
  io.stdout:write(os.date("!%Y-%m-%dT%H:%M:%SZ "), fmt:format(...), "\n")
  io.stdout:flush()
end

local function split(hostport)
  local host, port = hostport:match("^(.*):(%d+)$")
  return host, tonumber(port)
end

function M.run(listen, backends)
  local pool = {}
  for _, b in ipairs(backends) do
    local host, port = split(b)
    pool[#pool + 1] = { addr = b, host = host, port = port, healthy = false }
  end
  local next_i = 0

  local function pick()
    for _ = 1, #pool do
      next_i = next_i % #pool + 1
      if pool[next_i].healthy then return pool[next_i] end
    end
  end

  local function check(b)
    local t = uv.new_tcp()
    local done = false
    local timer = uv.new_timer()
    timer:start(900, 0, function()
      if not done then done = true; t:close(); if b.healthy then log("backend %s: down (timeout)", b.addr) end; b.healthy = false end
      timer:close()
    end)
    t:connect(b.host, b.port, function(err)
      if done then return end
      done = true
      local up = err == nil
      if up ~= b.healthy then log("backend %s: %s", b.addr, up and "up" or ("down (" .. tostring(err) .. ")")) end
      b.healthy = up
      t:close()
    end)
  end

  local health = uv.new_timer()
  health:start(0, 1000, function() for _, b in ipairs(pool) do check(b) end end)

  local host, port = split(listen)
  local server = uv.new_tcp()
  assert(server:bind(host, port))
  server:listen(256, function()
    local client = uv.new_tcp()
    server:accept(client)
    local b = pick()
    if not b then client:close() return end
    local upstream = uv.new_tcp()
    local closed = false
    local function close_both()
      if closed then return end
      closed = true
      client:close()
      upstream:close()
    end
    upstream:connect(b.host, b.port, function(err)
      if err then b.healthy = false; close_both() return end
      local function pipe(from, to)
        from:read_start(function(rerr, chunk)
          if rerr or not chunk then close_both() return end
          to:write(chunk)
        end)
      end
      pipe(client, upstream)
      pipe(upstream, client)
    end)
  end)
  log("load balancer on %s for %s", listen, table.concat(backends, ", "))
  for _, sig in ipairs { "sigterm", "sigint" } do
    uv.new_signal():start(sig, function() uv.stop() end)
  end
  uv.run()
end

return M
