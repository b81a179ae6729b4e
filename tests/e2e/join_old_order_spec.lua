-- moonadm's experiment: a 2-control-plane lab joined in kubeadm's old order
-- (ControlPlaneKubeletLocalMode=false): the kubelets talk to the control-plane endpoint, the gate is
-- never written into kubeadm-config (kubeadm v1.35 could not read it), and joins follow the cluster.
-- With NodeLocalCRISocket=false, so that every joined node (control plane and worker, in this
-- order; parity_spec.lua has the default order) is seen to carry the CRI socket annotation.
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"
local yaml = require "moonadm.yaml"

describe("join in the old order (ControlPlaneKubeletLocalMode=false)", function()
  local st
  setup(function()
    fixture.LABS.old = { name = "e2eold", subnet = "10.252.3",
      args = { "--control-planes", "2", "--workers", "1",
        "--feature-gates", "ControlPlaneKubeletLocalMode=false,NodeLocalCRISocket=false" } }
    st = fixture.get("old")
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", "e2eold" } end)

  it("brings both control planes and the worker up, each kubelet on the control-plane endpoint", function()
    for _, n in ipairs(st.nodes) do
      local kc = yaml.decode(h.read(n.root .. "/etc/kubernetes/kubelet.conf"))[1]
      assert.equal("https://" .. st.endpoint, kc.clusters[1].cluster.server, n.name)
    end
    local rc, out = fixture.kubectl(st, { "get", "nodes", "-o", "json" })
    assert.equal(0, rc, out)
    assert.equal(3, #cjson.decode(out).items)
  end)

  it("puts the CRI socket annotation on every node, joined ones too (NodeLocalCRISocket=false)", function()
    local rc, out = fixture.kubectl(st, { "get", "nodes", "-o", "json" })
    assert.equal(0, rc, out)
    local seen = {}
    for _, node in ipairs(cjson.decode(out).items) do
      seen[#seen + 1] = node.metadata.name
      assert.equal("unix:///var/run/containerd/containerd.sock",
        (node.metadata.annotations or {})["kubeadm.alpha.kubernetes.io/cri-socket"], node.metadata.name)
    end
    table.sort(seen)
    assert.same({ "cp1", "cp2", "w1" }, seen)
  end)

  it("keeps the gate out of kubeadm-config and carries the experiment in an annotation", function()
    local rc, out = fixture.kubectl(st, { "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "json" })
    assert.equal(0, rc, out)
    local cm = cjson.decode(out)
    assert.is_nil(cm.data.ClusterConfiguration:find("ControlPlaneKubeletLocalMode", 1, true))
    assert.equal("ControlPlaneKubeletLocalMode=false", cm.metadata.annotations["moonadm.io/experimental-feature-gates"])
    -- and the reference kubeadm still reads the cluster's configuration
    local code, kout = fixture.exec(st, "cp1", { "kubeadm", "config", "view", "--kubeconfig", "/etc/kubernetes/admin.conf" })
    if code ~= 0 then -- `config view` is gone in newer kubeadm; any command that reads kubeadm-config will do
      code, kout = fixture.exec(st, "cp1", { "kubeadm", "certs", "check-expiration", "--kubeconfig", "/etc/kubernetes/admin.conf" })
    end
    assert.equal(0, code, kout)
  end)

  it("has two voting etcd members", function()
    local code, out = fixture.exec(st, "cp1", { "etcdctl", "--endpoints", "https://127.0.0.1:2379",
      "--cacert", "/etc/kubernetes/pki/etcd/ca.crt", "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt",
      "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key", "member", "list", "-w", "json" })
    assert.equal(0, code, out)
    local members = cjson.decode(out).members
    assert.equal(2, #members)
    for _, m in ipairs(members) do assert.is_not_true(m.isLearner) end
  end)
end)
