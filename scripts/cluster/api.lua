-- The helpers every cluster-side phase needs: timeouts from the config, clients from kubeconfigs,
-- create-or-update with kubeadm-style logging, lookups where absent is fine, polling, and --dry-run
-- printing instead of mutating calls. The admin client of a run is cluster/admin.lua's.
local fs = require "moonadm.fs"
local client = require "kube.client"
local config = require "config"
local C = require "config.constants"
local duration = require "config.duration"
local log = require "framework.log"
local kubeconfig = require "kube.kubeconfig"
local core = require "moonadm.core"
local shape = require "kube.shape"

local M = {}

M.ADMIN_CONF = "/etc/kubernetes/admin.conf"
M.SUPER_ADMIN_CONF = "/etc/kubernetes/super-admin.conf"
M.KUBELET_CONF = "/etc/kubernetes/kubelet.conf"

-- The client of a --dry-run that calls no API: every method fails loudly, naming itself.
function M.dry_client(which)
  return setmetatable({}, { __index = function(_, k)
    return function() error(("--dry-run: no API call (%s on the %s client) is made"):format(k, which), 0) end
  end })
end

-- A timeout of the running command's config, in seconds.
function M.timeout(ctx, name)
  local doc = config.node_document(ctx.cfg)
  local t = doc.timeouts and doc.timeouts[name] or C.timeouts[name]
  return config.duration_seconds(t) or config.duration_seconds(C.timeouts[name])
end

-- A client from a kubeconfig under the root, with the API-call timeout as its retry deadline.
function M.from_kubeconfig(ctx, path, opts)
  opts = opts or {}
  opts.timeout = opts.timeout or M.timeout(ctx, "kubernetesAPICall")
  local c, err = client.from_kubeconfig(fs.path(path), opts)
  if not c then error(("building an API client from %s: %s"):format(path, tostring(err)), 0) end
  return c
end

-- admin.conf parsed (server, ca_pem, ...), read through ctx (so --dry-run sees this run's file).
function M.admin_kubeconfig(ctx)
  local text, err = ctx:read(M.ADMIN_CONF)
  if not text then error(("reading %s: %s"):format(M.ADMIN_CONF, tostring(err)), 0) end
  local kc, perr = kubeconfig.parse(text, { filename = M.ADMIN_CONF, base_dir = "/etc/kubernetes",
    read = function(p) return ctx:read(p) end })
  if not kc then error(tostring(perr), 0) end
  return kc
end

-- The ref text of an object for messages: Kind ns/name.
function M.describe(obj)
  local md = obj.metadata or {}
  return ("%s %s%s"):format(obj.kind, md.namespace and (md.namespace .. "/") or "", md.name)
end

-- Creates or updates obj (dry run: prints it). Raises on failure. Returns the live object, how.
function M.apply(ctx, c, obj, opts)
  if ctx.dry_run then
    log.info("[dryrun] Would create or update %s", M.describe(obj))
    return obj, "dry-run"
  end
  local live, how
  -- An API server that has just been restarted (an upgrade, a join) answers 401/403 until its
  -- authenticator and RBAC caches are filled: retried until the API-call timeout, as kubeadm's
  -- CreateOrUpdate retries every error; any other failure is raised at once.
  local deadline, wait = core.now() + M.timeout(ctx, "kubernetesAPICall"), 0.25
  while true do
    if obj.kind == "Service" then
      -- a second create of a Service with a fixed clusterIP fails with 422 (IP allocated) before
      -- the 409, so look first and update in place (keeping the live resourceVersion)
      live, how = M.update_service(c, obj)
    else
      live, how = c:create_or_update(obj, opts)
    end
    local code = not live and type(how) == "table" and how.code
    if live or not (code == 401 or code == 403) or core.now() + wait > deadline then break end
    log.v(1, "%s: %s; retrying in %.2fs (a restarted API server fills its caches first)", M.describe(obj),
      tostring(client.handled(how)), wait)
    core.sleep(wait)
    wait = math.min(wait * 2, 2)
  end
  if not live then error(("creating or updating %s: %s"):format(M.describe(obj), tostring(how)), 0) end
  log.v(2, "%s %s", M.describe(obj), how)
  return live, how
end

function M.update_service(c, obj)
  local live, err = c:get(obj)
  if not live then
    if err.code ~= 404 then return nil, err end
    local got, cerr = c:create(obj)
    if got then return got, "created" end
    if cerr.code ~= 409 and cerr.code ~= 422 then return nil, cerr end
    live, err = c:get(obj)
    if not live then return nil, err end
  end
  local upd = {}
  for k, v in pairs(obj) do upd[k] = v end
  upd.metadata = {}
  for k, v in pairs(obj.metadata or {}) do upd.metadata[k] = v end
  local rv, rverr = shape.need(live, "metadata.resourceVersion", "string")
  if not rv then return nil, ("%s as read: %s"):format(M.describe(obj), rverr) end
  upd.metadata.resourceVersion = rv
  local got, uerr = c:update(upd)
  if not got then return nil, uerr end
  return got, "updated"
end

-- The cluster's version, the kube-apiserver's gitVersion (kubeadm's FetchClusterVersion) | nil, why.
function M.cluster_version(c)
  local v, err = c:call("GET", "/version")
  if not v then return nil, err end
  local text, why = shape.need(v, "gitVersion", "string")
  if not text or #text > 64 or not text:match("^v%d") then
    return nil, ("GET /version: %s: the answer is not the API server's version")
      :format(why or ("gitVersion " .. shape.quote(text) .. " is not a version"))
  end
  return text
end

-- The object, or nil when it does not exist (404); nil, err for any other failure.
function M.lookup(c, ref, opts)
  local obj, err = c:get(ref, opts)
  if obj then return obj end
  if err.code == 404 then return nil end
  return nil, err
end

-- Creates obj unless it exists (then the live one is returned untouched).
function M.ensure(ctx, c, obj)
  if ctx.dry_run then
    log.info("[dryrun] Would create %s if it does not exist", M.describe(obj))
    return obj, "dry-run"
  end
  local live, how = c:get_or_create(obj)
  if not live then error(("creating %s: %s"):format(M.describe(obj), tostring(how)), 0) end
  return live, how
end

-- Polls f() every interval seconds until it returns a truthy value or the deadline passes.
-- f returns value | nil, last_error (an API failure it returns is the poll's to retry). Raises
-- "timed out waiting for WHAT: last error".
function M.poll(what, timeout, interval, f)
  local deadline = core.now() + timeout
  local last
  while true do
    local v, err = f()
    if v then return v end
    last = client.handled(err) or last
    if core.now() >= deadline then
      error(("timed out waiting for %s after %s%s"):format(what, M.go_duration(timeout),
        last and (": " .. tostring(last)) or ""), 0)
    end
    core.sleep(interval)
  end
end

-- Go's time.Duration String() for a number of seconds ("501.829165ms", "4.001s", "1m30s"); the one
-- formatter is config.duration's.
M.go_duration = duration.format_seconds

return M
