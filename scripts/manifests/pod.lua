-- The static Pod skeleton every kubeadm control-plane manifest shares (kubeadm's
-- staticpodutil.ComponentPod / ComponentProbe / VolumeMapToSlice): labels, hostNetwork,
-- priority, seccomp, probes on the named port "probe-port", volumes sorted by name, env.
local yaml = require "moonadm.yaml"
local fs = require "moonadm.fs"
local config = require "config"
local cnet = require "config.net"
local C = require "config.constants"
local core = require "moonadm.core"

local M = {}

M.MANIFESTS_DIR = "/etc/kubernetes/manifests"
M.KUBERNETES_DIR = "/etc/kubernetes"
M.PRIORITY = 2000001000
M.PRIORITY_CLASS = "system-node-critical"

local arr = yaml.array

function M.is_ipv6(ip)
  return cnet.parse_ip(ip) == 6
end

function M.loopback(ipv6)
  return ipv6 and "::1" or "127.0.0.1"
end

-- A probe as kubeadm's staticpodutil builds it. kind: "liveness"|"readiness"|"startup".
function M.probe(kind, host, path, scheme, startup_seconds)
  local p = { httpGet = { host = host, path = path, port = "probe-port", scheme = scheme },
    timeoutSeconds = 15 }
  if kind == "liveness" then
    p.initialDelaySeconds, p.periodSeconds, p.failureThreshold = 10, 10, 8
  elseif kind == "readiness" then
    p.periodSeconds, p.failureThreshold = 1, 3
  else
    p.initialDelaySeconds, p.periodSeconds = 10, 10
    p.failureThreshold = math.ceil((startup_seconds or 240) / 10)
  end
  return p
end

-- Seconds of timeouts.controlPlaneComponentHealthCheck (the startup probe's budget).
function M.health_check_seconds(ctx)
  local doc = config.node_document(ctx.cfg)
  local t = doc.timeouts and doc.timeouts.controlPlaneComponentHealthCheck or C.timeouts.controlPlaneComponentHealthCheck
  return config.duration_seconds(t) or 240
end

-- A host path mount: {name, host, mount, ro, type}.
function M.mount(name, host, mount, ro, ptype)
  return { name = name, host = host, mount = mount or host, ro = ro or false, type = ptype }
end

-- Volumes and mounts from a list of mounts (kubeadm's map keyed by name: a later one with the same
-- name replaces an earlier one), sorted by name.
function M.volumes(mounts)
  local by, names = {}, {}
  for _, m in ipairs(mounts) do
    if not by[m.name] then names[#names + 1] = m.name end
    by[m.name] = m
  end
  table.sort(names)
  local vols, vms = arr {}, arr {}
  for _, n in ipairs(names) do
    local m = by[n]
    -- kubeadm always sets the type: an extraVolume without pathType is written `type: ""`
    local hp = { path = m.host, type = m.type or "" }
    vols[#vols + 1] = { name = n, hostPath = hp }
    local vm = { name = n, mountPath = m.mount }
    if m.ro then vm.readOnly = true end
    vms[#vms + 1] = vm
  end
  return vols, vms
end

-- The user's extraVolumes (v1beta4 HostPathMount list) as mounts.
function M.extra_mounts(list)
  local out = {}
  for _, v in ipairs(list or {}) do
    out[#out + 1] = M.mount(v.name, v.hostPath, v.mountPath, v.readOnly, v.pathType)
  end
  return out
end

-- The CA certificate dirs kubeadm mounts into kube-apiserver and kube-controller-manager when the
-- host has them (checked under the root: the node's view, not the machine running the tests).
M.CA_CERT_DIRS = { "/etc/pki/ca-trust", "/etc/pki/tls/certs", "/etc/ca-certificates",
  "/usr/share/ca-certificates", "/usr/local/share/ca-certificates" }

function M.ca_mounts()
  local out = { M.mount("ca-certs", "/etc/ssl/certs", nil, true, "DirectoryOrCreate") }
  for _, d in ipairs(M.CA_CERT_DIRS) do
    local st = fs.stat(d)
    if st and st.type == "directory" then
      out[#out + 1] = M.mount(d:sub(2):gsub("/", "-"), d, nil, true, "DirectoryOrCreate")
    end
  end
  return out
end

-- Proxy variables of this process (kubeadm's GetProxyEnvVars) merged with extraEnvs: an extra env
-- with the same name replaces the proxy one. Returns a list or nil when empty. no_proxy_vars: only
-- extraEnvs (etcd: kubeadm's GetEtcdPodSpec copies no proxy variables; the reference kubeadm v1.35.4).
function M.env(extra, no_proxy_vars)
  local env, idx = {}, {}
  local names = {}
  -- every variable whose name ends in "_proxy" (any case) with a non-empty value, sorted by name
  -- (kubeadm's GetProxyEnvVars: ALL_PROXY, FTP_PROXY... too; checked against the reference kubeadm)
  local values = {}
  for _, kv in ipairs(no_proxy_vars and {} or core.environ()) do
    local n, v = kv:match("^([^=]*)=(.*)$")
    if n and v ~= "" and n:lower():sub(-6) == "_proxy" and not values[n] then
      names[#names + 1] = n
      values[n] = v
    end
  end
  table.sort(names)
  for _, n in ipairs(names) do
    env[#env + 1] = { name = n, value = values[n] }
    idx[n] = #env
  end
  for _, e in ipairs(extra or {}) do
    local item = {}
    for k, v in pairs(e) do item[k] = v end
    if idx[e.name] then env[idx[e.name]] = item else env[#env + 1] = item; idx[e.name] = #env end
  end
  if #env == 0 then return nil end
  return arr(env)
end

-- The Pod. spec: {name, image, command (list), mounts, probes = {liveness=, readiness=, startup=},
-- port, cpu, memory, annotations, env}.
function M.build(spec)
  local vols, vms = M.volumes(spec.mounts)
  local container = {
    name = spec.name,
    image = spec.image,
    imagePullPolicy = spec.pull_policy or C.image_pull_policy,
    command = arr(spec.command),
    ports = arr { { containerPort = spec.port, name = "probe-port", protocol = "TCP" } },
    resources = { requests = { cpu = spec.cpu, memory = spec.memory } },
    livenessProbe = spec.probes.liveness,
    readinessProbe = spec.probes.readiness,
    startupProbe = spec.probes.startup,
    env = spec.env,
  }
  if spec.mount_order then
    -- kubeadm lists etcd's mounts in its own order (data, then certs), not sorted
    local by = {}
    for _, vm in ipairs(vms) do by[vm.name] = vm end
    vms = arr {}
    for _, n in ipairs(spec.mount_order) do vms[#vms + 1] = by[n] end
  end
  if #vms > 0 then container.volumeMounts = vms end
  local metadata = {
    name = spec.name, namespace = "kube-system",
    labels = { component = spec.name, tier = "control-plane" },
    annotations = spec.annotations,
  }
  local pod = {
    apiVersion = "v1", kind = "Pod", metadata = metadata,
    spec = {
      containers = arr { container },
      hostNetwork = true,
      priority = M.PRIORITY,
      priorityClassName = M.PRIORITY_CLASS,
      securityContext = { seccompProfile = { type = "RuntimeDefault" } },
    },
    status = {},
  }
  if #vols > 0 then pod.spec.volumes = vols end
  return pod
end

return M
