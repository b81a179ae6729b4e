-- upload-config: the kubeadm-config ConfigMap (ClusterConfiguration only: no ClusterStatus since
-- KEP-2506, seed 001), the kubelet-config ConfigMap (the cluster-wide KubeletConfiguration, with
-- kubeadm's component-config hash annotation when the user supplied none), and the Roles and
-- RoleBindings that let joining nodes (bootstrap tokens) and nodes read them.
local yaml = require "moonadm.yaml"
local config = require "config"
local log = require "framework.log"
local capi = require "cluster.api"
local cadmin = require "cluster.admin"
local rbac = require "cluster.rbac"
local encoding = require "moonadm.encoding"
local kubelet_config = require "kubelet.config"
local cluster_node = require "cluster.node"
local shape = require "kube.shape"

local M = {}

-- moonadm's own experiments travel in an annotation of kubeadm-config, which kubeadm ignores, so the
-- cluster stays readable by kubeadm v1.35 (design.md: the old join order is never a kubeadm gate).
M.EXPERIMENT_ANNOTATION = "moonadm.io/experimental-feature-gates"

M.NS = "kube-system"
M.KUBEADM_CONFIG = "kubeadm-config"
M.KUBELET_CONFIG = "kubelet-config"
M.NODES_KUBEADM_CONFIG = "kubeadm:nodes-kubeadm-config"
M.KUBELET_CONFIG_RBAC = "kubeadm:kubelet-config"
M.BOOTSTRAPPERS = "system:bootstrappers:kubeadm:default-node-token"
M.NODES = "system:nodes"
M.HASH_ANNOTATION = "kubeadm.kubernetes.io/component-config.hash"

-- kubeadm's ChecksumForConfigMap: sha256 over the data values in key order.
function M.checksum(data)
  local keys = {}
  for k in pairs(data) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = data[k] end
  return "sha256:" .. encoding.sha256_hex(table.concat(parts))
end

-- kubeadm's SignConfigMap: a generated component config's ConfigMap carries the checksum of its data.
function M.sign(cm)
  cm.metadata.annotations = cm.metadata.annotations or {}
  cm.metadata.annotations[M.HASH_ANNOTATION] = M.checksum(cm.data)
  return cm
end

-- kubeadm's VerifyConfigMapSignature: the checksum is there and matches (a config kubeadm generated
-- and nobody edited since); anything else is the user's.
function M.signed(cm)
  local ann = shape.strings(cm, "metadata.annotations")
  local data = shape.get(cm, "data", "table") and shape.strings(cm, "data")
  ann = ann and ann[M.HASH_ANNOTATION]
  return ann ~= nil and data ~= nil and ann == M.checksum(data)
end

-- The cluster's ClusterConfiguration read back from kubeadm-config, checked: cluster, cm | nil, why,
-- absent (true: the ConfigMap does not exist). The one reader of it (join, reset, upgrade, plan, certs).
function M.read_kubeadm(c)
  local ref = ("ConfigMap %s/%s"):format(M.NS, M.KUBEADM_CONFIG)
  local cm, err = capi.lookup(c, { apiVersion = "v1", kind = "ConfigMap", namespace = M.NS, name = M.KUBEADM_CONFIG })
  if err then return nil, ("reading %s: %s"):format(ref, tostring(err)) end
  if not cm then return nil, ref .. " does not exist", true end
  local data, why = shape.strings(cm, "data")
  if data and not data.ClusterConfiguration then why = "it has no ClusterConfiguration key" end
  if why then return nil, ("%s: %s"):format(ref, why) end
  local cluster, cerr = config.load_cluster(data.ClusterConfiguration, M.KUBEADM_CONFIG)
  if not cluster then return nil, ("%s: its ClusterConfiguration is invalid: %s"):format(ref, tostring(cerr)) end
  return cluster, cm
end

-- moonadm's experiments (ControlPlaneKubeletLocalMode=false) are the cluster's too, so joins follow
-- them; they travel in an annotation kubeadm ignores, never in featureGates (design.md's contract).
local function experiment_annotations(cluster)
  local fg = cluster.featureGates or {}
  if fg.ControlPlaneKubeletLocalMode == false then
    return { [M.EXPERIMENT_ANNOTATION] = "ControlPlaneKubeletLocalMode=false" }
  end
end

function M.kubeadm_objects(cluster)
  local text = config.encode_cluster(cluster)
  return {
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = M.KUBEADM_CONFIG, namespace = M.NS,
      annotations = experiment_annotations(cluster) },
      data = { ClusterConfiguration = text } },
    rbac.role(M.NS, M.NODES_KUBEADM_CONFIG, { rbac.rule({ "" }, { "configmaps" }, { "get" }, { M.KUBEADM_CONFIG }) }),
    rbac.role_binding(M.NS, M.NODES_KUBEADM_CONFIG, M.NODES_KUBEADM_CONFIG,
      { rbac.group(M.BOOTSTRAPPERS), rbac.group(M.NODES) }),
  }
end

-- user_supplied: whether the KubeletConfiguration is the user's (default: one was given), which
-- leaves the ConfigMap unsigned.
function M.kubelet_objects(cluster, user_kubelet, user_supplied)
  if user_supplied == nil then user_supplied = user_kubelet ~= nil end
  local kcfg = kubelet_config.build(cluster, user_kubelet)
  local cm = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = M.KUBELET_CONFIG, namespace = M.NS },
    data = { kubelet = yaml.encode(kcfg) } }
  if not user_supplied then M.sign(cm) end
  return {
    cm,
    rbac.role(M.NS, M.KUBELET_CONFIG_RBAC, { rbac.rule({ "" }, { "configmaps" }, { "get" }, { M.KUBELET_CONFIG }) }),
    rbac.role_binding(M.NS, M.KUBELET_CONFIG_RBAC, M.KUBELET_CONFIG_RBAC,
      { rbac.group(M.NODES), rbac.group(M.BOOTSTRAPPERS) }),
  }
end

function M.upload_kubeadm(ctx)
  local c = cadmin.client(ctx)
  log.info("[upload-config] Storing the configuration used in ConfigMap %q in the %q Namespace", M.KUBEADM_CONFIG, M.NS)
  for _, o in ipairs(M.kubeadm_objects(ctx.cfg.cluster)) do capi.apply(ctx, c, o) end
end

function M.upload_kubelet(ctx)
  local c = cadmin.client(ctx)
  log.info("[kubelet] Creating a ConfigMap %q in namespace %s with the configuration for the kubelets in the cluster",
    M.KUBELET_CONFIG, M.NS)
  for _, o in ipairs(M.kubelet_objects(ctx.cfg.cluster, ctx.cfg.kubelet)) do capi.apply(ctx, c, o) end
  -- the old way: the CRI socket as an annotation on this node's Node object
  if not ctx:gate("NodeLocalCRISocket") then cluster_node.annotate_cri_socket(ctx, c, "[upload-config]") end
end

return M
