-- The kubeadm.k8s.io/v1beta4 configuration: defaults, files, flags, gates, v1beta3, printing.
local config = require "config"
local yaml = require "moonadm.yaml"

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local good = dir .. "fixtures/config/good/"

local function load_text(text, opts)
  opts = opts or {}
  opts.text, opts.filename = text, opts.filename or "kubeadm.yaml"
  opts.kind = opts.kind or "init"
  if opts.no_host_defaults == nil then opts.no_host_defaults = true end
  return config.load(opts)
end

local function has(list, needle)
  for _, s in ipairs(list or {}) do
    if s:find(needle, 1, true) then return s end
  end
  return nil
end

describe("config releases", function()
  local releases = require "config.releases"
  it("pins each minor's release and images as that minor's kubeadm does, in one place", function()
    assert.equal("v1.35.4", releases.DEFAULT)
    assert.same({ "v1.35", "v1.36", "v1.37" }, releases.supported())
    local function pins(v) local r = assert(releases.of(v)) return { r.latest, r.etcd, r.pause, r.coredns } end
    assert.same({ "v1.35.4", "3.6.6-0", "3.10.1", "v1.13.1" }, pins("v1.35.0"))
    assert.same({ "v1.36.3", "3.6.8-0", "3.10.2", "v1.14.2" }, pins("v1.36.3"))
    assert.same({ "v1.37.2", "3.7.0-0", "3.10.2", "v1.14.6" }, pins("v1.37.9"))
    assert.equal("registry.k8s.io", config.constants.image_repository)
  end)

  it("gives a control plane of N-1 the oldest minor's kubeadm, and names the supported minors otherwise", function()
    local r34 = assert(releases.of("v1.34.2"))
    assert.equal(34, r34.minor)
    assert.equal("v1.35.4", r34.latest)
    assert.equal("3.6.6-0", releases.etcd_tag("v1.34.2"))
    local r, err = releases.of("v1.38.0")
    assert.is_nil(r)
    assert.matches("Kubernetes v1%.38%.0 is not supported: moonadm makes clusters of v1%.35, v1%.36, v1%.37", err)
    assert.is_nil((releases.of("v1.33.9")))
    -- kubeadm v1.37 has no SupportedEtcdVersion entry for 37: the nearest entry's etcd
    assert.equal("3.7.0-0", releases.etcd_tag("v1.37.2"))
  end)
end)

