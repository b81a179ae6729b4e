-- Malformed configuration files: each is refused with a message naming file, line and field.
local config = require "config"

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local fixtures = dir .. "fixtures/config/"

-- {file, expected message (plain text), kind, strict}
local CASES = {
  { "pod_cidr.yaml", '5: ClusterConfiguration.networking.podSubnet: "10.244.0.0/33" is not a valid CIDR' },
  { "port_type.yaml", '5: InitConfiguration.localAPIEndpoint.bindPort: expected an integer, got a string ("six")' },
  { "port_range.yaml", "4: InitConfiguration.localAPIEndpoint.bindPort: 70000 is not a valid port number (1-65535)" },
  { "duration.yaml", '5: InitConfiguration.timeouts.controlPlaneComponentHealthCheck: "4 minutes" is not a valid duration' },
  { "token.yaml", '5: InitConfiguration.bootstrapTokens[1].token: "ABCDEF.0123456789abcdef" is not a valid '
    .. "bootstrap token (expected the format [a-z0-9]{6}.[a-z0-9]{16})" },
  { "encryption.yaml", '3: ClusterConfiguration.encryptionAlgorithm: unsupported value "RSA-1024": supported values: '
    .. '"RSA-2048", "RSA-3072", "RSA-4096", "ECDSA-P256", "ECDSA-P384"' },
  { "gate_learner.yaml", '5: ClusterConfiguration.featureGates.EtcdLearnerMode: feature gate "EtcdLearnerMode" was '
    .. "removed in kubeadm v1.33: its behaviour is now always on" },
  { "gate_wait.yaml", '4: ClusterConfiguration.featureGates.WaitForAllControlPlaneComponents: feature gate '
    .. '"WaitForAllControlPlaneComponents" was removed in kubeadm v1.35: its behaviour is now always on' },
  { "gate_rootless.yaml", '4: ClusterConfiguration.featureGates.RootlessControlPlane: feature gate '
    .. '"RootlessControlPlane" was removed in kubeadm v1.35' },
  { "gate_unknown.yaml", '4: ClusterConfiguration.featureGates.SuperFastEtcd: unknown feature gate "SuperFastEtcd"; '
    .. "valid feature gates are: ControlPlaneKubeletLocalMode, NodeLocalCRISocket, PublicKeysECDSA" },
  { "gate_value.yaml", '4: ClusterConfiguration.featureGates.NodeLocalCRISocket: expected a boolean (true or false), '
    .. 'got a string ("yes")' },
  { "taint_effect.yaml", '7: InitConfiguration.nodeRegistration.taints[0].effect: unsupported value "NoRun": '
    .. 'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"' },
  { "api_version.yaml", '2: unknown apiVersion "kubeadm.k8s.io/v2" (kind "ClusterConfiguration")' },
  { "kind_unknown.yaml", '2: unknown kind "MasterConfiguration" for apiVersion "kubeadm.k8s.io/v1beta4"' },
  { "old_api.yaml", '1: your configuration file uses an old API spec: "kubeadm.k8s.io/v1beta2" (kind: '
    .. '"ClusterConfiguration"). Please use kubeadm v1.22 instead' },
  { "kind_missing.yaml", "4: kind and apiVersion are mandatory information that must be specified" },
  { "duplicate.yaml", "5: ClusterConfiguration is given twice (first at " .. fixtures .. "duplicate.yaml:1)" },
  { "service_cidr.yaml", '4: ClusterConfiguration.networking.serviceSubnet: "10.0.0.0/8": the service subnet is '
    .. "too large; for 32-bit addresses the mask must be >= 12" },
  { "advertise_unspecified.yaml", '4: InitConfiguration.localAPIEndpoint.advertiseAddress: cannot use "0.0.0.0" as '
    .. "the advertise address of the API server (unspecified address)" },
  { "advertise_ip.yaml", '4: InitConfiguration.localAPIEndpoint.advertiseAddress: "192.0.2.300" is not a valid IP address' },
  { "etcd_both.yaml", "6: ClusterConfiguration.etcd: local and external are mutually exclusive" },
  { "join_no_discovery.yaml", "1: JoinConfiguration.discovery: bootstrapToken or file must be set", "join" },
  { "join_unsafe.yaml", "6: JoinConfiguration.discovery.bootstrapToken.caCertHashes: using token-based discovery "
    .. "without caCertHashes can be unsafe", "join" },
  { "ca_hash.yaml", '10: JoinConfiguration.discovery.bootstrapToken.caCertHashes[0]: '
    .. '"md5:0123456789abcdef0123456789abcdef": unsupported hash type "md5" (only sha256)', "join" },
  { "object_type.yaml", '3: ClusterConfiguration.networking: expected a mapping, got a string ("10.244.0.0/16")' },
  { "version_label.yaml", '3: ClusterConfiguration.kubernetesVersion: "stable-1" is a version label; moonadm never '
    .. "looks versions up over the network" },
  { "version_old.yaml", "3: ClusterConfiguration.kubernetesVersion: this version of kubeadm only supports deploying "
    .. "clusters with the control plane version >= 1.34.0. Current version: v1.33.0" },
  { "unmount_flag.yaml", '5: ResetConfiguration.unmountFlags[1]: unsupported value "MNT_BOGUS"', "reset" },
  { "cri_socket.yaml", '3: ResetConfiguration.criSocket: "tcp://192.0.2.131:3735": URL scheme "tcp" is not supported',
    "reset" },
  { "v1beta3_reset.yaml", '2: kind "ResetConfiguration" does not exist in kubeadm.k8s.io/v1beta3; use '
    .. "kubeadm.k8s.io/v1beta4", "reset" },
  { "list_type.yaml", '4: ClusterConfiguration.apiServer.certSANs: expected a list, got a string '
    .. '("lb.example.com,192.0.2.230")' },
  { "extra_args_map.yaml", "4: ClusterConfiguration.apiServer.extraArgs: expected a list, got a mapping" },
  { "component_kind.yaml", '5: unknown kind "KubeProxyConfiguration" for apiVersion "kubelet.config.k8s.io/v1beta1" '
    .. "(expected KubeletConfiguration)" },
  { "pod_subnet_mask.yaml", '4: ClusterConfiguration.networking.podSubnet: "10.244.0.0/25": the size of pod subnet '
    .. "with mask 25 is smaller than the size of node subnet with mask 24" },
  { "negative_ttl.yaml", '4: InitConfiguration.bootstrapTokens[0].ttl: "-1h" must not be negative' },
  { "arg_name.yaml", "7: ClusterConfiguration.controllerManager.extraArgs[1].name: field is required" },
  { "bool_type.yaml", '3: InitConfiguration.dryRun: expected a boolean (true or false), got a string ("yes")' },
  { "node_name.yaml", '4: InitConfiguration.nodeRegistration.name: "My_Node" is not a valid node name' },
  { "pull_policy.yaml", '5: JoinConfiguration.nodeRegistration.imagePullPolicy: unsupported value "Sometimes"', "join" },
  { "unknown_field.yaml", '6: unknown field "ClusterConfiguration.networking.podSubnt" (did you mean "podSubnet"?)',
    "init", true },
  { "preflight_all.yaml", "4: InitConfiguration.nodeRegistration.ignorePreflightErrors: don't specify individual "
    .. "checks if 'all' is used" },
}

