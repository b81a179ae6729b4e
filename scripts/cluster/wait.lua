-- wait-control-plane as kubeadm v1.35: the kubelet's healthz first, then every control-plane
-- component's health endpoint read from its static Pod manifest (the removed
-- WaitForAllControlPlaneComponents gate's behaviour, always on):
--   kube-apiserver           https://<advertise-address>:<secure-port>/livez
--   kube-controller-manager  https://<bind-address|127.0.0.1>:<secure-port|10257>/healthz
--   kube-scheduler           https://<bind-address|127.0.0.1>:<secure-port|10259>/livez
-- polled together every M.INTERVAL seconds (kubeadm: 500 ms) with TLS verification off — these
-- endpoints serve self-signed certificates, carry no credentials and decide no trust (SECURITY.md).
-- At -v 1 each success says how soon it was noticed: the gap since the last failing probe bounds
-- the time between the component becoming healthy and this wait seeing it.
local api = require "moonadm.api"
local core = require "moonadm.core"
local yaml = require "moonadm.yaml"
local log = require "framework.log"
local capi = require "cluster.api"
local runtime_mod = require "runtime"
local healthz = require "kubelet.healthz"
local net = require "moonadm.net"
local cri_socket = require "cri.socket"
local args = require "kube.args"
local cnet = require "config.net"

local M = {}

M.INTERVAL = healthz.INTERVAL -- one poll interval for every wait: kubelet/healthz.lua reads MOONADM_WAIT_INTERVAL
M.MANIFESTS = "/etc/kubernetes/manifests"
M.PROBE_TIMEOUT = 0.25