describe("config.load without a file", function()
  local cfg, err
  setup(function() cfg, err = config.load { kind = "init", no_host_defaults = true } end)

  it("gives kubeadm v1.35's defaults, with the pinned version", function()
    assert.is_nil(err)
    local c = cfg.cluster
    assert.equal("kubeadm.k8s.io/v1beta4", c.apiVersion)
    assert.equal("ClusterConfiguration", c.kind)
    assert.equal("v1.35.4", c.kubernetesVersion)
    assert.equal("10.96.0.0/12", c.networking.serviceSubnet)
    assert.equal("cluster.local", c.networking.dnsDomain)
    assert.is_nil(c.networking.podSubnet)
    assert.equal("/etc/kubernetes/pki", c.certificatesDir)
    assert.equal("registry.k8s.io", c.imageRepository)
    assert.equal("kubernetes", c.clusterName)
    assert.equal("RSA-2048", c.encryptionAlgorithm)
    assert.equal("8760h0m0s", c.certificateValidityPeriod)
    assert.equal("87600h0m0s", c.caCertificateValidityPeriod)
    assert.same({ dataDir = "/var/lib/etcd" }, c.etcd["local"])
    assert.is_nil(c.etcd.external)
    assert.same({}, c.apiServer)
    assert.same({}, c.dns)
  end)

  it("defaults the InitConfiguration: one token, port, pull policy, timeouts", function()
    local i = cfg.init
    assert.equal("InitConfiguration", i.kind)
    assert.equal(1, #i.bootstrapTokens)
    local t = i.bootstrapTokens[1]
    assert.is_nil(t.token) -- generated at run time
    assert.equal("24h0m0s", t.ttl)
    assert.same({ "signing", "authentication" }, t.usages)
    assert.same({ "system:bootstrappers:kubeadm:default-node-token" }, t.groups)
    assert.equal(6443, i.localAPIEndpoint.bindPort)
    assert.is_nil(i.localAPIEndpoint.advertiseAddress) -- detected by a later phase
    assert.equal("IfNotPresent", i.nodeRegistration.imagePullPolicy)
    assert.is_true(i.nodeRegistration.imagePullSerial)
    assert.is_nil(i.nodeRegistration.taints)
    assert.same({
      controlPlaneComponentHealthCheck = "4m0s", kubeletHealthCheck = "4m0s", kubernetesAPICall = "1m0s",
      etcdAPICall = "2m0s", tlsBootstrap = "5m0s", discovery = "5m0s", upgradeManifests = "5m0s",
    }, i.timeouts)
  end)

  it("gives the default feature gates and no warnings", function()
    assert.same({ ControlPlaneKubeletLocalMode = true, NodeLocalCRISocket = true, PublicKeysECDSA = false }, cfg.gates)
    assert.same({}, cfg.warnings)
  end)

  it("defaults the node name to the lowercased host name", function()
    local name = assert(config.node_name_default())
    assert.equal(name:lower(), name)
    local c = assert(config.load { kind = "init" })
    assert.equal(name, c.init.nodeRegistration.name)
  end)

  it("defaults reset and upgrade", function()
    local r = assert(config.load { kind = "reset" })
    assert.equal("/etc/kubernetes/pki", r.reset.certificatesDir)
    assert.equal("5m0s", r.reset.timeouts.discovery)
    local u = assert(config.load { kind = "upgrade" })
    assert.is_true(u.upgrade.apply.etcdUpgrade)
    assert.is_true(u.upgrade.apply.certificateRenewal)
    assert.is_true(u.upgrade.node.imagePullSerial)
    assert.is_true(u.upgrade.plan.etcdUpgrade)
    assert.equal("IfNotPresent", u.upgrade.node.imagePullPolicy)
  end)
end)

describe("config.load of a full v1beta4 file", function()
  local cfg, err
  setup(function() cfg, err = config.load { files = { good .. "full.yaml" }, kind = "init" } end)

  it("loads every kind", function()
    assert.is_nil(err)
    assert.equal("ec2-10-100-0-1", cfg.init.nodeRegistration.name)
    assert.equal("10.100.0.1", cfg.init.localAPIEndpoint.advertiseAddress)
    assert.equal(2, #cfg.init.bootstrapTokens)
    assert.equal("example-cluster", cfg.cluster.clusterName)
    assert.equal("ECDSA-P256", cfg.cluster.encryptionAlgorithm)
    assert.is_true(cfg.cluster.dns.disabled)
    assert.is_true(cfg.cluster.proxy.disabled)
  end)

  it("normalizes durations, SANs and the ignored preflight checks as kubeadm does", function()
    assert.equal("24h0m0s", cfg.init.bootstrapTokens[1].ttl)
    assert.equal("1m0s", cfg.init.timeouts.controlPlaneComponentHealthCheck)
    assert.equal("40s", cfg.init.timeouts.kubernetesAPICall)
    assert.equal("4m0s", cfg.init.timeouts.kubeletHealthCheck) -- defaulted
    assert.equal("ec2-10-100-0-1.compute-1.amazonaws.com", cfg.cluster.apiServer.certSANs[2])
    assert.same({ "isprivilegeduser" }, cfg.init.nodeRegistration.ignorePreflightErrors)
  end)

  it("keeps args as {name, value} lists, duplicates allowed", function()
    assert.same({ { name = "authorization-mode", value = "Node,RBAC" } }, cfg.cluster.apiServer.extraArgs)
    assert.same({ { name = "v", value = "5" } }, cfg.init.nodeRegistration.kubeletExtraArgs)
  end)

  it("passes component configs through untouched", function()
    assert.equal("systemd", cfg.kubelet.cgroupDriver)
    assert.equal(1, cfg.kubelet.someFutureField.a)
    assert.equal("KubeletConfiguration", cfg.kubelet.kind)
    assert.equal("ipvs", cfg.kubeproxy.mode)
  end)

  it("takes the gates from the ClusterConfiguration", function()
    assert.is_false(cfg.gates.NodeLocalCRISocket)
    assert.is_true(cfg.gates.ControlPlaneKubeletLocalMode)
    assert.is_false(config.feature_gates(cfg.cluster).NodeLocalCRISocket)
  end)

  it("loads the same file for kind=nil (every document)", function()
    local all = assert(config.load { files = { good .. "full.yaml" } })
    assert.equal("example-cluster", all.cluster.clusterName)
    assert.is_nil(all.join)
  end)
end)

describe("unknown fields", function()
  local text = [[
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
networking:
  podSubnt: 10.244.0.0/16
clusterNmae: x
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
kubernetesVersion: v1.35.4
]]

  it("warn with file, line and a did-you-mean, and are dropped", function()
    local cfg = assert(load_text(text))
    assert.truthy(has(cfg.warnings,
      'kubeadm.yaml:4: unknown field "ClusterConfiguration.networking.podSubnt" (did you mean "podSubnet"?)'))
    assert.truthy(has(cfg.warnings,
      'kubeadm.yaml:5: unknown field "ClusterConfiguration.clusterNmae" (did you mean "clusterName"?)'))
    assert.is_nil(cfg.cluster.networking.podSubnt)
    assert.equal("kubernetes", cfg.cluster.clusterName)
  end)

  it("say when a field belongs to the other kind", function()
    local cfg = assert(load_text(text))
    assert.truthy(has(cfg.warnings, 'kubeadm.yaml:9: unknown field "InitConfiguration.kubernetesVersion" '
      .. "(it belongs in ClusterConfiguration)"))
  end)

  it("are errors with strict decoding", function()
    local cfg, err = load_text(text, { strict = true })
    assert.is_nil(cfg)
    assert.truthy(err:find('kubeadm.yaml:4: unknown field "ClusterConfiguration.networking.podSubnt"', 1, true))
    assert.truthy(err:find('kubeadm.yaml:5: unknown field "ClusterConfiguration.clusterNmae"', 1, true))
  end)

  -- issue 18: a suggestion costs an edit distance per known field; 100 000 unknown keys took
  -- `config validate` 108 s when each got one (SECURITY.md)
  it("get a did-you-mean for the first 100 of a load only, every one still warned", function()
    local lines = { "apiVersion: kubeadm.k8s.io/v1beta4", "kind: ClusterConfiguration" }
    for i = 0, 149 do -- clusterNamaa, clusterNamab, ...: each two edits from clusterName
      lines[#lines + 1] = ("clusterNam%s%s: x"):format(string.char(97 + i // 26), string.char(97 + i % 26))
    end
    local cfg = assert(load_text(table.concat(lines, "\n") .. "\n"))
    local unknown, hinted = 0, 0
    for _, w in ipairs(cfg.warnings) do
      if w:find("unknown field", 1, true) then unknown = unknown + 1 end
      if w:find('did you mean "clusterName"', 1, true) then hinted = hinted + 1 end
    end
    assert.equal(150, unknown)
    assert.equal(100, hinted)
  end)
end)

describe("config values", function()
  it("tell taints: [] (no taint) from no taints (the control-plane taint)", function()
    local cfg = assert(load_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"
      .. "nodeRegistration:\n  taints: []\n"))
    assert.equal(0, #cfg.init.nodeRegistration.taints)
    assert.equal(yaml.array_mt, getmetatable(cfg.init.nodeRegistration.taints))
    local cfg2 = assert(load_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"
      .. "nodeRegistration:\n  taints: null\n"))
    assert.is_nil(cfg2.init.nodeRegistration.taints)
  end)

  it("add the unix:// scheme to a bare CRI socket path, with a warning", function()
    local cfg = assert(load_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"
      .. "nodeRegistration:\n  criSocket: /run/containerd/containerd.sock\n"))
    assert.equal("unix:///run/containerd/containerd.sock", cfg.init.nodeRegistration.criSocket)
    assert.truthy(has(cfg.warnings, "kubeadm.yaml:4: InitConfiguration.nodeRegistration.criSocket: usage of CRI "
      .. "endpoints without URL scheme is deprecated"))
  end)

  it("default no local etcd when an external one is given", function()
    local cfg = assert(load_text([[
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
etcd:
  external:
    endpoints: [https://192.0.2.135:2379]
    caFile: /etc/etcd/ca.crt
    certFile: /etc/etcd/client.crt
    keyFile: /etc/etcd/client.key
]]))
    assert.is_nil(cfg.cluster.etcd["local"])
    assert.equal("https://192.0.2.135:2379", cfg.cluster.etcd.external.endpoints[1])
  end)

  it("treat empty strings and 0 as unset, as kubeadm's omitempty does", function()
    local cfg = assert(load_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"
      .. "clusterName: \"\"\nnetworking:\n  serviceSubnet: ''\n---\napiVersion: kubeadm.k8s.io/v1beta4\n"
      .. "kind: InitConfiguration\nlocalAPIEndpoint:\n  bindPort: 0\n"))
    assert.equal("kubernetes", cfg.cluster.clusterName)
    assert.equal("10.96.0.0/12", cfg.cluster.networking.serviceSubnet)
    assert.equal(6443, cfg.init.localAPIEndpoint.bindPort)
  end)

  it("warn about documents the command does not read", function()
    local cfg = assert(load_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n---\n"
      .. "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n"))
    assert.truthy(has(cfg.warnings, "kubeadm.yaml:4: JoinConfiguration is ignored by init"))
    assert.is_nil(cfg.join)
  end)
end)

