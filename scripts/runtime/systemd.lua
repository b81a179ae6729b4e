-- Node runtime "systemd": a real kubelet under systemd, as kubeadm drives it (stop = `systemctl stop
-- kubelet`; start = `systemctl daemon-reload` + `systemctl restart kubelet`). Under a --root other
-- than "/" the host's systemd is not this node's: moonadm warns and touches nothing. Without
-- systemctl it warns that the kubelet must be started another way, as kubeadm does.
local log = require "framework.log"

local M = { name = "systemd" }

local function sh(cmd)
  local ok, _, code = os.execute(cmd .. " >/dev/null 2>&1")
  return ok == true, code
end

local function systemctl_present()
  return sh("command -v systemctl")
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
  log.info("[kubelet-start] Starting the kubelet")
  sh("systemctl daemon-reload")
  local ok = sh("systemctl restart kubelet")
  if not ok then
    log.warn("[kubelet-start] WARNING: unable to start the kubelet service: [%s]\n" ..
      "[kubelet-start] Please ensure kubelet is reloaded and running manually.", "systemctl restart kubelet failed")
  end
end

M.restart_kubelet = M.start_kubelet

function M.kubelet_healthy(ctx)
  if ctx.root and ctx.root ~= "/" then return false end
  return (sh("systemctl is-active --quiet kubelet"))
end

return M
