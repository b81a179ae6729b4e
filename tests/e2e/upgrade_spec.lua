-- `moonadm upgrade` end to end on an own 1-node lab (dev10b, 10.253.11): kubeadm's documented
-- reconfiguration — `upgrade apply` to the same version after kubeadm-config was edited (an
-- apiserver extraArg, a new certSAN) — with backups, renewed certificates, the NodeLocalCRISocket
-- migration and the kubelet.conf server rewrite; a broken apiserver flag rolled back; --dry-run
-- changing nothing; `upgrade plan -o json`; `upgrade node` on the same node. The lab is taken
-- down in teardown().
local cjson = require "cjson"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local fixture = require "lab_fixture"
local h = require "helpers"

local LAB = { name = "dev10b", subnet = "10.253.11" }
local IP = LAB.subnet .. ".11"

local function cert(p) return assert(pki.read_cert(assert(h.read(p), "missing " .. p))):info() end

describe("moonadm upgrade on the lab", function()
  local st, node, K

  local function kubectl(args)
    return fixture.kubectl(st, args)
  end
  local function kjson(args)
    local a = {}
    for _, x in ipairs(args) do a[#a + 1] = x end
    a[#a + 1] = "-o"; a[#a + 1] = "json"
    local rc, out = kubectl(a)
    assert.equal(0, rc, out)
    return cjson.decode(out)
  end
  local function cluster_config()
    return kjson({ "-n", "kube-system", "get", "configmap", "kubeadm-config" }).data.ClusterConfiguration
  end
  local function set_cluster_config(text)
    local cm = kjson({ "-n", "kube-system", "get", "configmap", "kubeadm-config" })
    cm.data.ClusterConfiguration = text
    cm.data.ClusterStatus = "apiEndpoints: {}\n" -- an old kubeadm's key: upgrade must drop it (seed 001)
    local tmp = os.tmpname()
    h.write(tmp, cjson.encode(cm))
    local rc, out = kubectl({ "replace", "-f", tmp })
    os.remove(tmp)
    assert.equal(0, rc, out)
  end
  local function upgrade(args)
    local argv = { "moonadm", "upgrade" }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    local t0 = os.time()
    local code, out, err = fixture.exec(st, "cp1", argv)
    return code, out .. err, os.time() - t0
  end
  local function readyz()
    local rc, out = kubectl({ "get", "--raw", "/readyz" })
    return rc == 0 and out == "ok"
  end

  setup(function()
    local code, out, err = h.moonadm({ "lab", "up", "--name", LAB.name, "--subnet", LAB.subnet })
    assert(code == 0, ("lab %s did not come up:\n%s\n%s"):format(LAB.name, out, err))
    st = assert(fixture.state(LAB.name), "no lab.json")
    node = st.nodes[1].root
    K = node .. "/etc/kubernetes"
  end)

  teardown(function()
    h.moonadm({ "lab", "down", "--name", LAB.name })
  end)

  it("plan -o json lists the running versions against the pinned target", function()
    for _ = 1, 60 do -- the stand-in posts the mirror pods just after `lab up`
      if kubectl({ "-n", "kube-system", "get", "pod", "kube-apiserver-cp1", "etcd-cp1" }) == 0 then break end
      os.execute("sleep 1")
    end
    local code, out = upgrade({ "plan", "-o", "json" })
    assert.equal(0, code, out)
    local p = cjson.decode(out:match("^[^\n]*"))
    assert.equal("UpgradePlan", p.kind)
    local code2, text = upgrade({ "plan", "v1.36.0" })
    assert.equal(0, code2, text)
    assert.matches("kube%-apiserver%s+cp1%s+v1%.35%.4%s+v1%.36%.0", text)
  end)

  it("refuses two minors up and a downgrade across minors", function()
    local code, out = upgrade({ "apply", "v1.37.0", "--yes" })
    assert.are_not.equal(0, code)
    assert.matches("only 1 minor version at a time", out)
    code, out = upgrade({ "apply", "v1.34.0", "--yes" })
    assert.are_not.equal(0, code)
    assert.matches("downgrading across minor versions", out)
  end)

  it("--dry-run prints the manifest diff and changes nothing", function()
    local before = h.read(K .. "/manifests/kube-apiserver.yaml")
    local text = cluster_config()
    set_cluster_config((text:gsub("apiServer: {}", "apiServer:\n  extraArgs:\n  - name: event-ttl\n    value: 3h0m0s")))
    local code, out = upgrade({ "apply", "v1.35.4", "--dry-run" })
    set_cluster_config(text)
    assert.equal(0, code, out)
    assert.matches("%+    %- %-%-event%-ttl=3h0m0s", out)
    assert.equal(before, h.read(K .. "/manifests/kube-apiserver.yaml"))
  end)

  it("reconfigures to the same version: manifests, backups, renewed certificates, CRI socket and kubelet.conf migrations", function()
    local old_api = cert(K .. "/pki/apiserver.crt")
    local ca = cert(K .. "/pki/ca.crt")
    -- kubeadm-config edited: an extraArg, a new certSAN, and a control-plane endpoint other than the
    -- local URL (127.0.0.1 reaches the same apiserver inside the node; it becomes a SAN on renewal)
    local text = cluster_config()
    text = text:gsub("apiServer: {}", "apiServer:\n  certSANs:\n  - upgrade.example.test\n  extraArgs:\n  - name: event-ttl\n    value: 2h0m0s")
    text = text .. "controlPlaneEndpoint: 127.0.0.1:6443\n"
    set_cluster_config(text)
    -- a node from before NodeLocalCRISocket: the socket in kubeadm-flags.env, no instance file, the annotation
    local flags_path = node .. "/var/lib/kubelet/kubeadm-flags.env"
    h.write(flags_path, 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock"\n')
    os.remove(node .. "/var/lib/kubelet/instance-config.yaml")
    local rc, out = kubectl({ "annotate", "node", "cp1", "kubeadm.alpha.kubernetes.io/cri-socket=unix:///var/run/containerd/containerd.sock" })
    assert.equal(0, rc, out)
    -- a kubelet.conf that points to the control-plane endpoint (pre KEP-4471)
    local kc = h.read(K .. "/kubelet.conf")
    h.write(K .. "/kubelet.conf", (kc:gsub("server: https://" .. IP:gsub("%.", "%%.") .. ":6443", "server: https://127.0.0.1:6443")))
    assert.matches("https://127%.0%.0%.1:6443", h.read(K .. "/kubelet.conf"))

    os.execute("sleep 1") -- a NotBefore/NotAfter second apart from init's
    local code, log, secs = upgrade({ "apply", "v1.35.4", "--yes" })
    print(("\n    upgrade apply (apiserver reconfigured) took %ds"):format(secs))
    assert.equal(0, code, log)
    assert.matches("SUCCESS!", log)

    local m = h.read(K .. "/manifests/kube-apiserver.yaml")
    assert.matches("%-%-event%-ttl=2h0m0s", m)
    local backups = {}
    for d in io.popen("ls " .. h.q(K .. "/tmp")):lines() do
      if d:match("^kubeadm%-backup%-manifests%-") then backups[#backups + 1] = d end
    end
    assert.is_true(#backups >= 1)
    local backup = h.read(K .. "/tmp/" .. backups[#backups] .. "/kube-apiserver.yaml")
    assert.is_not_nil(backup)
    assert.is_nil(backup:match("event%-ttl"))

    local new_api = cert(K .. "/pki/apiserver.crt")
    assert.is_true(new_api.not_after > old_api.not_after)
    assert.equal(ca.subject.cn, new_api.issuer and new_api.issuer.cn or ca.subject.cn)
    assert.is_true(pki.read_cert(h.read(K .. "/pki/apiserver.crt")):verify(pki.read_cert(h.read(K .. "/pki/ca.crt"))) ~= false)
    local sans = table.concat(new_api.dns, ",")
    assert.matches("upgrade%.example%.test", sans)
    assert.matches("127%.0%.0%.1", table.concat(new_api.ips, ","))
    assert.same(ca.not_after, cert(K .. "/pki/ca.crt").not_after)

    -- seed 002: instance-config.yaml from the flag, which is gone from kubeadm-flags.env
    assert.equal('containerRuntimeEndpoint: "unix:///var/run/containerd/containerd.sock"\n',
      h.read(node .. "/var/lib/kubelet/instance-config.yaml"))
    assert.is_nil(h.read(flags_path):match("container%-runtime%-endpoint"))
    local n = kjson({ "get", "node", "cp1" })
    assert.is_nil((n.metadata.annotations or {})["kubeadm.alpha.kubernetes.io/cri-socket"])
    -- seed 001: no ClusterStatus
    local cm = kjson({ "-n", "kube-system", "get", "configmap", "kubeadm-config" })
    assert.is_nil(cm.data.ClusterStatus)
    assert.matches("upgrade%.example%.test", cm.data.ClusterConfiguration)
    -- seed 000: kubelet.conf from the endpoint to the local API server
    assert.matches("server: https://" .. IP:gsub("%.", "%%.") .. ":6443", h.read(K .. "/kubelet.conf"))
    assert.is_true(readyz())
    local ready = false
    for _, c in ipairs(n.status.conditions or {}) do if c.type == "Ready" then ready = c.status == "True" end end
    assert.is_true(ready)
  end)

  it("rolls a broken kube-apiserver flag back and the cluster is healthy with the old manifest", function()
    local before = h.read(K .. "/manifests/kube-apiserver.yaml")
    local text = cluster_config()
    set_cluster_config((text:gsub("  extraArgs:\n", "  extraArgs:\n  - name: no-such-flag\n    value: \"1\"\n", 1)))
    h.write(K .. "/tmp/upgrade-fast.yaml", yaml.encode { apiVersion = "kubeadm.k8s.io/v1beta4", kind = "UpgradeConfiguration",
      apply = { kubernetesVersion = "v1.35.4", etcdUpgrade = false }, timeouts = { upgradeManifests = "20s", controlPlaneComponentHealthCheck = "20s" } })
    -- etcdUpgrade false: the shorter health-check timeout would also shorten etcd's startup probe
    local code, log, secs = upgrade({ "apply", "--config", "/etc/kubernetes/tmp/upgrade-fast.yaml", "--yes" })
    print(("\n    upgrade apply with a broken flag failed and rolled back in %ds"):format(secs))
    set_cluster_config(text)
    assert.are_not.equal(0, code)
    assert.matches("the upgrade of kube%-apiserver failed", log)
    assert.matches("previous manifests were restored", log)
    assert.equal(before, h.read(K .. "/manifests/kube-apiserver.yaml"))
    assert.is_true(readyz())
  end)

  it("upgrade node on the control plane converges with nothing to change", function()
    local code, log = upgrade({ "node" })
    assert.equal(0, code, log)
    assert.matches("Current and new manifests of kube%-apiserver are equal", log)
    assert.is_true(readyz())
  end)
end)
