-- The kubeadm:cluster-admins ClusterRoleBinding (kubeadm EnsureAdminClusterRoleBinding): admin.conf's
-- user is in the group kubeadm:cluster-admins, which has no rights until this binding exists. Try
-- with admin.conf (created, or 409 AlreadyExists: it is authorized); if forbidden, create it with
-- super-admin.conf (system:masters); other errors are retried every 500 ms up to the API-call
-- timeout. Returns the admin.conf client, once it is authorized: the apiserver's RBAC authorizer
-- learns of a new binding through its informer, a moment after the create returned, and until
-- then admin.conf's requests get 403 (issue 18: 1 init in 20 failed in upload-config). So after
-- super-admin created (or found) the binding, admin.conf polls a SelfSubjectAccessReview for
-- every verb on every resource (any authenticated user may ask) until RBAC says allowed, within
-- the same timeout; a 403 that persists fails naming the user and the binding.
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local log = require "framework.log"
local capi = require "cluster.api"

local M = {}

M.NAME = "kubeadm:cluster-admins"
M.AUTH_POLL = 0.1 -- seconds between authorization checks (propagation takes milliseconds)

function M.binding()
  return {
    apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRoleBinding",
    metadata = { name = M.NAME },
    roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "cluster-admin" },
    subjects = { { apiGroup = "rbac.authorization.k8s.io", kind = "Group", name = M.NAME } },
  }
end

local function review()
  return { apiVersion = "authorization.k8s.io/v1", kind = "SelfSubjectAccessReview",
    spec = { resourceAttributes = { verb = "*", group = "*", resource = "*" } } }
end

-- Who admin.conf is, for a message (a SelfSubjectReview; its certificate's names when that fails).
local function whoami(admin)
  local r, err = admin:create({ apiVersion = "authentication.k8s.io/v1", kind = "SelfSubjectReview" }, { timeout = 5 })
  if not r then log.v(1, "[kubeconfig] asking who %s is: %s", capi.ADMIN_CONF, tostring(err)) end
  local ui = type(r) == "table" and type(r.status) == "table" and type(r.status.userInfo) == "table" and r.status.userInfo
  if ui and type(ui.username) == "string" then
    local groups = type(ui.groups) == "table" and table.concat(ui.groups, ", ") or ""
    return ("%q (groups %s)"):format(ui.username, groups)
  end
  return "the user of " .. capi.ADMIN_CONF
end

-- Polls until admin.conf is authorized for everything, or raises at the deadline.
function M.wait_authorized(admin, deadline, timeout)
  local t0, n = core.now(), 0
  local last
  while true do
    n = n + 1
    local r, err = admin:create(review(), { timeout = math.max(1, deadline - core.now()) })
    if r then
      local st = type(r) == "table" and r.status
      if type(st) == "table" and st.allowed == true then
        if n > 1 then
          log.v(1, "[kubeconfig] %s is authorized by the %s ClusterRoleBinding after %s (%d checks)", capi.ADMIN_CONF,
            M.NAME, capi.go_duration(core.now() - t0), n)
        end
        return true
      end
      last = type(st) == "table" and ("RBAC does not allow it yet%s"):format(
        type(st.reason) == "string" and st.reason ~= "" and (": " .. st.reason) or "")
        or "a SelfSubjectAccessReview answer without a status"
    else
      last = tostring(err)
    end
    if core.now() >= deadline then
      error(("%s (%s) is still not authorized by the %s ClusterRoleBinding (ClusterRole cluster-admin for the group %s) " ..
        "%s after it was created: %s"):format(capi.ADMIN_CONF, whoami(admin), M.NAME, M.NAME,
        capi.go_duration(timeout), last), 0)
    end
    core.sleep(M.AUTH_POLL)
  end
end

function M.ensure(ctx)
  local admin = capi.from_kubeconfig(ctx, capi.ADMIN_CONF)
  if ctx.dry_run then return admin end
  local timeout = capi.timeout(ctx, "kubernetesAPICall")
  local deadline = core.now() + timeout
  local last
  while true do
    local _, err = admin:create(M.binding())
    -- created, or AlreadyExists: the request passed authorization, so admin.conf has its rights
    if not err or err.code == 409 then return admin end
    last = err
    if err.code == 403 then
      if not fs.exists(capi.SUPER_ADMIN_CONF) then
        error(("creating the %s ClusterRoleBinding with %s was forbidden and %s does not exist: %s"):format(
          M.NAME, capi.ADMIN_CONF, capi.SUPER_ADMIN_CONF, tostring(err)), 0)
      end
      log.v(1, "[kubeconfig] creating the %s ClusterRoleBinding with %s (admin.conf is not yet allowed)", M.NAME,
        capi.SUPER_ADMIN_CONF)
      local super = capi.from_kubeconfig(ctx, capi.SUPER_ADMIN_CONF)
      local _, serr = super:create(M.binding())
      super:close()
      if not serr or serr.code == 409 then
        M.wait_authorized(admin, deadline, timeout)
        return admin
      end
      last = serr
    end
    if core.now() >= deadline then
      error(("could not create the %s ClusterRoleBinding after %s: %s"):format(M.NAME,
        capi.go_duration(timeout), tostring(last)), 0)
    end
    core.sleep(0.5)
  end
end

-- The run's admin API client: the one getter (kept in ctx.data.client), built by the command's rule:
--   init      admin.conf, with kubeadm:cluster-admins ensured through super-admin.conf on first use;
--             `init phase ... --kubeconfig FILE` (not admin.conf): that file as it is;
--   join      admin.conf as control-plane-prepare wrote it (a control-plane join); any other command
--             (reset, a site phase's ctx:client("admin")): admin.conf (or --kubeconfig) as it is;
--   upgrade-* --kubeconfig when given, else admin.conf where this node has one (ensured as on init,
--             outside --dry-run), else kubelet.conf (a worker's upgrade node).
-- Under --dry-run an init or join client fails every call loudly (no API call is made); an upgrade
-- reads the cluster for real, as kubeadm's dry-run does (its writes only print).
function M.client(ctx)
  if ctx.data.client then return ctx.data.client end
  local given = ctx.flags_set and ctx.flags_set.kubeconfig and ctx.flags.kubeconfig
  if given == capi.ADMIN_CONF then given = nil end
  local c
  if (ctx.command or ""):match("^upgrade") then
    if given or not ctx:exists(capi.ADMIN_CONF) then
      c = capi.from_kubeconfig(ctx, given or capi.KUBELET_CONF)
    elseif ctx.dry_run then
      c = capi.from_kubeconfig(ctx, capi.ADMIN_CONF)
    else
      c = M.ensure(ctx)
    end
  elseif ctx.dry_run then
    c = capi.dry_client("admin")
  elseif ctx.command == "init" and not given then
    c = M.ensure(ctx)
  else
    c = capi.from_kubeconfig(ctx, given or capi.ADMIN_CONF)
  end
  ctx.data.client = c
  return c
end

return M
