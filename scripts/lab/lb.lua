-- The control-plane endpoint of an HA lab: a TCP load balancer (libuv) that sends each
-- connection to a healthy kube-apiserver, round-robin, and checks every backend's /readyz each
-- second (curl); a backend that fails the check, or refuses a connection, is dropped until its
-- /readyz answers 200 again.
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

-- The backends as the balancer tracks them: none healthy until its first check says so.
local function new_pool(backends)
  local pool = {}
  for _, b in ipairs(backends) do
    local host, port = split(b)
    pool[#pool + 1] = { addr = b, host = host, port = port, healthy = false }
  end
  return pool
end

-- → a function that returns the next healthy backend of pool, round-robin, or nil.
local function picker(pool)
  local next_i = 0
  return function()
    for _ = 1, #pool do
      next_i = next_i % #pool + 1
      if pool[next_i].healthy then return pool[next_i] end
    end
  end
end

-- HTTP-checked, as kubeadm's HA guide has haproxy do (option httpchk): /readyz over TLS, anonymous
-- (system:public-info-viewer). A TCP check would send clients to an apiserver that listens but is
-- not ready yet (its post-start hooks) or is shutting down (readyz fails at once on SIGTERM).
local function check(b)
  if b.checking then return end
  b.checking = true
  local host = b.host:find(":", 1, true) and ("[" .. b.host .. "]") or b.host
  local handle
  handle = uv.spawn("curl", { args = { "-skf", "--max-time", "0.9", "-o", "/dev/null",
    ("https://%s:%d/readyz"):format(host, b.port) } },
    function(code)
      b.checking = false
      if handle then handle:close() end
      local up = code == 0
      if up ~= b.healthy then log("backend %s: %s", b.addr, up and "up" or ("down (readyz check: curl exit " .. code .. ")")) end
      b.healthy = up
    end)
  if not handle then b.checking = false; b.healthy = false end
end

-- One accepted client, piped both ways to a backend pick() gives, trying at most tries of them.
local function serve(client, pick, tries)
  local upstream, closed
  local function close_both()
    if closed then return end
    closed = true
    client:close()
    if upstream then upstream:close() end
  end
  -- a backend that refuses (gone since its last check) is dropped and the next healthy one tried
  local function connect(left)
    local b = left > 0 and pick()
    if not b then close_both() return end
    upstream = uv.new_tcp()
    upstream:connect(b.host, b.port, function(err)
      if closed then return end
      if err then
        if b.healthy then log("backend %s: down (connect: %s)", b.addr, tostring(err)) end
        b.healthy = false
        upstream:close()
        upstream = nil
        return connect(left - 1)
      end
      local function pipe(from, to)
        from:read_start(function(rerr, chunk)
          if rerr or not chunk then close_both() return end
          to:write(chunk)
        end)
      end
      pipe(client, upstream)
      pipe(upstream, client)
    end)
  end
  connect(tries)
end

function M.run(listen, backends)
  local pool = new_pool(backends)
  local pick = picker(pool)
  local health = uv.new_timer()
  health:start(0, 1000, function() for _, b in ipairs(pool) do check(b) end end)

  local host, port = split(listen)
  local server = uv.new_tcp()
  assert(server:bind(host, port))
  server:listen(256, function()
    local client = uv.new_tcp()
    server:accept(client)
    serve(client, pick, #pool)
  end)
  log("load balancer on %s for %s", listen, table.concat(backends, ", "))
  for _, sig in ipairs { "sigterm", "sigint" } do
    uv.new_signal():start(sig, function() uv.stop() end)
  end
  uv.run()
end

return M
