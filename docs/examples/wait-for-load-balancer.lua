-- Site phase "wait-for-load-balancer": before a node writes anything for its join, wait until the
-- control-plane endpoint (the site's load balancer) answers kube-apiserver's /readyz several times
-- in a row — a load balancer that just gained or lost a backend answers some requests and drops
-- others, and a join that starts in that window fails midway.
--
--   moonadm join --config join.yaml --phase-file wait-for-load-balancer.lua \
--     --phase-add wait-for-load-balancer:before=preflight
--
-- Settings come from the environment so one file serves every site:
--   LB_WAIT_TIMEOUT (seconds, default 300), LB_WAIT_SUCCESSES (default 3), LB_WAIT_INTERVAL (default 1).
local core = require "moonadm.core"
local client = require "kube.client"

local M = {
  name = "wait-for-load-balancer",
  desc = "Wait until the control-plane endpoint answers /readyz several times in a row",
  provides = { "load-balancer-ready" },
}

-- The endpoint this join talks to: discovery's answer (the cluster-info server), else the config's.
function M.endpoint(ctx)
  local d = ctx.data and ctx.data.discovery
  if d and d.server then return d.server, d.ca_pem end
  local bt = ctx.cfg.join and ctx.cfg.join.discovery and ctx.cfg.join.discovery.bootstrapToken
  local ep = bt and bt.apiServerEndpoint or (ctx.cfg.cluster and ctx.cfg.cluster.controlPlaneEndpoint)
  if not ep then error("no control-plane endpoint to wait for: no discovery result and no apiServerEndpoint", 0) end
  return "https://" .. ep, nil
end

-- Polls probe() until it succeeds `need` times in a row; raises after `timeout` seconds.
function M.wait(probe, need, timeout, interval, now, sleep)
  local deadline, streak, last = now() + timeout, 0, nil
  while true do
    local ok, err = probe()
    if ok then streak = streak + 1 else streak, last = 0, err end
    if streak >= need then return true end
    if now() >= deadline then
      error(("the load balancer did not answer /readyz %d times in a row within %ds%s"):format(need, timeout,
        last and (": last error: " .. tostring(last)) or ""), 0)
    end
    sleep(interval)
  end
end

function M.run(ctx)
  local server, ca = M.endpoint(ctx)
  local need = tonumber(os.getenv("LB_WAIT_SUCCESSES") or "") or 3
  local timeout = tonumber(os.getenv("LB_WAIT_TIMEOUT") or "") or 300
  local interval = tonumber(os.getenv("LB_WAIT_INTERVAL") or "") or 1
  if ctx.dry_run then ctx.log.info("[dryrun] Would wait for %s/readyz", server) return end
  -- /readyz is readable anonymously (system:public-info-viewer); TLS is verified with the cluster's
  -- CA when discovery gave us one.
  local c = assert(client.new { server = server, ca_pem = ca, insecure = ca == nil, timeout = 5, request_timeout = 5 })
  ctx.log.info("[wait-for-load-balancer] Waiting for %s/readyz to answer %d times in a row", server, need)
  local t0 = core.monotonic()
  M.wait(function()
    local r, err = c:raw("GET", "/readyz", { no_retry = true })
    if not r then return nil, err end
    if r.status ~= 200 then return nil, "HTTP " .. r.status end
    return true
  end, need, timeout, interval, core.monotonic, core.sleep)
  ctx.log.info("[wait-for-load-balancer] The load balancer is ready after %.1fs", core.monotonic() - t0)
end

return M