describe("join configuration", function()
  it("defaults the TLS bootstrap token and turns a file:// URL into a path", function()
    local cfg = assert(load_text([[
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
nodeRegistration:
  name: worker-1
discovery:
  file:
    kubeConfigPath: file:///etc/kubernetes/discovery.conf
]], { kind = "join" }))
    assert.equal("/etc/kubernetes/discovery.conf", cfg.join.discovery.file.kubeConfigPath)
    assert.equal("/etc/kubernetes/pki/ca.crt", cfg.join.caCertPath)
    assert.is_nil(cfg.join.controlPlane)

    local cfg2 = assert(load_text([[
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
nodeRegistration:
  name: cp-2
controlPlane:
  certificateKey: e6a2eb8581237ab72a4f494f30285ec12a9694d750b9785706a83bfcbbbd2204
discovery:
  bootstrapToken:
    token: abcdef.0123456789abcdef
    apiServerEndpoint: lb.example.com:6443
    unsafeSkipCAVerification: true
]], { kind = "join" }))
    assert.equal("abcdef.0123456789abcdef", cfg2.join.discovery.tlsBootstrapToken)
    assert.equal(6443, cfg2.join.controlPlane.localAPIEndpoint.bindPort)
  end)
end)

describe("feature gates", function()
  it("parse the --feature-gates syntax", function()
    assert.same({ NodeLocalCRISocket = false, PublicKeysECDSA = true },
      config.parse_feature_gates("NodeLocalCRISocket=false, PublicKeysECDSA=True"))
    assert.same({}, config.parse_feature_gates(""))
    local g, err = config.parse_feature_gates("NodeLocalCRISocket")
    assert.is_nil(g)
    assert.truthy(err:find("missing bool value", 1, true))
    g, err = config.parse_feature_gates("NodeLocalCRISocket=maybe")
    assert.is_nil(g)
    assert.truthy(err:find('invalid value "maybe"', 1, true))
    g, err = config.parse_feature_gates("EtcdLearnerMode=true")
    assert.is_nil(g)
    assert.truthy(err:find("its behaviour is now always on", 1, true))
    g, err = config.parse_feature_gates("Bogus=true")
    assert.is_nil(g)
    assert.truthy(err:find('unknown feature gate "Bogus"; valid feature gates are: ControlPlaneKubeletLocalMode, '
      .. "NodeLocalCRISocket, PublicKeysECDSA", 1, true))
  end)

  it("give every gate's effective value", function()
    assert.same({ ControlPlaneKubeletLocalMode = true, NodeLocalCRISocket = true, PublicKeysECDSA = false },
      config.feature_gates(nil))
    assert.same({ ControlPlaneKubeletLocalMode = false, NodeLocalCRISocket = true, PublicKeysECDSA = true },
      config.feature_gates { featureGates = { ControlPlaneKubeletLocalMode = false, PublicKeysECDSA = true } })
  end)

  it("accept ControlPlaneKubeletLocalMode=false as a loud moonadm experiment", function()
    local cfg = assert(load_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"
      .. "featureGates:\n  ControlPlaneKubeletLocalMode: false\n"))
    assert.is_false(cfg.gates.ControlPlaneKubeletLocalMode)
    local w = has(cfg.warnings, "kubeadm.yaml:4: ClusterConfiguration.featureGates.ControlPlaneKubeletLocalMode: "
      .. "ControlPlaneKubeletLocalMode=false is a moonadm experiment")
    assert.truthy(w)
    assert.truthy(w:find("kubeadm v1.35 does not accept it", 1, true))
    assert.truthy(w:find("it is never written to the cluster", 1, true))
    -- and it is never written to the cluster
    local up = config.cluster_for_upload(cfg.cluster)
    assert.is_nil(up.featureGates)
    assert.is_false(cfg.cluster.featureGates.ControlPlaneKubeletLocalMode)
  end)

  it("warn that PublicKeysECDSA is deprecated, and make keys ECDSA-P256", function()
    local cfg = assert(config.load { kind = "init", no_host_defaults = true,
      flags = { ["feature-gates"] = "PublicKeysECDSA=true" } })
    assert.is_true(cfg.gates.PublicKeysECDSA)
    assert.truthy(has(cfg.warnings, "--feature-gates: ClusterConfiguration.featureGates.PublicKeysECDSA: feature gate "
      .. "PublicKeysECDSA is deprecated"))
    assert.equal("ECDSA-P256", config.encryption_algorithm(cfg.cluster))
  end)
