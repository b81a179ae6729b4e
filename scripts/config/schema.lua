-- The kubeadm.k8s.io/v1beta4 kinds as data: one description that decoding, unknown-field
-- detection, defaulting and validation all walk.
--
-- A type is a table with `kind`:
--   scalar  {base = "string"|"int"|"bool", check = name of a checks.lua validator}
--   list    {elem = type}            map {elem = type}       passthrough (any YAML)
--   object  {name, fields = {field = spec}}
-- A field spec is {type, default = value, struct = true, required = true}: `struct` fields are Go value
-- structs (always present after defaulting, printed as {} when empty); other objects are
-- Go pointers (absent unless given).
local C <const> = require "config.constants"
local releases <const> = require "config.releases"

local schema = {}

local function scalar(base, check) return { kind = "scalar", base = base, check = check } end
local function list(elem) return { kind = "list", elem = elem } end
local function map(elem) return { kind = "map", elem = elem } end

local T <const> = {
  string = scalar("string"),
  int = scalar("int"),
  bool = scalar("bool"),
  passthrough = { kind = "passthrough" },
  duration = scalar("string", "duration"),
  cidrs = scalar("string", "cidrs"),
  service_cidrs = scalar("string", "service_cidrs"),
  advertise_ip = scalar("string", "advertise_ip"),
  port = scalar("int", "port"),
  endpoint = scalar("string", "endpoint"),
  endpoint_with_port = scalar("string", "endpoint_with_port"),
  dns_domain = scalar("string", "dns_domain"),
  node_name = scalar("string", "node_name"),
  cri_socket = scalar("string", "cri_socket"),
  token = scalar("string", "token"),
  token_usage = scalar("string", "token_usage"),
  token_group = scalar("string", "token_group"),
  timestamp = scalar("string", "timestamp"),
  san = scalar("string", "san"),
  abs_path = scalar("string", "abs_path"),
  url = scalar("string", "url"),
  version = scalar("string", "version"),
  ca_hash = scalar("string", "ca_hash"),
  certificate_key = scalar("string", "certificate_key"),
  pull_policy = scalar("string", "pull_policy"),
  taint_effect = scalar("string", "taint_effect"),
  path_type = scalar("string", "path_type"),
  encryption_algorithm = scalar("string", "encryption_algorithm"),
  unmount_flag = scalar("string", "unmount_flag"),
  feature_gates = map(scalar("bool", "feature_gate")),
}
schema.types = T
schema.list, schema.map, schema.scalar = list, map, scalar

-- Build an object type from a table of fields, which it takes over: a field given as a bare type
-- becomes {type} in place (a copy rehashed as it grew, every start).
local function object(name, fields)
  for k, v in pairs(fields) do
    if v.kind then fields[k] = { v } end
  end
  return { kind = "object", name = name, fields = fields }
end
schema.object = object

local function struct(ty, extra)
  local spec = { ty, struct = true }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return spec
end

-- Shared sub-objects
local required <const> = { T.string, required = true }
local Arg = object("Arg", { name = required, value = T.string })
local EnvVar = object("EnvVar", { name = required, value = T.string, valueFrom = T.passthrough })
local HostPathMount = object("HostPathMount", {
  name = required, hostPath = required, mountPath = required,
  readOnly = T.bool, pathType = T.path_type,
})
T.args = list(Arg)

local Taint = object("Taint", {
  key = required, value = T.string, effect = { T.taint_effect, required = true }, timeAdded = T.timestamp,
})

local BootstrapToken = object("BootstrapToken", {
  token = T.token,
  description = T.string,
  ttl = { T.duration, default = C.token_ttl },
  expires = T.timestamp,
  usages = { list(T.token_usage), default = C.token_usages },
  groups = { list(T.token_group), default = C.token_groups },
})

local APIEndpoint = object("APIEndpoint", {
  advertiseAddress = T.advertise_ip,
  bindPort = { T.port, default = C.api_bind_port },
})

local NodeRegistration = object("NodeRegistrationOptions", {
  name = T.node_name,
  criSocket = T.cri_socket,
  taints = list(Taint), -- nil (control-plane taint) and [] (no taint) differ
  kubeletExtraArgs = T.args,
  ignorePreflightErrors = list(T.string),
  imagePullPolicy = { T.pull_policy, default = C.image_pull_policy },
  imagePullSerial = { T.bool, default = true },
})

local Patches = object("Patches", { directory = T.string })

local timeout_fields = {}
for k, v in pairs(C.timeouts) do timeout_fields[k] = { T.duration, default = v } end
local Timeouts = object("Timeouts", timeout_fields)

local ControlPlaneComponent = object("ControlPlaneComponent", {
  extraArgs = T.args, extraVolumes = list(HostPathMount), extraEnvs = list(EnvVar),
})
local APIServer = object("APIServer", {
  extraArgs = T.args, extraVolumes = list(HostPathMount), extraEnvs = list(EnvVar),
  certSANs = list(T.san),
})

local LocalEtcd = object("LocalEtcd", {
  imageRepository = T.string, imageTag = T.string,
  dataDir = { T.abs_path, default = C.etcd_data_dir },
  extraArgs = T.args, extraEnvs = list(EnvVar),
  serverCertSANs = list(T.san), peerCertSANs = list(T.san),
})
local ExternalEtcd = object("ExternalEtcd", {
  endpoints = list(T.url), caFile = T.abs_path, certFile = T.abs_path, keyFile = T.abs_path,
})

