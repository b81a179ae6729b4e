-- What a site phase gets on its ctx besides the stock fields (cfg, gates, root, dry_run, flags,
-- journal, data, write/read/mkdir/exists/gate): `ctx.log` (the logger) and `ctx:client(which)`,
-- the API client factory. which:
--   "admin"     the run's admin client (cluster.admin.client: on init with kubeadm:cluster-admins
--               ensured, elsewhere admin.conf or the command's --kubeconfig as it is),
--   "kubelet"   this node's kubelet credentials (kubelet.conf, written by the TLS bootstrap;
--               opts.wait = seconds to wait for it, as a phase right after kubelet-start must),
--   "bootstrap" a join's discovery/TLS-bootstrap client (after discovery, before kubelet-start),
--   or a kubeconfig path under the root.
-- Clients are kube.client objects (get, list, create, update, patch, apply, delete,
-- create_or_update, get_or_create, watch). Under --dry-run every call fails loudly instead.
local lazy = require "framework.lazy"
local capi = lazy.require "cluster.api"
local cadmin = lazy.require "cluster.admin"
local log = require "framework.log"

local M = {}

function M.client(ctx, which, opts)
  which, opts = which or "admin", opts or {}
  if ctx.dry_run then return capi.dry_client(which) end
  ctx.data.site_clients = ctx.data.site_clients or {}
  local cached = ctx.data.site_clients[which]
  if cached then return cached end
  local c
  if which == "admin" then
    c = cadmin.client(ctx)
  elseif which == "bootstrap" then
    c = ctx.data.bootstrap_client or error("no bootstrap client: only a join has one, after discovery", 0)
  else
    local path = which == "kubelet" and capi.KUBELET_CONF or which
    if opts.wait and not ctx:exists(path) then
      log.info("[%s] Waiting up to %ds for %s", ctx.phase_path or "site", opts.wait, path)
      capi.poll(path, opts.wait, 0.25, function() return ctx:exists(path) end)
    end
    c = capi.from_kubeconfig(ctx, path)
  end
  ctx.data.site_clients[which] = c
  return c
end

-- Adds the site fields to a run's ctx.
function M.extend(ctx)
  ctx.log = log
  ctx.client = M.client
  return ctx
end

return M
