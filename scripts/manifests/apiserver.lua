-- The kube-apiserver static Pod (kubeadm controlplane.GetStaticPodSpecs / getAPIServerCommand).
local images = require "config.images"
local args = require "kube.args"
local pod = require "manifests.pod"
local C = require "config.constants"
local nodeview = require "node.view"
local log = require "framework.log"
local net = require "config.net"

local M = {}

local VALID_AUTHZ = { AlwaysAllow = true, AlwaysDeny = true, ABAC = true, Webhook = true, RBAC = true, Node = true }

-- kubeadm's getAuthzModes: the user's modes filtered to valid ones, else Node,RBAC.
local function authz_modes(user)
  if user and user ~= "" then
    local modes = {}
    for m in user:gmatch("[^,]+") do
      if VALID_AUTHZ[m] then modes[#modes + 1] = m
      else log.warn("ignoring unknown kube-apiserver authorization-mode %q", m) end
    end
    if #modes > 0 then return table.concat(modes, ",") end
  end
  return "Node,RBAC"
end

-- Directories holding external etcd certificates that no standard mount covers (etcd-certs-N).
local function etcd_cert_mounts(ext, cert_dir)
  local dirs, seen = {}, {}
  for _, f in ipairs { ext.caFile, ext.certFile, ext.keyFile } do
    if f and f ~= "" then
      local d = f:match("^(.*)/[^/]*$") or "."
      if d == "" then d = "/" end
      local covered = d == "." or d:sub(1, #"/etc/ssl/certs") == "/etc/ssl/certs" or d:sub(1, #cert_dir) == cert_dir
      for _, ca in ipairs(pod.CA_CERT_DIRS) do
        if d:sub(1, #ca) == ca then covered = true end
      end
      if not covered and not seen[d] then seen[d] = true; dirs[#dirs + 1] = d end
    end
  end
  table.sort(dirs)
  local out = {}
  for i, d in ipairs(dirs) do
    out[#out + 1] = pod.mount(("etcd-certs-%d"):format(i - 1), d, d, true, "DirectoryOrCreate")
  end
  return out
end

function M.command(ctx)
  local cl = ctx.cfg.cluster
  local cert = cl.certificatesDir or C.certificates_dir
  local adv = nodeview.advertise_address(ctx)
  local port = nodeview.bind_port(ctx)
  local extra = cl.apiServer and cl.apiServer.extraArgs
  local d = {
    ["advertise-address"] = adv,
    ["allow-privileged"] = "true",
    ["client-ca-file"] = cert .. "/ca.crt",
    ["enable-admission-plugins"] = "NodeRestriction",
    ["enable-bootstrap-token-auth"] = "true",
    ["kubelet-client-certificate"] = cert .. "/apiserver-kubelet-client.crt",
    ["kubelet-client-key"] = cert .. "/apiserver-kubelet-client.key",
    ["kubelet-preferred-address-types"] = "InternalIP,ExternalIP,Hostname",
    ["proxy-client-cert-file"] = cert .. "/front-proxy-client.crt",
    ["proxy-client-key-file"] = cert .. "/front-proxy-client.key",
    ["requestheader-allowed-names"] = "front-proxy-client",
    ["requestheader-client-ca-file"] = cert .. "/front-proxy-ca.crt",
    ["requestheader-extra-headers-prefix"] = "X-Remote-Extra-",
    ["requestheader-group-headers"] = "X-Remote-Group",
    ["requestheader-username-headers"] = "X-Remote-User",
    ["secure-port"] = tostring(port),
    ["service-account-issuer"] = "https://kubernetes.default.svc." .. (cl.networking.dnsDomain or C.dns_domain),
    ["service-account-key-file"] = cert .. "/sa.pub",
    ["service-account-signing-key-file"] = cert .. "/sa.key",
    ["service-cluster-ip-range"] = cl.networking.serviceSubnet or C.service_subnet,
    ["tls-cert-file"] = cert .. "/apiserver.crt",
    ["tls-private-key-file"] = cert .. "/apiserver.key",
  }
  if not args.get(extra, "authorization-config") then
    d["authorization-mode"] = authz_modes(args.get(extra, "authorization-mode"))
  end
  local ext = cl.etcd and cl.etcd.external
  if ext then
    d["etcd-servers"] = table.concat(ext.endpoints or {}, ",")
    if ext.caFile and ext.caFile ~= "" then d["etcd-cafile"] = ext.caFile end
    if ext.certFile and ext.certFile ~= "" and ext.keyFile and ext.keyFile ~= "" then
      d["etcd-certfile"], d["etcd-keyfile"] = ext.certFile, ext.keyFile
    end
  else
    local loc = cl.etcd and cl.etcd["local"] or {}
    local urls = args.get(loc.extraArgs, "advertise-client-urls")
    d["etcd-servers"] = urls or net.etcd_client_url(pod.loopback(pod.is_ipv6(adv)))
    d["etcd-cafile"] = cert .. "/etcd/ca.crt"
    d["etcd-certfile"] = cert .. "/apiserver-etcd-client.crt"
    d["etcd-keyfile"] = cert .. "/apiserver-etcd-client.key"
  end
  -- The filtered authorization-mode replaces the user's raw value.
  local filtered = {}
  for _, a in ipairs(extra or {}) do
    if a.name == "authorization-mode" and d["authorization-mode"] then
      filtered[#filtered + 1] = { name = a.name, value = d["authorization-mode"] }
    else
      filtered[#filtered + 1] = a
    end
  end
  local cmd = args.build(d, filtered)
  table.insert(cmd, 1, "kube-apiserver")
  return cmd
end

-- The probe host: the advertise address, loopback when it is unspecified.
function M.probe_host(adv)
  local cls = net.classify(adv)
  if cls == "unspecified" then return pod.loopback(pod.is_ipv6(adv)) end
  return adv
end

function M.build(ctx)
  local cl = ctx.cfg.cluster
  local cert = cl.certificatesDir or C.certificates_dir
  local adv = nodeview.advertise_address(ctx)
  local port = nodeview.bind_port(ctx)
  local host = M.probe_host(adv)
  local mounts = pod.ca_mounts()
  mounts[#mounts + 1] = pod.mount("k8s-certs", cert, cert, true, "DirectoryOrCreate")
  if cl.etcd and cl.etcd.external then
    for _, m in ipairs(etcd_cert_mounts(cl.etcd.external, cert)) do mounts[#mounts + 1] = m end
  end
  for _, m in ipairs(pod.extra_mounts(cl.apiServer and cl.apiServer.extraVolumes)) do mounts[#mounts + 1] = m end
  local secs = pod.health_check_seconds(ctx)
  return pod.build {
    name = "kube-apiserver",
    image = images.component(cl, "kube-apiserver"),
    command = M.command(ctx),
    mounts = mounts,
    port = port,
    cpu = "250m",
    probes = {
      liveness = pod.probe("liveness", host, "/livez", "HTTPS"),
      readiness = pod.probe("readiness", host, "/readyz", "HTTPS"),
      startup = pod.probe("startup", host, "/livez", "HTTPS", secs),
    },
    annotations = { ["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] = net.join_host_port(adv, port) },
    env = pod.env(cl.apiServer and cl.apiServer.extraEnvs),
  }
end

return M