-- The endpoints to check, from the manifests text (name -> text). Raises when one is unreadable.
function M.components(read_manifest)
  local defs = {
    { name = "kube-apiserver", file = "kube-apiserver.yaml", path = "/livez" },
    { name = "kube-controller-manager", file = "kube-controller-manager.yaml", path = "/healthz", port = "10257" },
    { name = "kube-scheduler", file = "kube-scheduler.yaml", path = "/livez", port = "10259" },
  }
  local out = {}
  for _, d in ipairs(defs) do
    local text, err = read_manifest(d.file)
    if not text then error(("could not read the static Pod manifest of %s: %s"):format(d.name, err), 0) end
    local docs, derr = yaml.decode(text, d.file)
    if not docs then error(derr, 0) end
    local pod = docs[1] or {}
    local c = pod.spec and pod.spec.containers and pod.spec.containers[1]
    if not c then error(("%s: no container in the static Pod manifest"):format(d.file), 0) end
    local cmd = {}
    for _, a in ipairs(c.command or {}) do cmd[#cmd + 1] = tostring(a) end
    for _, a in ipairs(c.args or {}) do cmd[#cmd + 1] = tostring(a) end
    local host, port
    if d.name == "kube-apiserver" then
      host = args.value(cmd, "advertise-address")
      port = args.value(cmd, "secure-port") or "6443"
      if not host then error("kube-apiserver.yaml: no --advertise-address to check", 0) end
    else
      host = args.value(cmd, "bind-address") or "127.0.0.1"
      port = args.value(cmd, "secure-port") or d.port
    end
    out[#out + 1] = { name = d.name, url = cnet.url("https", host, port) .. d.path,
      server = cnet.url("https", host, port), path = d.path }
  end
  return out
end

-- What the user reads after a failed wait: the component most likely at fault first (a kube-apiserver
-- that fails while the node's local etcd does not even listen fails because of it: kubeadm names only
-- the apiserver), then kubeadm's crictl lines for the node's runtime endpoint (opts.cri).
function M.troubleshoot(comps, opts)
  local lines = {}
  local apiserver_bad
  for _, c in ipairs(comps) do if c.name == "kube-apiserver" and not c.ok then apiserver_bad = true end end
  if apiserver_bad and opts.etcd_client then
    local free = net.port_free(opts.etcd_client.host, opts.etcd_client.port)
    if free then
      lines[#lines + 1] = ("etcd, which the kube-apiserver needs, does not listen on %s: look at etcd first (its " ..
        "container's log: crictl ps -a --name etcd; crictl logs CONTAINERID).\n"):format(cnet.join_host_port(opts.etcd_client.host,
        opts.etcd_client.port))
    end
  end
  local rt = opts.cri and (" --runtime-endpoint " .. opts.cri) or ""
  lines[#lines + 1] = "A control plane component may have crashed or exited when started by the container runtime.\n" ..
    "To troubleshoot, list all containers using your preferred container runtimes CLI.\n" ..
    "Here is one example how you may list all running Kubernetes containers by using crictl:\n" ..
    ("\t- 'crictl%s ps -a | grep kube | grep -v pause'\n"):format(rt) ..
    "\tOnce you have found the failing container, you can inspect its logs with:\n" ..
    ("\t- 'crictl%s logs CONTAINERID'"):format(rt)
  return table.concat(lines)
end

-- Polls every component until each answers 200 or timeout seconds pass. Returns a table
-- name -> {after = seconds, noticed_within = seconds, probes = n}.
function M.components_healthy(comps, timeout, opts)
  opts = opts or {}
  log.info("[control-plane-check] Waiting for healthy control plane components. This can take up to %s",
    capi.go_duration(timeout))
  for _, c in ipairs(comps) do
    log.info("[control-plane-check] Checking %s at %s", c.name, c.url)
    c.handle = assert(api.new { server = c.server, insecure = true, connect_timeout = 0.5, timeout = 4,
      user_agent = "moonadm/control-plane-check" })
    c.probes = 0
    -- probes are sequential: a short per-probe timeout keeps one hanging component from delaying
    -- the others' checks; it doubles after each timeout so a slow but healthy endpoint gets through
    c.timeout = M.PROBE_TIMEOUT
  end
  local t0 = core.now()
  local deadline = t0 + timeout
  local pending, result = #comps, {}
  while pending > 0 do
    for _, c in ipairs(comps) do
      if not c.ok then
        local resp, err, kind = c.handle:request { method = "GET", path = c.path, timeout = c.timeout }
        local now = core.now()
        c.probes = c.probes + 1
        if resp and resp.status == 200 then
          c.ok, pending = true, pending - 1
          local r = { after = now - t0, noticed_within = c.last_fail and (now - c.last_fail) or 0, probes = c.probes }
          result[c.name] = r
          log.info("[control-plane-check] %s is healthy after %s", c.name, capi.go_duration(r.after))
          log.v(1, "[control-plane-check] %s: healthy at most %s before this wait noticed it (%d probes, every %s)",
            c.name, capi.go_duration(r.noticed_within), c.probes, capi.go_duration(M.INTERVAL))
        else
          c.last_fail = now
          c.last_err = resp and ("HTTP " .. resp.status) or tostring(err)
          if kind == "timeout" then c.timeout = math.min(c.timeout * 2, 4) else c.timeout = M.PROBE_TIMEOUT end
          log.v(3, "[control-plane-check] %s: %s", c.name, c.last_err)
        end
      end
    end
    if pending == 0 then break end
    if core.now() >= deadline then
      local bad = {}
      for _, c in ipairs(comps) do
        if not c.ok then
          log.info("[control-plane-check] %s is not healthy after %s", c.name, capi.go_duration(core.now() - t0))
          bad[#bad + 1] = ("%s check failed at %s: %s"):format(c.name, c.url, c.last_err or "no answer")
        end
      end
      for _, c in ipairs(comps) do c.handle:close() end
      error(("[control-plane-check] Control plane components are not healthy after %s:\n%s\n\n%s"):format(
        capi.go_duration(timeout), table.concat(bad, "\n"), M.troubleshoot(comps, opts)), 0)
    end
    core.sleep(opts.interval or M.INTERVAL)
  end
  for _, c in ipairs(comps) do c.handle:close() end
  return result
end

-- The whole wait-control-plane phase.
function M.run(ctx)
  local rt = runtime_mod.for_ctx(ctx)
  local mdir = M.MANIFESTS
  log.info("[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods from directory %q", mdir)
  if ctx.dry_run then
    log.info("[dryrun] Would wait for the kubelet and the control plane components to be healthy")
    return
  end
  healthz.wait(ctx, rt, capi.timeout(ctx, "kubeletHealthCheck"), capi.go_duration)
  local comps = M.components(function(f) return ctx:read(mdir .. "/" .. f) end)
  -- a local etcd's client port on loopback, which its manifest always listens on (the troubleshooting hint)
  local etcd_client = ctx:exists(mdir .. "/etcd.yaml") and { host = "127.0.0.1", port = 2379 } or nil
  local ok, cri = pcall(cri_socket.socket, ctx)
  return M.components_healthy(comps, capi.timeout(ctx, "controlPlaneComponentHealthCheck"),
    { etcd_client = etcd_client, cri = ok and cri or nil })
end

return M
