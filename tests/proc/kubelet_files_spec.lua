-- kubelet-start's files: config.yaml (kubeadm's defaults or the user's document), kubeadm-flags.env,
-- instance-config.yaml under NodeLocalCRISocket (both gate states), CRI socket detection, patch
-- priority over the instance config (seed 002), node runtimes.
local yaml = require "moonadm.yaml"
local h = require "helpers"
local kcfg = require "kubelet.config"
local kflags = require "kubelet.flags_env"
local HOST = require("config").node_name_default()

local INIT = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: 192.0.2.135\n" ..
  "nodeRegistration:\n  name: %s\n%s"

describe("kubelet files", function()
  local root
  before_each(function() root = h.tmpdir() end)
  after_each(function() h.rmrf(root) end)

  local function start(extra_cfg, args, node_reg, name)
    h.write(root .. "/k.yaml", INIT:format(name or HOST, node_reg or "  criSocket: unix:///run/containerd/containerd.sock\n") .. (extra_cfg or ""))
    local argv = { "init", "phase", "kubelet-start", "--root", root, "--config", root .. "/k.yaml", "--node-runtime", "none" }
    for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
    return h.moonadm(argv)
  end
  local function kubelet_config() return yaml.decode(h.read(root .. "/var/lib/kubelet/config.yaml"))[1] end

  it("config.yaml: kubeadm's defaults field by field; flags and instance-config under NodeLocalCRISocket", function()
    local code, out, err = start()
    assert.equal(0, code, out .. err)
    local c = kubelet_config()
    assert.equal("kubelet.config.k8s.io/v1beta1", c.apiVersion)
    assert.equal("KubeletConfiguration", c.kind)
    assert.same({ anonymous = { enabled = false }, webhook = { cacheTTL = "0s", enabled = true },
      x509 = { clientCAFile = "/etc/kubernetes/pki/ca.crt" } }, c.authentication)
    assert.same({ mode = "Webhook", webhook = { cacheAuthorizedTTL = "0s", cacheUnauthorizedTTL = "0s" } }, c.authorization)
    assert.equal("systemd", c.cgroupDriver)
    assert.same({ "10.96.0.10" }, { table.unpack(c.clusterDNS) })
    assert.equal("cluster.local", c.clusterDomain)
    assert.equal("/etc/kubernetes/manifests", c.staticPodPath)
    assert.is_true(c.rotateCertificates)
    assert.equal("127.0.0.1", c.healthzBindAddress)
    assert.equal(10248, c.healthzPort)
    assert.equal("unix:///run/containerd/containerd.sock", c.containerRuntimeEndpoint)
    -- kubeadm v1.35 writes no --pod-infra-container-image (the reference kubeadm: differential_spec)
    assert.equal('KUBELET_KUBEADM_ARGS=""\n', h.read(root .. "/var/lib/kubelet/kubeadm-flags.env"))
    assert.equal('containerRuntimeEndpoint: "unix:///run/containerd/containerd.sock"\n',
      h.read(root .. "/var/lib/kubelet/instance-config.yaml"))
    assert.matches('[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml"', out, 1, true)
    local p = io.popen("stat -c %a " .. h.q(root .. "/var/lib/kubelet/config.yaml") .. " " .. h.q(root .. "/var/lib/kubelet"))
    assert.equal("644", p:read("l")); assert.equal("700", p:read("l")); p:close()
  end)

  it("NodeLocalCRISocket=false: --container-runtime-endpoint in the flags, no instance-config.yaml", function()
    local code, out, err = start(nil, { "--feature-gates", "NodeLocalCRISocket=false" }, nil)
    if code ~= 0 then
      -- with --config, gates come from the ClusterConfiguration
      code, out, err = start("---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nfeatureGates:\n  NodeLocalCRISocket: false\n")
    end
    assert.equal(0, code, out .. err)
    assert.equal('KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"\n',
      h.read(root .. "/var/lib/kubelet/kubeadm-flags.env"))
    assert.is_nil(h.read(root .. "/var/lib/kubelet/instance-config.yaml"))
    assert.equal("", kubelet_config().containerRuntimeEndpoint)
  end)

  it("the user's KubeletConfiguration wins where set; kubeadm fills the rest; the service CIDR gives clusterDNS", function()
    local code, out, err = start("---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  serviceSubnet: 10.100.0.0/16\n" ..
      "---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\nmaxPods: 50\n" ..
      "rotateCertificates: false\n")
    assert.equal(0, code, out .. err)
    local c = kubelet_config()
    assert.equal("cgroupfs", c.cgroupDriver)
    assert.equal(50, c.maxPods)
    assert.is_true(c.rotateCertificates)
    assert.same({ "10.100.0.10" }, { table.unpack(c.clusterDNS) })
  end)

  it("clusterDNS is the 10th address of the first service subnet (IPv4 and IPv6)", function()
    assert.equal("10.96.0.10", kcfg.nth_ip("10.96.0.0/12", 10))
    assert.equal("10.100.0.10", kcfg.nth_ip("10.100.0.0/16,fd00::/108", 10))
    assert.equal("fd00::a", kcfg.nth_ip("fd00::/108", 10))
    assert.equal("10.0.1.9", kcfg.nth_ip("10.0.0.255/16", 265))
  end)

  it("kubeletExtraArgs override and add, a node name other than the host name adds --hostname-override", function()
    local code, out, err = start(nil, nil, "  criSocket: unix:///run/crio/crio.sock\n  kubeletExtraArgs:\n  - name: v\n    value: \"4\"\n" ..
      "  - name: pod-infra-container-image\n    value: my/pause:1\n", "some-other-name")
    assert.equal(0, code, out .. err)
    local f = kflags.parse(h.read(root .. "/var/lib/kubelet/kubeadm-flags.env"))
    assert.equal("my/pause:1", f["pod-infra-container-image"])
    assert.equal("4", f.v)
    assert.equal("some-other-name", f["hostname-override"])
    assert.equal('"a \\"b\\""', kflags.go_quote('a "b"'))
  end)

  it("user kubeletconfiguration patches win over instance-config.yaml (seed 002)", function()
    h.write(root .. "/patches/kubeletconfiguration+merge.yaml", "containerRuntimeEndpoint: unix:///custom.sock\nmaxPods: 10\n")
    local code, out, err = start("patches:\n  directory: " .. root .. "/patches\n")
    assert.equal(0, code, out .. err)
    local c = kubelet_config()
    assert.equal("unix:///custom.sock", c.containerRuntimeEndpoint)
    assert.equal(10, c.maxPods)
    assert.equal('containerRuntimeEndpoint: "unix:///run/containerd/containerd.sock"\n',
      h.read(root .. "/var/lib/kubelet/instance-config.yaml"))
  end)

  describe("CRI socket detection under the root", function()
    local function sock(path)
      local full = root .. path
      os.execute("mkdir -p " .. h.q(full:match("^(.*)/")))
      return os.execute("python3 -c " .. h.q("import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])") .. " " .. h.q(full))
    end
    local has_python = os.execute("command -v python3 >/dev/null")

    it("none found: kubeadm's default containerd socket, with a warning", function()
      local code, out, err = start(nil, nil, "")
      assert.equal(0, code, out .. err)
      assert.matches("no known CRI socket found", err, 1, true)
      assert.equal('containerRuntimeEndpoint: "unix:///var/run/containerd/containerd.sock"\n',
        h.read(root .. "/var/lib/kubelet/instance-config.yaml"))
    end)

    it("one found is used; two is an error asking to choose", function()
      if not has_python then pending("python3 is needed to create a unix socket") return end
      assert.truthy(sock("/var/run/crio/crio.sock"))
      local code, out, err = start(nil, nil, "")
      assert.equal(0, code, out .. err)
      assert.equal('containerRuntimeEndpoint: "unix:///var/run/crio/crio.sock"\n',
        h.read(root .. "/var/lib/kubelet/instance-config.yaml"))
      assert.truthy(sock("/var/run/containerd/containerd.sock"))
      code, out, err = start(nil, nil, "")
      assert.equal(1, code)
      assert.matches("found multiple CRI endpoints on the host", err, 1, true)
      assert.matches("criSocket", err, 1, true)
    end)
  end)

  it("node runtimes: none touches nothing; systemd under a --root warns and touches no host service", function()
    local rt = require "runtime"
    assert.equal("none", rt.get("none").name)
    local ok, err = pcall(rt.get, "bogus")
    assert.is_false(ok); assert.matches('unknown node runtime "bogus"', err, 1, true)
    for _, name in ipairs { "systemd", "none" } do
      local r = rt.get(name)
      for _, f in ipairs { "start_kubelet", "stop_kubelet", "restart_kubelet", "kubelet_healthy" } do
        assert.is_function(r[f], name .. "." .. f)
      end
    end
    h.write(root .. "/k.yaml", INIT:format("cp1", "  criSocket: unix:///run/containerd/containerd.sock\n"))
    local code, out, err2 = h.moonadm { "init", "phase", "kubelet-start", "--root", root, "--config", root .. "/k.yaml" }
    assert.equal(0, code, out .. err2)
    assert.matches("not asking the host's systemd to start the kubelet", err2, 1, true)
  end)
end)
