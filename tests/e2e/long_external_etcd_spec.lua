-- External etcd (make test-long): a 3-member etcd cluster run apart from the control planes; the
-- control planes use it through etcd.external and a joining control plane gets the client
-- certificate through kubeadm-certs, without touching etcd membership.
local fixture = require "lab_fixture"
local h = require "helpers"

describe("control planes on an external etcd cluster", function()
  local st
  setup(function()
    fixture.LABS.ext = { name = "e2eext", subnet = "10.252.5", args = { "--control-planes", "2", "--external-etcd", "3" } }
    st = fixture.get("ext")
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", "e2eext" } end)

  it("has both control planes Ready, with no stacked etcd", function()
    local rc, out = fixture.kubectl(st, { "get", "nodes", "-o", "name" })
    assert.equal(0, rc, out)
    assert.equal("node/cp1\nnode/cp2\n", out)
    rc, out = fixture.kubectl(st, { "-n", "kube-system", "get", "pods", "-l", "component=etcd", "-o", "name" })
    assert.equal(0, rc, out)
    assert.equal("", out)
    for _, n in ipairs(st.nodes) do
      assert.is_nil(h.read(n.root .. "/etc/kubernetes/manifests/etcd.yaml"), n.name)
      local m = h.read(n.root .. "/etc/kubernetes/manifests/kube-apiserver.yaml")
      assert.truthy(m:find("--etcd-servers=" .. table.concat(st.external.endpoints, ","), 1, true), n.name)
    end
  end)

  it("gave the joined control plane the external client certificate through kubeadm-certs", function()
    local a = h.read(st.nodes[1].root .. "/etc/kubernetes/pki/apiserver-etcd-client.crt")
    local b = h.read(st.nodes[2].root .. "/etc/kubernetes/pki/apiserver-etcd-client.crt")
    assert.truthy(a)
    assert.equal(a, b)
  end)

  it("left the etcd membership alone: still the three external members", function()
    local e1 = st.etcd[1]
    local p = io.popen(("ip netns exec %s %s --endpoints https://127.0.0.1:2379 --cacert %s --cert %s --key %s member list 2>&1")
      :format(h.q(st.name .. "-e1"), h.q(fixture.bin_dir .. "/etcdctl"), h.q(e1.root .. "/etc/etcd/pki/ca.crt"),
        h.q(st.nodes[1].root .. "/etc/kubernetes/pki/apiserver-etcd-client.crt"),
        h.q(st.nodes[1].root .. "/etc/kubernetes/pki/apiserver-etcd-client.key")))
    local out = p:read("a")
    p:close()
    local n = 0
    for _ in out:gmatch("started") do n = n + 1 end
    assert.equal(3, n, out)
    assert.falsy(out:find("cp%d"))
  end)
end)
