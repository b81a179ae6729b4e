-- upload-config during `upgrade apply`: kubeadm-config rewritten from the upgraded
-- ClusterConfiguration (only the ClusterConfiguration key: any old ClusterStatus goes, seed 001),
-- kubelet-config from the cluster's KubeletConfiguration (the hash annotation kept when kubeadm
-- generated it), and under NodeLocalCRISocket the kubeadm.alpha.kubernetes.io/cri-socket
-- annotation removed from this Node (seed 002).
local cjson = require "cjson"
local log = require "log"
local capi = require "cluster.api"
local up = require "cluster.uploadconfig"

local M = {}

M.CRI_ANNOTATION = "kubeadm.alpha.kubernetes.io/cri-socket"

function M.kubeadm(ctx)
  local c = capi.admin(ctx)
  log.info("[upload-config] Storing the configuration used in ConfigMap %q in the %q Namespace", up.KUBEADM_CONFIG, up.NS)
  local objs = up.kubeadm_objects(ctx.cfg.cluster)
  -- an update replaces data as a whole: a ClusterStatus key left by an old kubeadm is dropped
  for _, o in ipairs(objs) do capi.apply(ctx, c, o) end
end

-- Whether kubeadm generated the live kubelet-config (its hash annotation matches its data).
function M.generated(cm)
  local ann = cm and cm.metadata and cm.metadata.annotations and cm.metadata.annotations[up.HASH_ANNOTATION]
  return ann ~= nil and cm.data ~= nil and ann == up.checksum(cm.data)
end

function M.kubelet(ctx)
  local c = capi.admin(ctx)
  log.info("[upload-config] Creating a ConfigMap %q in namespace %s with the configuration for the kubelets in the cluster",
    up.KUBELET_CONFIG, up.NS)
  local live = not ctx.dry_run and c:get { apiVersion = "v1", kind = "ConfigMap", namespace = up.NS, name = up.KUBELET_CONFIG }
  local objs = up.kubelet_objects(ctx.cfg.cluster, ctx.cfg.kubelet)
  if live == nil or live == false or M.generated(live) then
    objs[1].metadata.annotations = { [up.HASH_ANNOTATION] = up.checksum(objs[1].data) }
  end
  for _, o in ipairs(objs) do capi.apply(ctx, c, o) end
  if ctx:gate("NodeLocalCRISocket") then
    require("cluster.node").patch(ctx, c, function(n)
      local a = n.metadata.annotations or {}
      if a[M.CRI_ANNOTATION] == nil then return nil end
      log.info("[upload-config] Removing the %s annotation from Node %q", M.CRI_ANNOTATION, n.metadata.name)
      return { metadata = { annotations = { [M.CRI_ANNOTATION] = cjson.null } } }
    end, "[upload-config]")
  end
end

return M
