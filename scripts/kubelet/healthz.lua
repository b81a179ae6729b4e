-- The kubelet's health as kubeadm's WaitForKubelet reads it: GET http://<healthzBindAddress>:<healthzPort>/healthz
-- of the KubeletConfiguration this run wrote (/var/lib/kubelet/config.yaml; 127.0.0.1:10248 by
-- default), polled until it answers 200; a healthzPort of 0 skips the check, as kubeadm does. The one
-- home of that wait for init's wait-control-plane and join's kubelet-wait-bootstrap; a node runtime's
-- kubelet_healthy(ctx, host, port) says whether one probe passed.
local cnet = require "config.net"
local uv = require "luv"
local core = require "moonadm.core"
local yaml = require "moonadm.yaml"
local log = require "framework.log"
local kconfig = require "kubelet.config"

local M = {}

-- How often every wait polls (this one, cluster/wait.lua, the TLS bootstrap): MOONADM_WAIT_INTERVAL or 0.1 s
M.INTERVAL = tonumber(os.getenv("MOONADM_WAIT_INTERVAL") or "") or 0.1 -- kubeadm: 500 ms

-- host, port of the kubelet's healthz from the config.yaml under ctx's root (defaults when it is
-- missing or has neither field).
function M.endpoint(ctx)
  local host, port = "127.0.0.1", 10248
  local text = ctx:read(kconfig.PATH)
  local docs = text and yaml.decode(text, kconfig.PATH)
  local cfg = docs and docs[1]
  if type(cfg) == "table" then
    if type(cfg.healthzBindAddress) == "string" and cfg.healthzBindAddress ~= "" then host = cfg.healthzBindAddress end
    if math.type(cfg.healthzPort) == "integer" then port = cfg.healthzPort end
  end
  return host, port
end

function M.url(host, port)
  return cnet.url("http", host, port) .. "/healthz"
end

-- One probe: true when GET /healthz answers 200 within timeout_ms (default a second); else false
-- and why.
function M.probe(host, port, timeout_ms)
  local result, why, done = false, nil, false
  local tcp = uv.new_tcp()
  local timer = uv.new_timer()
  local function finish(ok, reason)
    if done then return end
    done, result, why = true, ok, reason
    timer:stop()
    timer:close()
    tcp:close()
  end
  -- libuv's clock is cached per loop iteration: stale since the last uv.run, it would make the timer due at once
  uv.update_time()
  timer:start(timeout_ms or 1000, 0, function() finish(false, "no answer in time") end)
  tcp:connect(host, port, function(err)
    if err then return finish(false, "connect: " .. tostring(err)) end
    local head = ""
    tcp:read_start(function(rerr, chunk)
      if rerr or not chunk then return finish(false, "read: " .. tostring(rerr or "closed before a status line")) end
      head = head .. chunk
      -- kubeadm reads the status code only: decided once the status line is in
      local code = head:match("^HTTP/1%.%d (%d%d%d)[^\n]*\n")
      if code then finish(code == "200", "status " .. code) elseif #head > 4096 then finish(false, "no status line") end
    end)
    tcp:write(("GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"):format(host))
  end)
  uv.run()
  if not done then return false, "the event loop ended before an answer" end
  if result then return true end
  return false, why
end

-- Polls rt.kubelet_healthy until it passes or timeout seconds pass; raises kubeadm's error then.
-- format_duration: how this flow prints durations (init and join print them differently).
function M.wait(ctx, rt, timeout, format_duration)
  local host, port = M.endpoint(ctx)
  local url = M.url(host, port)
  if port == 0 then
    log.info("[kubelet-check] Skipping the kubelet health check because the healthz port is set to 0")
    return
  end
  log.info("[kubelet-check] Waiting for a healthy kubelet at %s. This can take up to %s", url, format_duration(timeout))
  local t0 = core.monotonic()
  while not rt.kubelet_healthy(ctx, host, port) do
    if core.monotonic() - t0 >= timeout then
      log.info("[kubelet-check] The kubelet is not healthy after %s", format_duration(core.monotonic() - t0))
      error(("failed while waiting for the kubelet to start: The HTTP call equal to 'curl -sSL %s' did not " ..
        "answer 200 within %s\n\nUnfortunately, an error has occurred, likely caused by:\n" ..
        "\t- The kubelet is not running\n\t- The kubelet is unhealthy due to a misconfiguration of the node in some way"):format(
        url, format_duration(timeout)), 0)
    end
    core.sleep(M.INTERVAL)
  end
  log.info("[kubelet-check] The kubelet is healthy after %s", format_duration(core.monotonic() - t0))
end

return M
