-- Preparing a machine to serve a control plane (kubeadm's control-plane-prepare): the shared
-- certificates from the kubeadm-certs Secret (with --certificate-key), then this node's own
-- certificates, kubeconfigs and static pod manifests — made by the same phases init uses, over
-- this node's view of the cluster's configuration (flows/join/data.lua).
local certsupload = require "cluster.certs_upload"
local kubeconfig = require "pki.kubeconfigs"
local log = require "framework.log"
local manifests = require "manifests"
local tree = require "pki.tree"
local config = require "config"
local shape = require "kube.shape"

local M = {}

function M.require_endpoint(ctx)
  if not ctx.cfg.cluster.controlPlaneEndpoint or ctx.cfg.cluster.controlPlaneEndpoint == "" then
    error("unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address\n\n" ..
      "Please ensure that:\n* The cluster has a stable controlPlaneEndpoint address.", 0)
  end
end

function M.download_certs(ctx)
  local key = ctx.cfg.join.controlPlane.certificateKey
  if not key or key == "" then
    log.info("[download-certs] Skipping certs download")
    return
  end
  log.info("[download-certs] Downloading the certificates in Secret \"kubeadm-certs\" in the \"kube-system\" Namespace")
  local c = ctx.data.bootstrap_client
  local secret, err = c:get { apiVersion = "v1", kind = "Secret", namespace = "kube-system", name = "kubeadm-certs" }
  if not secret then
    error("error downloading the secret: " .. tostring(err) .. "\nThe uploaded certificates expire after two hours: " ..
      "run `moonadm init phase upload-certs --upload-certs` on a control plane to upload them again", 0)
  end
  local data, why = shape.strings(secret, "data")
  if not data then error("Secret kube-system/kubeadm-certs as the API server answered it: " .. why, 0) end
  local files = certsupload.open(data, key)
  for _, f in ipairs(certsupload.files(ctx.cfg.cluster)) do
    local name, path = f[1], f[2]
    local content = files[name]
    if content and content ~= "" and path then
      ctx:write(path, content, name:match("%.key$") and "0600" or "0644")
    end
  end
  log.info("[download-certs] Saving the certificates to the folder: %q", config.cert_dir(ctx.cfg.cluster))
end

-- kubeadm's SharedCertificateExists: the CAs and the service-account key pair must be here.
function M.check_shared(ctx)
  local dir = config.cert_dir(ctx.cfg.cluster)
  local need = { dir .. "/ca.crt", dir .. "/ca.key", dir .. "/sa.key", dir .. "/sa.pub", dir .. "/front-proxy-ca.crt",
    dir .. "/front-proxy-ca.key" }
  if not (ctx.cfg.cluster.etcd or {}).external then
    need[#need + 1] = dir .. "/etcd/ca.crt"
    need[#need + 1] = dir .. "/etcd/ca.key"
  end
  local missing = {}
  for _, p in ipairs(need) do if not ctx:exists(p) then missing[#missing + 1] = p end end
  if #missing > 0 then
    error("one or more conditions for hosting a new control plane instance is not satisfied.\n\n" ..
      "missing certificates shared among control plane instances: " .. table.concat(missing, ", ") .. "\n\n" ..
      "Please ensure that:\n* The certificates that must be shared among control plane instances are provided " ..
      "(join with --certificate-key after `moonadm init --upload-certs`, or copy them).", 0)
  end
end

-- The certificates this node lacks, with kubeadm's join messages (CreatePKIAssets): the shared CAs
-- are used quietly, then "Valid certificates and keys now exist", then the service-account key.
function M.certs(ctx)
  M.check_shared(ctx)
  ctx.data.pki_join = true
  local names = { "ca", "apiserver", "apiserver-kubelet-client", "front-proxy-ca", "front-proxy-client", "etcd-ca",
    "etcd-server", "etcd-peer", "etcd-healthcheck-client", "apiserver-etcd-client" }
  tree.prepare(ctx, names)
  for _, name in ipairs(names) do tree.write(ctx, name) end
  log.info("[certs] Valid certificates and keys now exist in %q", config.cert_dir(ctx.cfg.cluster))
  tree.write(ctx, "sa")
end

function M.kubeconfigs(ctx)
  local names = { "admin", "controller-manager", "scheduler" }
  kubeconfig.prepare(ctx, names)
  for _, name in ipairs(names) do kubeconfig.write(ctx, name) end
end

function M.manifests(ctx)
  for _, component in ipairs { "kube-apiserver", "kube-controller-manager", "kube-scheduler" } do
    manifests.create_logged(ctx, component)
  end
end

return M
