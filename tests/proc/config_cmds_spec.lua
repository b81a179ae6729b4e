-- `moonadm config images list|pull`, `config migrate`, `config validate`, `config print
-- *-defaults --component-configs` and `kubeconfig user`, held against the reference kubeadm
-- v1.35.4 (.lab/bin/kubeadm: required, as in differential_spec; without it these tests fail, or are
-- pending where it cannot be built).
local h = require "helpers"
local ref = require "reference_kubeadm"

-- Runs a command line (a list), returns exit code and stdout (stderr apart).
local function run(argv, env)
  local parts = {}
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. h.q(v) end
  for _, a in ipairs(argv) do parts[#parts + 1] = h.q(a) end
  local errf = os.tmpname()
  local p = io.popen(table.concat(parts, " ") .. " 2>" .. errf)
  local out = p:read("a")
  local _, _, code = p:close()
  local err = h.read(errf)
  os.remove(errf)
  return code, out, err
end
local function kubeadm(args) return run(table.move(args, 1, #args, 2, { ref.bin })) end
local function moonadm(args, env) return run(table.move(args, 1, #args, 2, { h.bin }), env) end

local function both(args)
  local kc, kout, kerr = kubeadm(args)
  local mc, mout, merr = moonadm(args)
  return kc, kout, mc, mout, kerr, merr
end

-- Bootstrap tokens are generated per run: compare their shape only.
local function tokens_out(s) return (s:gsub("token: [a-z0-9]+%.[a-z0-9]+", "token: T")) end

local dir
setup(function() dir = h.tmpdir() end)
teardown(function() if dir then h.rmrf(dir) end end)

local function file(name, text)
  local p = dir .. "/" .. name
  h.write(p, text)
  return p
end

describe("config commands against the reference kubeadm", function()
  local it = ref.when_built(nil, it, pending)
  it("the reference kubeadm is there (make lab-bins)", function() ref.require() end)

  describe("config images list", function()
    for _, case in ipairs {
      { "--kubernetes-version", "v1.35.4" },
      { "--kubernetes-version", "v1.35.4", "-o", "json" },
      { "--kubernetes-version", "v1.35.4", "-o", "yaml" },
      { "--kubernetes-version", "v1.34.3", "--image-repository", "foo.example/k8s" },
      { "--kubernetes-version", "v1.35.1+abc" },
    } do
      it(table.concat(case, " "), function()
        ref.require()
        local kc, kout, mc, mout = both { "config", "images", "list", table.unpack(case) }
        assert.equal(0, kc)
        assert.equal(kc, mc)
        assert.equal(kout, mout)
      end)
    end

    it("from a config file: external etcd (no etcd image), dns and proxy disabled, own tags", function()
      ref.require()
      local cfg = file("images.yaml", [[
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.2
imageRepository: my.registry/k8s
dns:
  imageRepository: dns.example
  imageTag: v9.9.9
etcd:
  external:
    endpoints: ["https://192.0.2.139:2379"]
    caFile: /etc/ca.crt
    certFile: /etc/c.crt
    keyFile: /etc/c.key
]])
      local kc, kout, mc, mout = both { "config", "images", "list", "--config", cfg }
      assert.equal(0, kc)
      assert.equal(0, mc)
      assert.equal(kout, mout)
      assert.not_matches("etcd", mout, 1, true)
      cfg = file("images2.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.35.2\n" ..
        "dns:\n  disabled: true\nproxy:\n  disabled: true\netcd:\n  local:\n    imageTag: 3.6.0-0\n")
      kc, kout, mc, mout = both { "config", "images", "list", "--config", cfg, "-o", "json" }
      assert.equal(0, kc)
      assert.equal(kout, mout)
    end)

    it("refuses an output format it has no printer for", function()
      local code, _, err = moonadm { "config", "images", "list", "-o", "go-template" }
      assert.equal(1, code)
      assert.matches('unable to match a printer suitable for the output format "go-template"', err, 1, true)
    end)
  end)

  describe("config print init-defaults --component-configs", function()
    for _, kinds in ipairs { "KubeletConfiguration", "KubeProxyConfiguration", "KubeletConfiguration,KubeProxyConfiguration" } do
      it(kinds, function()
        ref.require()
        local kc, kout, mc, mout = both { "config", "print", "init-defaults", "--component-configs", kinds }
        assert.equal(0, kc)
        assert.equal(0, mc)
        -- documents 3.. are the component configs (1 and 2: Init/ClusterConfiguration, held in config_spec)
        local function docs(s)
          local out = {}
          for d in (s .. "---\n"):gmatch("(.-)%-%-%-\n") do out[#out + 1] = d end
          return table.move(out, 3, #out, 1, {})
        end
        assert.equal(#docs(kout), #docs(mout))
        assert.same(docs(kout), docs(mout))
      end)
    end

    it("refuses an unknown kind and is an init-defaults flag only, as in kubeadm", function()
      local code, _, err = moonadm { "config", "print", "init-defaults", "--component-configs", "Foo" }
      assert.equal(1, code)
      assert.matches("--component-configs needs to contain some of [KubeletConfiguration KubeProxyConfiguration]", err, 1, true)
      code, _, err = moonadm { "config", "print", "join-defaults", "--component-configs", "KubeletConfiguration" }
      assert.equal(1, code)
      assert.matches("unknown flag: --component-configs", err, 1, true)
    end)
  end)

  describe("config migrate", function()
    local inputs = {
      ["v1beta3 Init+Cluster, comments"] = [[
# a comment kubeadm drops
apiVersion: kubeadm.k8s.io/v1beta3
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.0.2.135 # here too
nodeRegistration:
  name: node1
  criSocket: unix:///var/run/containerd/containerd.sock
  kubeletExtraArgs:
    v: "4"
---
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
kubernetesVersion: v1.35.2
apiServer:
  timeoutForControlPlane: 5m0s
  extraArgs:
    audit-log-maxage: "3"
controlPlaneEndpoint: cp.example:6443
]],
      ["v1beta3 JoinConfiguration"] = [[
apiVersion: kubeadm.k8s.io/v1beta3
kind: JoinConfiguration
nodeRegistration:
  name: w1
  criSocket: unix:///var/run/containerd/containerd.sock
discovery:
  timeout: 3m0s
  bootstrapToken:
    token: abcdef.0123456789abcdef
    apiServerEndpoint: 192.0.2.135:6443
    unsafeSkipCAVerification: true
]],
      ["v1beta3 ClusterConfiguration alone (InitConfiguration defaulted: host name, advertise address)"] = [[
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
networking:
  podSubnet: 10.244.0.0/16
]],
    }
    for name, text in pairs(inputs) do
      it(name, function()
        ref.require()
        local p = file("old.yaml", text)
        local kc, kout, mc, mout = both { "config", "migrate", "--old-config", p }
        assert.equal(0, kc)
        assert.equal(0, mc)
        assert.equal(tokens_out(kout), tokens_out(mout))
        assert.not_matches("#", mout, 1, true)
      end)
    end

    it("an unknown field is an error, as kubeadm's strict decoding", function()
      ref.require()
      local p = file("unknown.yaml", "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nfoo: bar\n")
      local kc, _, mc, mout, kerr, merr = both { "config", "migrate", "--old-config", p }
      assert.equal(1, kc)
      assert.equal(1, mc)
      assert.equal("", mout)
      assert.matches('unknown field "foo"', kerr, 1, true)
      assert.matches('unknown.yaml:3: unknown field "ClusterConfiguration.foo"', merr, 1, true)
    end)

    it("--new-config writes the file (0644) instead of stdout; --old-config is mandatory", function()
      local p = file("old.yaml", inputs["v1beta3 JoinConfiguration"])
      local out = dir .. "/new.yaml"
      local code, stdout = moonadm { "config", "migrate", "--old-config", p, "--new-config", out }
      assert.equal(0, code)
      assert.equal("", stdout)
      assert.matches("apiVersion: kubeadm.k8s.io/v1beta4\n", h.read(out), 1, true)
      local _, mode = run { "stat", "-c", "%a", out }
      assert.equal("644\n", mode)
      local c2, _, err = moonadm { "config", "migrate" }
      assert.equal(1, c2)
      assert.matches("the --old-config flag is mandatory", err, 1, true)
    end)
  end)

  describe("config validate", function()
    it("prints ok for a valid file with several kinds, fails on errors, as kubeadm", function()
      ref.require()
      local good = file("good.yaml", [[
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  name: n1
  criSocket: unix:///var/run/containerd/containerd.sock
localAPIEndpoint:
  advertiseAddress: 192.0.2.135
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ResetConfiguration
force: true
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
]])
      local kc, kout, mc, mout = both { "config", "validate", "--config", good }
      assert.equal(0, kc)
      assert.equal(0, mc)
      assert.equal("ok\n", kout)
      assert.equal(kout, mout)
      for _, bad in ipairs {
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  serviceSubnet: nonsense\n",
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nbogus: 1\n",
        "apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\n",
      } do
        local p = file("bad.yaml", bad)
        kc, kout, mc, mout = both { "config", "validate", "--config", p }
        assert.equal(1, kc, bad)
        assert.equal(1, mc, bad)
        assert.equal("", mout)
      end
      local code, _, err = moonadm { "config", "validate" }
      assert.equal(1, code)
      assert.matches("the --config flag is mandatory", err, 1, true)
    end)
  end)

  describe("kubeconfig user", function()
    local function strip(s) return (s:gsub("(%-data: )%S+", "%1X")) end

    it("a client certificate kubeconfig shaped as kubeadm's; the token one byte for byte", function()
      ref.require()
      local root = dir .. "/root"
      assert.equal(0, (moonadm { "init", "phase", "certs", "ca", "--root", root }))
      local cfg = file("cl.yaml", ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n" ..
        "controlPlaneEndpoint: lb.example:7443\nclusterName: mycl\ncertificatesDir: %s/etc/kubernetes/pki\n"):format(root))
      local args = { "kubeconfig", "user", "--client-name", "alice", "--org", "team-a,team-b", "--config", cfg }
      local kc, kout, mc, mout = both(args)
      assert.equal(0, kc)
      assert.equal(0, mc)
      assert.equal(strip(kout), strip(mout))
      local pki = require "moonadm.pki"
      local encoding = require "moonadm.encoding"
      local ca = assert(pki.read_cert(h.read(root .. "/etc/kubernetes/pki/ca.crt")))
      local function cert(text) return assert(pki.read_cert(assert(encoding.base64_decode(text:match("client%-certificate%-data: (%S+)"))))) end
      local kcert, mcert = cert(kout), cert(mout)
      assert.is_true(mcert:verify(ca))
      local ki, mi = kcert:info(), mcert:info()
      assert.equal(ki.subject.cn, mi.subject.cn)
      assert.same(ki.subject.o, mi.subject.o)
      assert.same(ki.ext_usages, mi.ext_usages)
      assert.same(ki.usages, mi.usages)
      assert.is_true(math.abs(ki.not_after - mi.not_after) < 120)

      local targs = { "kubeconfig", "user", "--client-name", "bob", "--token", "abc.def", "--config", cfg }
      kc, kout, mc, mout = both(targs)
      assert.equal(0, kc)
      assert.equal(kout, mout)
    end)

    it("--client-name is required; the CA must be there", function()
      local code, _, err = moonadm { "kubeconfig", "user" }
      assert.equal(1, code)
      assert.matches('required flag(s) "client-name" not set', err, 1, true)
      code, _, err = moonadm { "kubeconfig", "user", "--client-name", "x", "--root", dir .. "/empty" }
      assert.equal(1, code)
      assert.matches("couldn't create a kubeconfig; the CA files couldn't be loaded", err, 1, true)
    end)
  end)
end)

describe("config images pull (the CRI, through crictl)", function()
  it("pulls every image through crictl on the given endpoint, printing kubeadm's lines", function()
    local fake = file("bin/crictl", "#!/bin/sh\necho \"$@\" >> " .. dir .. "/crictl.log\n")
    os.execute("chmod +x " .. h.q(fake))
    local code, out = moonadm({ "config", "images", "pull", "--cri-socket", "unix:///run/x.sock",
      "--kubernetes-version", "v1.35.4" }, { PATH = dir .. "/bin:" .. os.getenv("PATH") })
    assert.equal(0, code)
    local _, list = moonadm { "config", "images", "list", "--kubernetes-version", "v1.35.4" }
    local want, calls = {}, {}
    for img in list:gmatch("[^\n]+") do
      want[#want + 1] = "[config/images] Pulled " .. img
      -- no /etc/crictl.yaml may redirect it; the image service is the same endpoint; a pull's timeout is kubeadm's
      calls[#calls + 1] = "--config /dev/null --runtime-endpoint unix:///run/x.sock --image-endpoint unix:///run/x.sock " ..
        "--timeout 5m pull " .. img
    end
    assert.equal(table.concat(want, "\n") .. "\n", out)
    assert.equal(table.concat(calls, "\n") .. "\n", h.read(dir .. "/crictl.log"))
  end)

  it("without crictl: fails naming the difference", function()
    local code, out, err = moonadm({ "config", "images", "pull" }, { PATH = dir .. "/nothing" })
    assert.equal(1, code)
    assert.equal("", out)
    assert.matches("crictl not found in system path", err, 1, true)
    assert.matches("install cri-tools", err:lower(), 1, true)
  end)

  it("a failing pull is an error naming the image", function()
    local fake = file("bin2/crictl", "#!/bin/sh\necho 'rpc error: not found' >&2\nexit 1\n")
    os.execute("chmod +x " .. h.q(fake))
    local code, _, err = moonadm({ "config", "images", "pull", "-v", "0" }, { PATH = dir .. "/bin2:" .. os.getenv("PATH") })
    assert.equal(1, code)
    assert.matches('failed to pull image "registry.k8s.io/kube-apiserver:v1.35.4"', err, 1, true)
    assert.matches("rpc error: not found", err, 1, true)
  end)
end)