describe("config: malformed files", function()
  for _, case in ipairs(CASES) do
    local file, expected, kind, strict = case[1], case[2], case[3] or "init", case[4]
    it(file .. " is refused with its file, line and field", function()
      local cfg, err = config.load { files = { fixtures .. file }, kind = kind, strict = strict,
        no_host_defaults = true }
      assert.is_nil(cfg)
      assert.is_string(err)
      local want = fixtures .. file .. ":" .. expected
      assert(err:find(want, 1, true), "\nexpected: " .. want .. "\n     got: " .. err)
    end)
  end

  it("reports a YAML syntax error with file, line and column", function()
    local cfg, err = config.load { files = { fixtures .. "syntax.yaml" }, kind = "init" }
    assert.is_nil(cfg)
    assert.truthy(err:find(fixtures .. "syntax.yaml:%d+:%d+: "), err)
  end)

  it("refuses a document that is not a mapping", function()
    local cfg, err = config.load { files = { fixtures .. "not_mapping.yaml" }, kind = "init" }
    assert.is_nil(cfg)
    assert.equal(fixtures .. "not_mapping.yaml:1: a configuration document must be a mapping, got a list", err)
  end)

  it("refuses a file without the kinds the command needs", function()
    local cfg, err = config.load { files = { fixtures .. "no_init_kind.yaml" }, kind = "init" }
    assert.is_nil(cfg)
    assert.equal("no InitConfiguration or ClusterConfiguration kind was found in the YAML file", err)
  end)

  it("refuses a missing file", function()
    local cfg, err = config.load { files = { fixtures .. "does-not-exist.yaml" }, kind = "init" }
    assert.is_nil(cfg)
    assert.truthy(err:find("unable to read config from", 1, true))
  end)

  it("goes on checking a list after a wrong-typed item", function()
    local cfg, err = config.load { kind = "init", filename = "sans.yaml", text = "apiVersion: kubeadm.k8s.io/v1beta4\n"
      .. "kind: ClusterConfiguration\napiServer:\n  certSANs: [~, 1.5, \"ok.example.com\", \"bad_san\"]\n" }
    assert.is_nil(cfg)
    assert.truthy(err:find("sans.yaml:4: ClusterConfiguration.apiServer.certSANs[1]: expected a string, got a number (1.5)", 1, true), err)
    assert.truthy(err:find('sans.yaml:4: ClusterConfiguration.apiServer.certSANs[3]: "bad_san" is not a valid IP', 1, true), err)
  end)

  it("lists every error, one per line", function()
    local cfg, err = config.load { kind = "init", no_host_defaults = true, filename = "many.yaml", text = [[
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
networking:
  podSubnet: 10.244.0.0/99
  dnsDomain: Not_A_Domain
clusterName: 7
]] }
    assert.is_nil(cfg)
    local lines = {}
    for l in err:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(3, #lines)
    assert.equal('many.yaml:6: ClusterConfiguration.clusterName: expected a string, got an integer (7)', lines[1])
    assert.truthy(err:find('many.yaml:5: ClusterConfiguration.networking.dnsDomain: "Not_A_Domain" is not a valid DNS domain', 1, true))
    assert.truthy(err:find('many.yaml:4: ClusterConfiguration.networking.podSubnet: "10.244.0.0/99" is not a valid CIDR', 1, true))
  end)
end)
