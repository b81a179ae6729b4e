-- /var/lib/kubelet/config.yaml: the KubeletConfiguration kubeadm writes. The user's document (from
-- --config) or nothing, over the zero values kubeadm's serializer prints, then kubeadm's defaults
-- for what is unset (componentconfigs/kubelet.go Default): staticPodPath, clusterDomain, clusterDNS
-- (the 10th address of the service CIDR), x509 client CA, anonymous auth off, webhook authn/authz,
-- healthz on 127.0.0.1:10248, cgroupDriver systemd, and rotateCertificates always true.
local yaml = require "moonadm.yaml"
local cnet = require "config.net"
local C = require "config.constants"
local util = require "framework.util"
local log = require "framework.log"
local patches = require "manifests.patches"

local M = {}

M.PATH = "/var/lib/kubelet/config.yaml"
M.DIR = "/var/lib/kubelet"

local arr = yaml.array

-- What kubeadm's output contains for fields nobody set (Go zero values that are not omitempty).
local function zero()
  return {
    apiVersion = C.kubelet_api_version,
    kind = "KubeletConfiguration",
    authentication = { anonymous = {}, webhook = { cacheTTL = "0s" }, x509 = {} },
    authorization = { webhook = { cacheAuthorizedTTL = "0s", cacheUnauthorizedTTL = "0s" } },
    containerRuntimeEndpoint = "",
    cpuManagerReconcilePeriod = "0s",
    crashLoopBackOff = {},
    evictionPressureTransitionPeriod = "0s",
    fileCheckFrequency = "0s",
    httpCheckFrequency = "0s",
    imageMaximumGCAge = "0s",
    imageMinimumGCAge = "0s",
    logging = { flushFrequency = 0, options = { json = { infoBufferSize = "0" }, text = { infoBufferSize = "0" } },
      verbosity = 0 },
    memorySwap = {},
    nodeStatusReportFrequency = "0s",
    nodeStatusUpdateFrequency = "0s",
    runtimeRequestTimeout = "0s",
    shutdownGracePeriod = "0s",
    shutdownGracePeriodCriticalPods = "0s",
    streamingConnectionIdleTimeout = "0s",
    syncFrequency = "0s",
    volumeStatsAggPeriod = "0s",
  }
end

local function overlay(base, top) return util.overlay(base, top, yaml.null) end

local function format_ip(fam, b)
  if fam == 4 then return table.concat(b, ".", 1, 4) end
  local w = {}
  for i = 1, 8 do w[i] = b[2 * i - 1] * 256 + b[2 * i] end
  -- longest run of zero words (length >= 2) becomes "::", as Go prints
  local best, bestlen, i = nil, 1, 1
  while i <= 8 do
    if w[i] == 0 then
      local j = i
      while j <= 8 and w[j] == 0 do j = j + 1 end
      if j - i > bestlen then best, bestlen = i, j - i end
      i = j
    else
      i = i + 1
    end
  end
  local function hex(from, to)
    local t = {}
    for k = from, to do t[#t + 1] = ("%x"):format(w[k]) end
    return table.concat(t, ":")
  end
  if not best then return hex(1, 8) end
  return hex(1, best - 1) .. "::" .. hex(best + bestlen, 8)
end

-- The n-th address of a CIDR (kubeadm's GetDNSIP: the 10th of the first service subnet).
function M.nth_ip(cidr, n)
  cidr = cidr:match("^[^,]+")
  local fam, b, bits = cnet.parse_cidr(cidr)
  if not fam then return nil, ("invalid service subnet %q"):format(cidr) end
  local bytes = {}
  for i, v in ipairs(b) do
    local keep = math.max(0, math.min(8, bits - (i - 1) * 8))
    bytes[i] = v & ((0xff << (8 - keep)) & 0xff)
  end
  local carry = n
  for i = #bytes, 1, -1 do
    local s = bytes[i] + carry
    bytes[i], carry = s % 256, s // 256
  end
  return format_ip(fam, bytes)
end

-- The KubeletConfiguration table for a cluster (before patches and the instance config).
function M.build(cluster, user)
  local cfg = overlay(zero(), user or {})
  cfg.apiVersion, cfg.kind = C.kubelet_api_version, "KubeletConfiguration"
  local function empty(v) return v == nil or v == "" end
  if empty(cfg.staticPodPath) then cfg.staticPodPath = "/etc/kubernetes/manifests" end
  local net = cluster.networking or {}
  if empty(cfg.clusterDomain) then cfg.clusterDomain = net.dnsDomain or C.dns_domain end
  if not cfg.clusterDNS or #cfg.clusterDNS == 0 then
    local ip, err = M.nth_ip(net.serviceSubnet or C.service_subnet, 10)
    if not ip then error("kubelet configuration: " .. err, 0) end
    cfg.clusterDNS = arr { ip }
  end
  local authn = cfg.authentication
  if empty(authn.x509.clientCAFile) then
    authn.x509.clientCAFile = (cluster.certificatesDir or C.certificates_dir) .. "/ca.crt"
  end
  if authn.anonymous.enabled == nil then authn.anonymous.enabled = false end
  if authn.webhook.enabled == nil then authn.webhook.enabled = true end
  if empty(cfg.authorization.mode) then cfg.authorization.mode = "Webhook" end
  if empty(cfg.healthzBindAddress) then cfg.healthzBindAddress = "127.0.0.1" end
  if cfg.healthzPort == nil then cfg.healthzPort = 10248 end
  if empty(cfg.cgroupDriver) then cfg.cgroupDriver = "systemd" end
  if cfg.rotateCertificates == false then
    log.warn("kubelet configuration: rotateCertificates=false is not supported by kubeadm; setting it to true")
  end
  cfg.rotateCertificates = true
  return cfg
end

-- The instance config (NodeLocalCRISocket): one line, as kubeadm writes it.
M.INSTANCE_PATH = "/var/lib/kubelet/instance-config.yaml"
function M.instance_text(socket)
  return ("containerRuntimeEndpoint: %q\n"):format(socket)
end

-- The full config.yaml text: defaults, then (NodeLocalCRISocket) the instance config as a strategic
-- patch, then the user's kubeletconfiguration patches — which therefore win (the seed's rule).
function M.render(ctx, socket)
  local cfg = M.build(ctx.cfg.cluster, ctx.cfg.kubelet)
  if ctx:gate("NodeLocalCRISocket") then
    cfg = patches.strategic(cfg, { containerRuntimeEndpoint = socket }, "plain")
  end
  cfg = patches.apply_for(ctx, "kubeletconfiguration", cfg)
  return yaml.encode(cfg), cfg
end

return M
