-- What a join knows after discovery (kubeadm's joinData): the TLS bootstrap credentials, the
-- cluster's ClusterConfiguration from kubeadm-config (so the feature gates are the cluster's), its
-- KubeletConfiguration from kubelet-config.
local client_mod = require "kube.client"
local config = require "config"
local discovery = require "cluster.discovery"
local upload_config = require "cluster.upload_config"
local log = require "framework.log"
local yaml = require "moonadm.yaml"
local shape = require "kube.shape"

local M = {}

-- What the preparation puts in ctx.data for the phases (framework/context.lua).
M.DATA = {
  "discovery",        -- the discovery result: server, CA, token or client certificate (cluster.discovery)
  "bootstrap_client", -- the TLS bootstrap client (kubeadm-config, kubelet-config, kubeadm-certs reads)
}

M.EXPERIMENT_ANNOTATION = upload_config.EXPERIMENT_ANNOTATION

function M.bootstrap_client(r)
  local c, err = client_mod.new { server = r.server, ca_pem = r.ca_pem, token = r.token, cert_pem = r.cert_pem,
    key_pem = r.key_pem, timeout = 60, request_timeout = 10 }
  if not c then error("[join] building the TLS bootstrap client: " .. tostring(err), 0) end
  return c
end

-- Runs discovery and reads the cluster's configuration; sets ctx.cfg.cluster, ctx.cfg.kubelet,
-- ctx.gates, ctx.data.discovery and ctx.data.bootstrap_client. Writes nothing. (This node's
-- identity is the node view's, from the JoinConfiguration: scripts/node/view.lua.)
function M.prepare(ctx)
  if ctx.data.discovery then return end
  local r = discovery.run(ctx)
  ctx.data.discovery = r
  local c = M.bootstrap_client(r)
  ctx.data.bootstrap_client = c
  log.info("[preflight] Reading configuration from the \"kubeadm-config\" ConfigMap in namespace \"kube-system\"...")
  local cluster, cm = upload_config.read_kubeadm(c)
  if not cluster then error("[join] unable to read the cluster's configuration: " .. cm, 0) end
  ctx.cfg.cluster = cluster
  local gates = config.feature_gates(cluster)
  local ann, aerr = shape.strings(cm, "metadata.annotations")
  if not ann then error("[join] ConfigMap kube-system/kubeadm-config: " .. aerr, 0) end
  local exp = ann[M.EXPERIMENT_ANNOTATION]
  if exp then
    local extra = config.parse_feature_gates(exp)
    for k, v in pairs(extra or {}) do gates[k] = v end
    log.warn("this cluster runs moonadm's experiment %s (annotation %s): this join follows it", exp, M.EXPERIMENT_ANNOTATION)
  end
  ctx.gates = gates
  local kcm, kerr = c:get { apiVersion = "v1", kind = "ConfigMap", namespace = "kube-system", name = "kubelet-config" }
  if not kcm and kerr.code ~= 404 then
    error(("[preflight] reading the kubelet configuration from ConfigMap kube-system/kubelet-config: %s"):format(tostring(kerr)), 0)
  elseif not kcm then
    log.warn("[preflight] the cluster has no kube-system/kubelet-config ConfigMap: this node's kubelet gets the defaults")
  end
  local kdata, kwhy = shape.strings(kcm, "data")
  if not kdata then error("[preflight] ConfigMap kube-system/kubelet-config: " .. kwhy, 0) end
  if kdata.kubelet then
    local docs = yaml.decode(kdata.kubelet, "kubelet-config")
    ctx.cfg.kubelet = docs and docs[1]
  end
  if ctx.inputs then ctx.inputs.cluster, ctx.inputs.kubelet = cluster, ctx.cfg.kubelet end
end

return M
