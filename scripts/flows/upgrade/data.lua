-- What an upgrade knows before its phases run (kubeadm's upgrade Data): the cluster's
-- ClusterConfiguration from kubeadm-config (with the target version for apply), its
-- KubeletConfiguration and KubeProxyConfiguration, its feature gates, and this node seen as an
-- InitConfiguration (name from kubelet.conf's client certificate, API endpoint from the local
-- kube-apiserver manifest) so init's builders (manifests, certificates, kubelet files) serve it.
local yaml = require "moonadm.yaml"
local config = require "config"
local log = require "framework.log"
local capi = require "cluster.api"
local cadmin = require "cluster.admin"
local up = require "cluster.upload_config"
local nodeview = require "node.view"
local version = require "upgrade.version"
local interrupted = require "upgrade.interrupted"
local unode = require "upgrade.node"
local kubelet_config = require "kubelet.config"
local shape = require "kube.shape"

local M = {}

-- What the preparation puts in ctx.data for the phases (framework/context.lua).
M.DATA = {
  "upgrade_prepared",        -- the preparation ran (a phase run alone prepares once)
  "coredns_configmap",       -- kube-system/coredns as read (nil: absent)
  "proxy_configmap",         -- kube-system/kube-proxy as read (nil: absent)
  "kubeproxy_user_supplied", -- the KubeProxyConfiguration is the user's (its ConfigMap is unsigned)
}

local NS <const> = "kube-system"

-- A kube-system ConfigMap, or nil when it does not exist (or, when optional, cannot be read: kubeadm
-- goes on without kube-proxy's config on a 403 too); any other failure raises.
local function get_cm(c, name, optional)
  local cm, err = capi.lookup(c, { apiVersion = "v1", kind = "ConfigMap", namespace = NS, name = name })
  if err and optional and err.code == 403 then
    log.warn("No %s config is loaded. Continuing without it: %s", name, tostring(err))
    return nil
  end
  if err then error(("[upgrade/config] reading ConfigMap %s/%s: %s"):format(NS, name, tostring(err)), 0) end
  return cm
end

-- A ConfigMap's data, checked ({} for no ConfigMap); raises on one of another shape.
local function cm_data(cm, name)
  local d, why = shape.strings(cm, "data")
  if not d then error(("[upgrade/config] ConfigMap %s/%s: %s"):format(NS, name, why), 0) end
  return d
end

-- Reads the cluster's configuration and sets ctx.cfg.cluster/kubelet/kubeproxy/init and ctx.gates.
-- opts.apply: the target version is the argument (or apply.kubernetesVersion).
function M.prepare(ctx, opts)
  opts = opts or {}
  if ctx.data.upgrade_prepared then return end
  local part = unode.part(ctx)
  interrupted.recover(ctx) -- etcd's manifest back first: without it no API server answers
  local c = cadmin.client(ctx)
  log.info("[upgrade/config] Reading configuration from the %q ConfigMap in namespace %q...", "kubeadm-config", NS)
  local cluster, cerr = up.read_kubeadm(c)
  if not cluster then error("[upgrade/config] unable to read the cluster's configuration: " .. cerr, 0) end
  if opts.apply then
    local target = part.kubernetesVersion
    if not target or target == "" then
      error("[upgrade/config] missing the version to upgrade to: `moonadm upgrade apply VERSION` " ..
        "(or UpgradeConfiguration apply.kubernetesVersion)", 0)
    end
    local t, perr = version.parse(target)
    if not t then error("[upgrade/version] " .. perr, 0) end
    cluster.kubernetesVersion = t.text
    -- gates the target's minor removed: one whose behaviour stayed on is dropped (the uploaded
    -- kubeadm-config then no longer names it); any other is refused before anything changes
    for name, value in pairs(cluster.featureGates or {}) do
      local ok, msg = config.check_feature_gate(name, value, t.text)
      if not ok and value == true and config.gate_stays_on(name) then
        log.warn("[upgrade/config] kubeadm-config: %s; dropped from the configuration this upgrade stores", msg)
        cluster.featureGates[name] = nil
      elseif not ok then
        error(("[upgrade/config] kubeadm-config, ClusterConfiguration.featureGates.%s: %s (kubectl -n kube-system "
          .. "edit configmap kubeadm-config), then run the upgrade again"):format(name, msg), 0)
      end
    end
    if cluster.featureGates and next(cluster.featureGates) == nil then cluster.featureGates = nil end
  end
  ctx.cfg.cluster = cluster
  ctx.gates = config.feature_gates(cluster)
  local kubelet = cm_data(get_cm(c, "kubelet-config"), "kubelet-config").kubelet
  if kubelet then
    local docs = yaml.decode(kubelet, "kubelet-config")
    ctx.cfg.kubelet = docs and docs[1]
  end
  -- kube-proxy's config as the cluster holds it; kubeadm's (signed) is re-signed when re-applied,
  -- the user's stays unsigned
  local pcm = get_cm(c, "kube-proxy", true)
  local proxy = cm_data(pcm, "kube-proxy")["config.conf"]
  if proxy then
    local docs = yaml.decode(proxy, "kube-proxy")
    ctx.cfg.kubeproxy = docs and docs[1]
    ctx.data.kubeproxy_user_supplied = not up.signed(pcm)
  end
  ctx.data.proxy_configmap = pcm ~= nil
  -- only the addon phase asks, and a worker (whose kubelet credentials may not read it) skips that
  local dns, derr = capi.lookup(c, { apiVersion = "v1", kind = "ConfigMap", namespace = NS, name = "coredns" })
  if derr and derr.code ~= 403 then
    error(("[upgrade/config] reading ConfigMap %s/coredns: %s"):format(NS, tostring(derr)), 0)
  end
  ctx.data.coredns_configmap = dns ~= nil

  -- this node as init's builders see a node
  -- the CN of kubelet.conf's client certificate (system:node:NAME), as kubeadm's GetNodeRegistration
  local name = nodeview.name_from_kubelet_conf(ctx:read(unode.KUBELET_CONF), function(p) return ctx:read(p) end)
    or config.node_name_default()
  local nodereg = { name = name }
  local inst = ctx:read(kubelet_config.INSTANCE_PATH)
  local sock = inst and inst:match('containerRuntimeEndpoint:%s*"?([^"\n]+)"?')
  if sock then nodereg.criSocket = sock end
  local u = ctx.cfg.upgrade or {}
  ctx.cfg.init = { nodeRegistration = nodereg, localAPIEndpoint = unode.local_endpoint(ctx) or {},
    patches = part.patches, timeouts = u.timeouts }
  if ctx.inputs then ctx.inputs.cluster, ctx.inputs.kubelet = cluster, ctx.cfg.kubelet end
  ctx.data.upgrade_prepared = true
end

return M
