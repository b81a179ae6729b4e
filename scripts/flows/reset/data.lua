-- What a reset knows before its phases run (kubeadm's resetData): the cluster's ClusterConfiguration
-- from the kubeadm-config ConfigMap read with --kubeconfig (unreachable or missing: a warning, and
-- the reset goes on with the node's own files), this node's name and advertise address, the
-- certificates dir and the ResetConfiguration's switches. Stored in ctx.data.reset; writes nothing.
local client_mod = require "kube.client"
local upload_config = require "cluster.upload_config"
local fs = require "moonadm.fs"
local log = require "framework.log"
local manifests = require "manifests.installed"
local nodeview = require "node.view"
local C = require "config.constants"

local M = {}

-- What the preparation puts in ctx.data for the phases (framework/context.lua).
M.DATA = { "reset" } -- {cluster, node name, advertise address, cert dir, switches}: see above

M.DEFAULT_CERT_DIR = C.certificates_dir
M.KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
-- Reading the cluster is best effort, but retried as kubeadm's GetConfigMapWithShortRetry retries:
-- attempts of at most API_REQUEST_TIMEOUT each (a load balancer may route one to a dead member)
-- within API_TIMEOUT, so that a reset of a node whose cluster is gone does not wait a minute on it.
M.API_TIMEOUT = 10
M.API_REQUEST_TIMEOUT = 2

-- The node name from kubelet.conf's client certificate (CN system:node:NAME), as kubeadm's
-- getNodeNameFromKubeletConfig; nil when there is none.
function M.node_name_from_kubelet_conf()
  return nodeview.name_from_kubelet_conf(fs.read(M.KUBELET_CONF), fs.read)
end

-- The advertise address this node had (scripts/node/view.lua): address, where it came from.
function M.advertise_address(client, node)
  return nodeview.advertise_address_on_disk(client, node, manifests.read)
end

-- kubeadm's order for the certificates dir: the flag, else the ResetConfiguration's (when not the
-- default), else the cluster's.
function M.cert_dir(ctx, cluster)
  local set = ctx.flags_set or {}
  if set["cert-dir"] and ctx.flags["cert-dir"] then return ctx.flags["cert-dir"] end
  local rc = ctx.cfg and ctx.cfg.reset or {}
  if rc.certificatesDir and rc.certificatesDir ~= M.DEFAULT_CERT_DIR then return rc.certificatesDir end
  if cluster and cluster.certificatesDir then return cluster.certificatesDir end
  return rc.certificatesDir or M.DEFAULT_CERT_DIR
end

-- Reads the cluster's configuration with the --kubeconfig file. Returns cluster, client | nil, why.
function M.read_cluster(ctx, path)
  if not fs.exists(path) then
    log.v(1, "[reset] Could not obtain a client set from the kubeconfig file: %s (no such file)", path)
    return nil, "no " .. path
  end
  local c, err = client_mod.from_kubeconfig(fs.path(path), { timeout = M.API_TIMEOUT, request_timeout = M.API_REQUEST_TIMEOUT,
    connect_timeout = 2, max_backoff = 1 })
  if not c then
    log.warn("[reset] Could not obtain a client set from the kubeconfig file %s: %s", path, tostring(err))
    return nil, tostring(err)
  end
  log.info("[reset] Reading configuration from the \"kubeadm-config\" ConfigMap in namespace \"kube-system\"...")
  log.info("[reset] Use 'moonadm init phase upload-config kubeadm --config your-config-file' to re-upload it.")
  local cluster, why = upload_config.read_kubeadm(c)
  if not cluster then
    log.warn("[reset] Unable to fetch the kubeadm-config ConfigMap from cluster: %s", why)
    c:close()
    return nil, why
  end
  return cluster, c
end

-- Builds ctx.data.reset once.
function M.prepare(ctx)
  if ctx.data.reset then return ctx.data.reset end
  local rc = ctx.cfg and ctx.cfg.reset or {}
  local r = { force = ctx.flags.force or rc.force or false,
    cleanup_tmp_dir = ctx.flags["cleanup-tmp-dir"] or rc.cleanupTmpDir or false }
  ctx.data.reset = r
  local kc = ctx.flags.kubeconfig or "/etc/kubernetes/admin.conf"
  local cluster, client = M.read_cluster(ctx, kc)
  if cluster then r.cluster, r.client = cluster, client end
  r.node_name = M.node_name_from_kubelet_conf()
  if r.node_name then log.v(1, "[reset] node name %s (from %s)", r.node_name, M.KUBELET_CONF) end
  r.advertise, r.advertise_from = M.advertise_address(r.client, r.node_name)
  if r.advertise then log.v(1, "[reset] advertise address %s (from %s)", r.advertise, r.advertise_from) end
  r.cert_dir = M.cert_dir(ctx, r.cluster)
  return r
end

function M.get(ctx) return ctx.data.reset or M.prepare(ctx) end

return M
