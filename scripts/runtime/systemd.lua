-- Node runtime "systemd": a real kubelet under systemd, as kubeadm drives it (stop = `systemctl stop
-- kubelet`; start = `systemctl daemon-reload` + `systemctl restart kubelet`). Under a --root other
-- than "/" the host's systemd is not this node's: moonadm warns and touches nothing. Without
-- systemctl it warns that the kubelet must be started another way, as kubeadm does.
local healthz = require "kubelet.healthz"
local which = require "node.which"
local log = require "framework.log"

local M = { name = "systemd" }

local function sh(cmd)
  local ok, _, code = os.execute(cmd .. " >/dev/null 2>&1")
  return ok == true, code
end

local function systemctl_present()
  return which.find("systemctl") ~= nil
end

local function usable(ctx, what)
  if ctx.root and ctx.root ~= "/" then
    log.warn("the node root is %s, not /: not asking the host's systemd to %s the kubelet", ctx.root, what)
    return false
  end
  if ctx.dry_run then
    log.info("[dryrun] Would %s the kubelet service", what)
    return false
  end
  if not systemctl_present() then
    log.warn("systemctl not found: please %s the kubelet service yourself", what)
    return false
  end
  return true
end

function M.stop_kubelet(ctx)
  if not usable(ctx, "stop") then return end
  sh("systemctl stop kubelet")
end

function M.start_kubelet(ctx)
  if not usable(ctx, "start") then return end
  sh("systemctl daemon-reload")
  local ok = sh("systemctl restart kubelet")
  if not ok then
    log.warn("[kubelet-start] WARNING: unable to start the kubelet service: [%s]\n" ..
      "[kubelet-start] Please ensure kubelet is reloaded and running manually.", "systemctl restart kubelet failed")
  end
end

M.restart_kubelet = M.start_kubelet

-- One probe of the kubelet's own healthz, as kubeadm's wait does (a unit systemd calls active
-- may not serve yet).
function M.kubelet_healthy(ctx, host, port)
  if ctx.root and ctx.root ~= "/" then return false end
  return healthz.probe(host or "127.0.0.1", port or 10248)
end

return M