end)

describe("v1beta3 files", function()
  it("are converted to v1beta4 with a warning", function()
    local cfg = assert(config.load { files = { good .. "v1beta3.yaml" }, kind = "init", no_host_defaults = true })
    assert.equal("kubeadm.k8s.io/v1beta4", cfg.cluster.apiVersion)
    assert.equal("kubeadm.k8s.io/v1beta4", cfg.init.apiVersion)
    assert.truthy(has(cfg.warnings, good .. 'v1beta3.yaml:1: your configuration file uses a deprecated API spec: '
      .. '"kubeadm.k8s.io/v1beta3" (kind: "InitConfiguration")'))
    -- maps become sorted {name, value} lists
    assert.same({ { name = "anonymous-auth", value = "false" }, { name = "audit-log-path", value = "/var/log/audit.log" } },
      cfg.cluster.apiServer.extraArgs)
    assert.same({ { name = "quota-backend-bytes", value = "8589934592" } }, cfg.cluster.etcd["local"].extraArgs)
    assert.same({ { name = "node-labels", value = "role=cp" }, { name = "v", value = "4" } },
      cfg.init.nodeRegistration.kubeletExtraArgs)
    -- apiServer.timeoutForControlPlane moves to the InitConfiguration's timeouts
    assert.is_nil(cfg.cluster.apiServer.timeoutForControlPlane)
    assert.equal("10m0s", cfg.init.timeouts.controlPlaneComponentHealthCheck)
    -- and v1beta4 defaults apply
    assert.equal("RSA-2048", cfg.cluster.encryptionAlgorithm)
  end)

  it("move discovery.timeout to timeouts.discovery", function()
    local cfg = assert(config.load { files = { good .. "v1beta3-join.yaml" }, kind = "join" })
    assert.equal("2m0s", cfg.join.timeouts.discovery)
    assert.is_nil(cfg.join.discovery.timeout)
    assert.same({ "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
      cfg.join.discovery.bootstrapToken.caCertHashes)
  end)

  it("keep file:line for converted values", function()
    local cfg, err = load_text([[
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
apiServer:
  extraArgs:
    "": x
  timeoutForControlPlane: soon
---
apiVersion: kubeadm.k8s.io/v1beta3
kind: InitConfiguration
]])
    assert.is_nil(cfg)
    assert.truthy(err:find('kubeadm.yaml:6: InitConfiguration.timeouts.controlPlaneComponentHealthCheck: "soon" is not '
      .. "a valid duration", 1, true), err)
    assert.truthy(err:find("kubeadm.yaml:5: ClusterConfiguration.apiServer.extraArgs[0].name: field is required", 1, true), err)
  end)

  it("know v1beta3's own fields", function()
    local cfg = assert(load_text("apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\n"
      .. "encryptionAlgorithm: ECDSA-P256\n"))
    assert.truthy(has(cfg.warnings, 'kubeadm.yaml:3: unknown field "ClusterConfiguration.encryptionAlgorithm"'))
  end)
end)

describe("flags", function()
  it("build the configuration without a file", function()
    local cfg = assert(config.load { kind = "init", flags = {
      ["apiserver-advertise-address"] = "192.0.2.140", ["apiserver-bind-port"] = "7443",
      ["control-plane-endpoint"] = "lb.example.com:6443", ["pod-network-cidr"] = "10.244.0.0/16",
      ["service-cidr"] = "10.112.0.0/12", ["service-dns-domain"] = "corp.local", ["node-name"] = "cp-1",
      ["cri-socket"] = "unix:///run/crio/crio.sock", ["kubernetes-version"] = "1.35.2",
      ["feature-gates"] = "NodeLocalCRISocket=false", ["cert-dir"] = "/srv/pki",
      ["image-repository"] = "mirror.example.com/k8s", token = "abcdef.0123456789abcdef", ["token-ttl"] = "2h",
      ["upload-certs"] = true, ["certificate-key"] = ("ab"):rep(32), ["skip-phases"] = "addon/kube-proxy,show-join-command",
      ["ignore-preflight-errors"] = { "Swap", "NumCPU" }, patches = "/etc/patches", ["dry-run"] = true,
      ["apiserver-cert-extra-sans"] = "LB.example.com,192.0.2.230",
    } })
    local i, c = cfg.init, cfg.cluster
    assert.equal("192.0.2.140", i.localAPIEndpoint.advertiseAddress)
    assert.equal(7443, i.localAPIEndpoint.bindPort)
    assert.equal("lb.example.com:6443", c.controlPlaneEndpoint)
    assert.equal("10.244.0.0/16", c.networking.podSubnet)
    assert.equal("10.112.0.0/12", c.networking.serviceSubnet)
    assert.equal("corp.local", c.networking.dnsDomain)
    assert.equal("cp-1", i.nodeRegistration.name)
    assert.equal("unix:///run/crio/crio.sock", i.nodeRegistration.criSocket)
    assert.equal("v1.35.2", c.kubernetesVersion)
    assert.is_false(cfg.gates.NodeLocalCRISocket)
    assert.equal("/srv/pki", c.certificatesDir)
    assert.equal("mirror.example.com/k8s", c.imageRepository)
    assert.equal("abcdef.0123456789abcdef", i.bootstrapTokens[1].token)
    assert.equal("2h0m0s", i.bootstrapTokens[1].ttl)
    assert.same({ "signing", "authentication" }, i.bootstrapTokens[1].usages)
    assert.equal(("ab"):rep(32), i.certificateKey)
    assert.same({ "addon/kube-proxy", "show-join-command" }, i.skipPhases)
    assert.same({ "numcpu", "swap" }, i.nodeRegistration.ignorePreflightErrors)
    assert.equal("/etc/patches", i.patches.directory)
    assert.is_true(i.dryRun)
    assert.same({ "lb.example.com", "192.0.2.230" }, c.apiServer.certSANs)
    assert.is_true(cfg.flags["upload-certs"])
  end)

  it("refuse to mix --config with config-bearing flags, as kubeadm does", function()
    local cfg, err = config.load { files = { good .. "full.yaml" }, kind = "init", flags = {
      ["pod-network-cidr"] = "10.244.0.0/16", ["control-plane-endpoint"] = "x:6443", ["node-name"] = "ok",
      ["kubernetes-version"] = "v1.35.4", ["skip-token-print"] = true } }
    assert.is_nil(cfg)
    assert.equal("can not mix '--config' with arguments [control-plane-endpoint kubernetes-version pod-network-cidr]", err)
  end)

  it("add the allowed flags on top of --config", function()
    local cfg = assert(config.load { files = { good .. "full.yaml" }, kind = "init", flags = {
      ["node-name"] = "other-name", ["dry-run"] = true, ["ignore-preflight-errors"] = "Swap",
      ["skip-phases"] = { "preflight" }, ["upload-certs"] = true, ["skip-certificate-key-print"] = true,
      root = "/tmp/x" } })
    assert.equal("other-name", cfg.init.nodeRegistration.name)
    assert.is_true(cfg.init.dryRun)
    assert.same({ "isprivilegeduser", "swap" }, cfg.init.nodeRegistration.ignorePreflightErrors)
    assert.same({ "preflight" }, cfg.init.skipPhases)
  end)

  it("treat an empty flag value as not set", function()
    local cfg = assert(config.load { kind = "init", no_host_defaults = true, flags = { ["pod-network-cidr"] = "",
      ["service-cidr"] = "" } })
    assert.is_nil(cfg.cluster.networking.podSubnet)
    assert.equal("10.96.0.0/12", cfg.cluster.networking.serviceSubnet)
  end)

  it("name the flag a bad value came from", function()
    local cfg, err = config.load { kind = "init", no_host_defaults = true, flags = { ["pod-network-cidr"] = "10.244.0.0/33" } }
    assert.is_nil(cfg)
    assert.equal('--pod-network-cidr: ClusterConfiguration.networking.podSubnet: "10.244.0.0/33" is not a valid CIDR', err)
    cfg, err = config.load { kind = "init", flags = { ["apiserver-bind-port"] = "http" } }
    assert.is_nil(cfg)
    assert.equal('--apiserver-bind-port: "http" is not an integer', err)
    cfg, err = config.load { kind = "init", flags = { ["feature-gates"] = "WaitForAllControlPlaneComponents=true" } }
    assert.is_nil(cfg)
    assert.truthy(err:find("^%-%-feature%-gates: feature gate \"WaitForAllControlPlaneComponents\" was removed"), err)
    cfg, err = config.load { kind = "init", flags = { ["ignore-preflight-errors"] = "all,Swap" } }
    assert.is_nil(cfg)
    assert.equal("--ignore-preflight-errors: don't specify individual checks if 'all' is used", err)
  end)

  it("build a join: --token for both tokens, the endpoint argument, CA pins", function()
    local cfg = assert(config.load { kind = "join", args = { "192.0.2.140:6443" }, flags = {
      token = "abcdef.0123456789abcdef", ["node-name"] = "worker-1",
      ["discovery-token-ca-cert-hash"] = { "sha256:" .. ("AB"):rep(32), "sha256:" .. ("cd"):rep(32) } } })
    local d = cfg.join.discovery
    assert.equal("abcdef.0123456789abcdef", d.bootstrapToken.token)
    assert.equal("abcdef.0123456789abcdef", d.tlsBootstrapToken)
    assert.equal("192.0.2.140:6443", d.bootstrapToken.apiServerEndpoint)
    assert.same({ "sha256:" .. ("ab"):rep(32), "sha256:" .. ("cd"):rep(32) }, d.bootstrapToken.caCertHashes)
    assert.is_nil(cfg.join.controlPlane)
    assert.is_nil(cfg.cluster)
    assert.same(config.feature_gates(nil), cfg.gates)
  end)

  it("build a control-plane join, and ignore control-plane flags without --control-plane", function()
    local base = { token = "abcdef.0123456789abcdef", ["discovery-token-unsafe-skip-ca-verification"] = true,
      ["node-name"] = "cp-2", ["apiserver-advertise-address"] = "192.0.2.141", ["certificate-key"] = ("ef"):rep(32) }
    local cp = {}
    for k, v in pairs(base) do cp[k] = v end
    cp["control-plane"] = true
    local cfg = assert(config.load { kind = "join", args = { "lb:6443" }, flags = cp })
    assert.equal("192.0.2.141", cfg.join.controlPlane.localAPIEndpoint.advertiseAddress)
    assert.equal(6443, cfg.join.controlPlane.localAPIEndpoint.bindPort)
    assert.equal(("ef"):rep(32), cfg.join.controlPlane.certificateKey)
    local worker = assert(config.load { kind = "join", args = { "lb:6443" }, flags = base })
    assert.is_nil(worker.join.controlPlane)
    assert.truthy(has(worker.warnings, "are ignored when the --control-plane flag is not set"))
  end)

  it("use file discovery with --discovery-file", function()
    local cfg = assert(config.load { kind = "join", flags = { ["discovery-file"] = "/etc/kubernetes/cluster-info.yaml",
      ["tls-bootstrap-token"] = "abcdef.0123456789abcdef", ["node-name"] = "w" } })
    assert.equal("/etc/kubernetes/cluster-info.yaml", cfg.join.discovery.file.kubeConfigPath)
    assert.is_nil(cfg.join.discovery.bootstrapToken)
    assert.equal("abcdef.0123456789abcdef", cfg.join.discovery.tlsBootstrapToken)
  end)

  it("refuse a join without discovery", function()
    local cfg, err = config.load { kind = "join", flags = { ["node-name"] = "w" } }
    assert.is_nil(cfg)
    assert.truthy(err:find("JoinConfiguration.discovery.bootstrapToken.token: field is required", 1, true), err)
    assert.truthy(err:find("apiServerEndpoint: field is required", 1, true), err)
  end)

  it("set reset and upgrade options", function()
    local r = assert(config.load { kind = "reset", flags = { ["cert-dir"] = "/srv/pki", force = true,
      ["cleanup-tmp-dir"] = true, ["cri-socket"] = "unix:///run/crio/crio.sock" } })
    assert.equal("/srv/pki", r.reset.certificatesDir)
    assert.is_true(r.reset.force)
    assert.is_true(r.reset.cleanupTmpDir)
    local u = assert(config.load { kind = "upgrade", args = { "v1.35.4" }, flags = { ["etcd-upgrade"] = false,
      ["certificate-renewal"] = "false", force = true } })
    assert.equal("v1.35.4", u.upgrade.apply.kubernetesVersion)
    assert.is_false(u.upgrade.apply.etcdUpgrade)
    assert.is_false(u.upgrade.node.etcdUpgrade)
    assert.is_false(u.upgrade.apply.certificateRenewal)
    assert.is_true(u.upgrade.apply.forceUpgrade)
  end)
end)

describe("config.print_defaults", function()
  for _, kind in ipairs { "init", "join", "reset", "upgrade" } do
    it("prints " .. kind .. " defaults that load back to the same config", function()
      local text = assert(config.print_defaults(kind))
      local cfg = assert(config.load { text = text, filename = kind .. "-defaults.yaml", kind = kind })
      assert.same({}, cfg.warnings)
      local again = {}
      for _, slot in ipairs { "init", "cluster", "join", "reset", "upgrade" } do
        if cfg[slot] then again[#again + 1] = cfg[slot] end
      end
      local printed = yaml.encode_all(require("config.print").documents(again))
      assert.equal(text, printed)
    end)
  end

  it("prints kubeadm's placeholders", function()
    local text = config.print_defaults("init")
    assert.truthy(text:find("token: abcdef.0123456789abcdef", 1, true))
    assert.truthy(text:find("advertiseAddress: 1.2.3.4", 1, true))
    assert.truthy(text:find("name: node\n", 1, true))
    assert.truthy(text:find("criSocket: unix:///var/run/containerd/containerd.sock", 1, true))
    assert.truthy(text:find("taints: null", 1, true))
    assert.truthy(text:find("kubernetesVersion: v1.35.4", 1, true))
    assert.falsy(text:find("KubeletConfiguration", 1, true))
    local join = config.print_defaults("join")
    assert.truthy(join:find("apiServerEndpoint: kube-apiserver:6443", 1, true))
    assert.truthy(join:find("unsafeSkipCAVerification: true", 1, true))
  end)

  it("init defaults equal the flags-built config", function()
    local printed = assert(config.load { text = config.print_defaults("init"), kind = "init" })
    local P = config.constants.placeholder
    local built = assert(config.load { kind = "init", flags = { token = P.token,
      ["apiserver-advertise-address"] = P.advertise_address, ["node-name"] = P.node_name,
      ["cri-socket"] = P.cri_socket } })
    assert.same(built.init, printed.init)
    assert.same(built.cluster, printed.cluster)
  end)

  it("refuses an unknown kind", function()
    local text, err = config.print_defaults("upgrade-plan")
    assert.is_nil(text)
    assert.truthy(err:find("unknown defaults", 1, true))
  end)
end)

describe("the cluster's ClusterConfiguration", function()
  it("round-trips through the kubeadm-config text without the moonadm-only gate", function()
    local cfg = assert(config.load { kind = "init", no_host_defaults = true, flags = {
      ["feature-gates"] = "ControlPlaneKubeletLocalMode=false,NodeLocalCRISocket=false",
      ["pod-network-cidr"] = "10.244.0.0/16" } })
    local text = config.encode_cluster(cfg.cluster)
    assert.falsy(text:find("ControlPlaneKubeletLocalMode", 1, true))
    local cluster, warnings = assert(config.load_cluster(text))
    assert.same({}, warnings)
    assert.equal("10.244.0.0/16", cluster.networking.podSubnet)
    assert.is_false(config.feature_gates(cluster).NodeLocalCRISocket)
    assert.is_true(config.feature_gates(cluster).ControlPlaneKubeletLocalMode)
  end)

  it("reports a bad one with its source", function()
    local cluster, err = config.load_cluster("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"
      .. "clusterName: 3\n", "kube-system/kubeadm-config")
    assert.is_nil(cluster)
    assert.equal("kube-system/kubeadm-config:3: ClusterConfiguration.clusterName: expected a string, got an integer (3)", err)
    cluster, err = config.load_cluster("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ResetConfiguration\n")
    assert.is_nil(cluster)
    assert.equal("kubeadm-config: no ClusterConfiguration found", err)
  end)
end)

describe("config.duration_seconds", function()
  it("reads Go durations", function()
    assert.equal(240, config.duration_seconds("4m0s"))
    assert.equal(86400, config.duration_seconds("24h"))
    assert.equal(1.5, config.duration_seconds("1.5s"))
    assert.is_nil(config.duration_seconds("soon"))
  end)
end)

describe("config per Kubernetes minor", function()
  local function cluster_doc(version, extra)
    return "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: " .. version .. "\n"
      .. (extra or "")
  end

  it("takes each minor's gates: a gate that minor removed is an error naming the line and what became of it", function()
    local gates = "featureGates:\n  ControlPlaneKubeletLocalMode: true\n"
    assert(load_text(cluster_doc("v1.35.4", gates)))
    local c, err = load_text(cluster_doc("v1.36.3", gates))
    assert.is_nil(c)
    assert.matches('kubeadm.yaml:5: ClusterConfiguration.featureGates.ControlPlaneKubeletLocalMode: feature gate '
      .. '"ControlPlaneKubeletLocalMode" was removed in kubeadm v1.36: its behaviour is now always on', err, 1, true)
    c, err = load_text(cluster_doc("v1.37.2", "featureGates:\n  NodeLocalCRISocket: true\n"))
    assert.is_nil(c)
    assert.truthy(err:find('feature gate "NodeLocalCRISocket" was removed in kubeadm v1.37', 1, true), err)
    -- a removed gate whose behaviour stayed counts as on
    local ok = assert(load_text(cluster_doc("v1.37.2")))
    assert.is_true(ok.gates.NodeLocalCRISocket)
    assert.is_true(ok.gates.ControlPlaneKubeletLocalMode)
  end)

  it("refuses a minor it does not speak, and v1beta3 for v1.37", function()
    local c, err = load_text(cluster_doc("v1.38.0"))
    assert.is_nil(c)
    assert.truthy(err:find("kubeadm.yaml:3: ClusterConfiguration.kubernetesVersion: Kubernetes v1.38.0 is not "
      .. "supported: moonadm makes clusters of v1.35, v1.36, v1.37", 1, true), err)
    local v1beta3 = "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: %s\n"
    assert(load_text(v1beta3:format("v1.36.3")))
    c, err = load_text(v1beta3:format("v1.37.2"))
    assert.is_nil(c)
    assert.truthy(err:find('kubeadm.yaml:1: your configuration file uses an old API spec: "kubeadm.k8s.io/v1beta3" '
      .. '(kind: "ClusterConfiguration"), which kubeadm v1.37 no longer reads', 1, true), err)
  end)
end)
