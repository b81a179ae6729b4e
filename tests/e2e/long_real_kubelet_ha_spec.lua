-- The real-kubelet lab, HA (issue 17; `make test-long`): 3 control planes + 1 worker on containerd
-- and the real kubelet. Each joining control plane's kubelet bootstraps against its local apiserver
-- (KEP-4471's order), every etcd member is a voter, every Node Ready; `upgrade apply` with a changed
-- apiserver flag makes the real kubelet replace the container (a new mirror-pod hash, a new container
-- id), and a broken flag is rolled back with the cluster healthy.
local cjson = require "cjson"
local yaml = require "moonadm.yaml"
local fixture = require "lab_fixture"
local h = require "helpers"

local NAME, SUBNET = "e2erealha", "10.252.10"

describe("the real-kubelet lab, HA (own lab " .. NAME .. ", 3 control planes + 1 worker)", function()
  local code, out, err, st, t_up
  local function kjson(args) return fixture.kjson(st, args) end
  local function apiserver_container(node)
    local rc, o = fixture.crictl(st, node, { "ps", "--name", "kube-apiserver", "--state", "running", "-q" })
    assert.equal(0, rc, o)
    return (o:match("%x+"))
  end
  local function set_cluster_config(text)
    local cm = kjson { "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "json" }
    cm.data.ClusterConfiguration = text
    local tmp = h.tmpdir() .. "/cm.json"
    h.write(tmp, cjson.encode(cm))
    local rc, o = fixture.kubectl(st, { "replace", "-f", tmp })
    assert.equal(0, rc, o)
  end
  local function cluster_config()
    return kjson({ "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "json" }).data.ClusterConfiguration
  end

  setup(function()
    local t0 = os.time()
    code, out, err = h.moonadm { "lab", "up", "--name", NAME, "--subnet", SUBNET, "--kubelet", "real",
      "--control-planes", "3", "--workers", "1", "--ready-timeout", "300" }
    t_up = os.time() - t0
    if code == 0 then st = assert(fixture.state(NAME), "no lab.json") end
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", NAME } end)

  it("comes up with every Node Ready; each control plane's kubelet talks to its own apiserver", function()
    assert.equal(0, code, out .. err)
    io.stderr:write(("\n[figure] lab up --kubelet real, 3 control planes + 1 worker: %ds\n"):format(t_up))
    local nodes = kjson { "get", "nodes", "-o", "json" }
    assert.equal(4, #nodes.items)
    for _, n in ipairs(st.nodes) do
      if n.role == "control-plane" then
        local kc = h.read(n.root .. "/etc/kubernetes/kubelet.conf")
        assert.matches("server: https://" .. n.ip:gsub("%.", "%%.") .. ":6443", kc, 1, false)
      end
    end
  end)

  it("has every etcd member a voter (the learners were promoted)", function()
    assert.equal(0, code, out .. err)
    local rc, o = fixture.exec(st, "cp1", { "etcdctl", "--endpoints", "https://127.0.0.1:2379", "--cacert",
      "/etc/kubernetes/pki/etcd/ca.crt", "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt", "--key",
      "/etc/kubernetes/pki/etcd/healthcheck-client.key", "member", "list", "-w", "json" })
    assert.equal(0, rc, o)
    local members = cjson.decode(o).members
    assert.equal(3, #members)
    for _, m in ipairs(members) do assert.is_not_true(m.isLearner, m.name) end
  end)

  it("upgrade apply with a changed apiserver flag: the real kubelet replaces the container", function()
    assert.equal(0, code, out .. err)
    local before_id = apiserver_container("cp1")
    local before = kjson { "get", "pod", "-n", "kube-system", "kube-apiserver-cp1", "-o", "json" }
    local text = cluster_config()
    set_cluster_config((text:gsub("apiServer: {}", "apiServer:\n  extraArgs:\n  - name: event-ttl\n    value: 2h0m0s")))
    local ucode, uout, uerr = fixture.exec(st, "cp1", { "moonadm", "upgrade", "apply", "v1.35.4", "--yes" })
    assert.equal(0, ucode, uout .. uerr)
    assert.matches("SUCCESS!", uout)
    local after = kjson { "get", "pod", "-n", "kube-system", "kube-apiserver-cp1", "-o", "json" }
    assert.are_not.equal(before.metadata.annotations["kubernetes.io/config.hash"],
      after.metadata.annotations["kubernetes.io/config.hash"])
    local found
    for _, a in ipairs(after.spec.containers[1].command) do found = found or a == "--event-ttl=2h0m0s" end
    assert.is_true(found)
    assert.are_not.equal(before_id, apiserver_container("cp1"))
  end)

  it("a broken apiserver flag is rolled back and the apiserver serves again", function()
    assert.equal(0, code, out .. err)
    local m = st.nodes[1].root .. "/etc/kubernetes/manifests/kube-apiserver.yaml"
    local before = h.read(m)
    local text = cluster_config()
    set_cluster_config((text:gsub("  extraArgs:\n", "  extraArgs:\n  - name: no-such-flag\n    value: \"1\"\n", 1)))
    h.write(st.nodes[1].root .. "/etc/kubernetes/tmp/upgrade-fast.yaml", yaml.encode { apiVersion = "kubeadm.k8s.io/v1beta4",
      kind = "UpgradeConfiguration", apply = { kubernetesVersion = "v1.35.4", etcdUpgrade = false },
      timeouts = { upgradeManifests = "60s", controlPlaneComponentHealthCheck = "30s" } })
    local ucode, uout, uerr = fixture.exec(st, "cp1", { "moonadm", "upgrade", "apply", "--config",
      "/etc/kubernetes/tmp/upgrade-fast.yaml", "--yes" })
    set_cluster_config(text)
    assert.are_not.equal(0, ucode)
    assert.matches("previous manifests were restored", uout .. uerr)
    assert.equal(before, h.read(m))
    local deadline = os.time() + 120
    local rc, o
    repeat
      rc, o = fixture.kubectl(st, { "get", "--raw", "/readyz" }, st.nodes[1].root .. "/etc/kubernetes/admin.conf")
      if rc == 0 then break end
      os.execute("sleep 1")
    until os.time() > deadline
    assert.equal(0, rc, o)
  end)
end)