local meta = { apiVersion = T.string, kind = T.string }
local function kind(name, fields)
  for k, v in pairs(meta) do fields[k] = v end
  return object(name, fields)
end

schema.InitConfiguration = kind("InitConfiguration", {
  bootstrapTokens = list(BootstrapToken),
  dryRun = T.bool,
  nodeRegistration = struct(NodeRegistration),
  localAPIEndpoint = struct(APIEndpoint),
  certificateKey = T.certificate_key,
  skipPhases = list(T.string),
  patches = Patches,
  timeouts = struct(Timeouts), -- a Go pointer, but defaulting always creates it
})

schema.ClusterConfiguration = kind("ClusterConfiguration", {
  etcd = struct(object("Etcd", { ["local"] = LocalEtcd, external = ExternalEtcd })),
  networking = struct(object("Networking", {
    serviceSubnet = { T.service_cidrs, default = C.service_subnet },
    podSubnet = T.cidrs,
    dnsDomain = { T.dns_domain, default = C.dns_domain },
  })),
  kubernetesVersion = { T.version, default = releases.DEFAULT },
  controlPlaneEndpoint = T.endpoint,
  apiServer = struct(APIServer),
  controllerManager = struct(ControlPlaneComponent),
  scheduler = struct(ControlPlaneComponent),
  dns = struct(object("DNS", { imageRepository = T.string, imageTag = T.string, disabled = T.bool })),
  proxy = struct(object("Proxy", { disabled = T.bool })),
  certificatesDir = { T.abs_path, default = C.certificates_dir },
  imageRepository = { T.string, default = C.image_repository },
  featureGates = T.feature_gates,
  clusterName = { T.string, default = C.cluster_name },
  encryptionAlgorithm = { T.encryption_algorithm, default = C.encryption_algorithm },
  certificateValidityPeriod = { T.duration, default = C.certificate_validity },
  caCertificateValidityPeriod = { T.duration, default = C.ca_certificate_validity },
})

local BootstrapTokenDiscovery = object("BootstrapTokenDiscovery", {
  token = T.token,
  apiServerEndpoint = T.endpoint_with_port,
  caCertHashes = list(T.ca_hash),
  unsafeSkipCAVerification = T.bool,
})

schema.JoinConfiguration = kind("JoinConfiguration", {
  dryRun = T.bool,
  nodeRegistration = struct(NodeRegistration),
  caCertPath = { T.abs_path, default = C.ca_cert_path },
  discovery = struct(object("Discovery", {
    bootstrapToken = BootstrapTokenDiscovery,
    file = object("FileDiscovery", { kubeConfigPath = required }),
    tlsBootstrapToken = T.token,
  })),
  controlPlane = object("JoinControlPlane", {
    localAPIEndpoint = struct(APIEndpoint),
    certificateKey = T.certificate_key,
  }),
  skipPhases = list(T.string),
  patches = Patches,
  timeouts = struct(Timeouts),
})

schema.ResetConfiguration = kind("ResetConfiguration", {
  cleanupTmpDir = T.bool,
  certificatesDir = { T.abs_path, default = C.certificates_dir },
  criSocket = T.cri_socket,
  dryRun = T.bool,
  force = T.bool,
  ignorePreflightErrors = list(T.string),
  skipPhases = list(T.string),
  unmountFlags = list(T.unmount_flag),
  timeouts = struct(Timeouts),
})

schema.UpgradeConfiguration = kind("UpgradeConfiguration", {
  apply = struct(object("UpgradeApplyConfiguration", {
    kubernetesVersion = T.version,
    allowExperimentalUpgrades = T.bool,
    allowRCUpgrades = T.bool,
    certificateRenewal = { T.bool, default = true },
    dryRun = T.bool,
    etcdUpgrade = { T.bool, default = true },
    forceUpgrade = T.bool,
    ignorePreflightErrors = list(T.string),
    patches = Patches,
    printConfig = T.bool,
    skipPhases = list(T.string),
    imagePullPolicy = { T.pull_policy, default = C.image_pull_policy },
    imagePullSerial = { T.bool, default = true },
  })),
  diff = struct(object("UpgradeDiffConfiguration", {
    kubernetesVersion = T.version,
    contextLines = T.int,
  })),
  node = struct(object("UpgradeNodeConfiguration", {
    certificateRenewal = { T.bool, default = true },
    dryRun = T.bool,
    etcdUpgrade = { T.bool, default = true },
    ignorePreflightErrors = list(T.string),
    skipPhases = list(T.string),
    patches = Patches,
    imagePullPolicy = { T.pull_policy, default = C.image_pull_policy },
    imagePullSerial = { T.bool, default = true },
  })),
  plan = struct(object("UpgradePlanConfiguration", {
    kubernetesVersion = T.version,
    allowExperimentalUpgrades = T.bool,
    allowRCUpgrades = T.bool,
    dryRun = T.bool,
    etcdUpgrade = { T.bool, default = true },
    ignorePreflightErrors = list(T.string),
    printConfig = T.bool,
  })),
  timeouts = struct(Timeouts),
})

-- The kinds of each apiVersion; component configs pass through undecoded.
schema.kubeadm_kinds = {
  InitConfiguration = "init", ClusterConfiguration = "cluster", JoinConfiguration = "join",
  ResetConfiguration = "reset", UpgradeConfiguration = "upgrade",
}
schema.component_kinds = {
  [C.kubelet_api_version] = { kind = "KubeletConfiguration", slot = "kubelet" },
  [C.kubeproxy_api_version] = { kind = "KubeProxyConfiguration", slot = "kubeproxy" },
}

return schema
