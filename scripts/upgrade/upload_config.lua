-- upload-config during `upgrade apply`: kubeadm-config rewritten from the upgraded
-- ClusterConfiguration (only the ClusterConfiguration key: any old ClusterStatus goes, seed 001),
-- kubelet-config from the cluster's KubeletConfiguration (the hash annotation kept when kubeadm
-- generated it), and under NodeLocalCRISocket the kubeadm.alpha.kubernetes.io/cri-socket
-- annotation removed from this Node (seed 002).
local cjson = require "cjson"
local log = require "framework.log"
local capi = require "cluster.api"
local cadmin = require "cluster.admin"
local node = require "cluster.node"
local up = require "cluster.upload_config"

local M = {}

M.CRI_ANNOTATION = node.CRI_SOCKET_ANNOTATION

function M.kubeadm(ctx)
  local c = cadmin.client(ctx)
  log.info("[upload-config] Storing the configuration used in ConfigMap %q in the %q Namespace", up.KUBEADM_CONFIG, up.NS)
  local objs = up.kubeadm_objects(ctx.cfg.cluster)
  -- an update replaces data as a whole: a ClusterStatus key left by an old kubeadm is dropped
  for _, o in ipairs(objs) do capi.apply(ctx, c, o) end
end

function M.kubelet(ctx)
  local c = cadmin.client(ctx)
  log.info("[upload-config] Creating a ConfigMap %q in namespace %s with the configuration for the kubelets in the cluster",
    up.KUBELET_CONFIG, up.NS)
  local live, err
  if not ctx.dry_run then
    live, err = capi.lookup(c, { apiVersion = "v1", kind = "ConfigMap", namespace = up.NS, name = up.KUBELET_CONFIG })
    if err then error(("[upload-config] reading ConfigMap %s/%s: %s"):format(up.NS, up.KUBELET_CONFIG, tostring(err)), 0) end
  end
  -- kept the user's (unsigned) when the live one is not kubeadm's as generated
  local objs = up.kubelet_objects(ctx.cfg.cluster, ctx.cfg.kubelet, live ~= nil and not up.signed(live))
  for _, o in ipairs(objs) do capi.apply(ctx, c, o) end
  if ctx:gate("NodeLocalCRISocket") then
    node.patch(ctx, c, function(n)
      local a = n.metadata.annotations or {}
      if a[M.CRI_ANNOTATION] == nil then return nil end
      log.info("[upload-config] Removing the %s annotation from Node %q", M.CRI_ANNOTATION, n.metadata.name)
      return { metadata = { annotations = { [M.CRI_ANNOTATION] = cjson.null } } }
    end, "[upload-config]")
  end
end

return M
