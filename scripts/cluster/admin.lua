-- The kubeadm:cluster-admins ClusterRoleBinding (kubeadm EnsureAdminClusterRoleBinding): admin.conf's
-- user is in the group kubeadm:cluster-admins, which has no rights until this binding exists. Try
-- with admin.conf; if forbidden, create it with super-admin.conf (system:masters); other errors
-- are retried every 500 ms up to the API-call timeout. Returns the admin.conf client.
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local log = require "log"
local capi = require "cluster.api"

local M = {}

M.NAME = "kubeadm:cluster-admins"

function M.binding()
  return {
    apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRoleBinding",
    metadata = { name = M.NAME },
    roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "cluster-admin" },
    subjects = { { apiGroup = "rbac.authorization.k8s.io", kind = "Group", name = M.NAME } },
  }
end

function M.ensure(ctx)
  local admin = capi.from_kubeconfig(ctx, capi.ADMIN_CONF)
  if ctx.dry_run then return admin end
  local timeout = capi.timeout(ctx, "kubernetesAPICall")
  local deadline = core.now() + timeout
  local last
  while true do
    local _, err = admin:create(M.binding())
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
      if not serr or serr.code == 409 then return admin end
      last = serr
    end
    if core.now() >= deadline then
      error(("could not create the %s ClusterRoleBinding after %s: %s"):format(M.NAME,
        capi.go_duration(timeout), tostring(last)), 0)
    end
    core.sleep(0.5)
  end
end

return M
