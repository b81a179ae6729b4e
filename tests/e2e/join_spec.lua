-- Joins on the shared HA lab: 3 control planes + 2 workers made by the stock init and join flows
-- (plus one spare node, s1, with a kubelet but not joined, for the joins that must fail).
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"


local function etcd_members(st)
  local code, out = fixture.exec(st, "cp1", { "etcdctl", "--endpoints", "https://127.0.0.1:2379",
    "--cacert", "/etc/kubernetes/pki/etcd/ca.crt", "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt",
    "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key", "member", "list", "-w", "json" })
  assert.equal(0, code, out)
  return cjson.decode(out).members
end

describe("join (3 control planes + 2 workers)", function()
  local st
  setup(function() st = fixture.get("ha") end)

  it("has all five Nodes Ready, control planes labeled and tainted", function()
    local rc, out = fixture.kubectl(st, { "get", "nodes", "-o", "json" })
    assert.equal(0, rc, out)
    local ready = {}
    for _, n in ipairs(cjson.decode(out).items) do
      for _, c in ipairs(n.status.conditions) do
        if c.type == "Ready" and c.status == "True" then ready[n.metadata.name] = n end
      end
    end
    for _, name in ipairs { "cp1", "cp2", "cp3", "w1", "w2" } do assert.truthy(ready[name], name .. " Ready") end
    for _, name in ipairs { "cp2", "cp3" } do
      local n = ready[name]
      assert.equal("", n.metadata.labels["node-role.kubernetes.io/control-plane"])
      assert.equal("node-role.kubernetes.io/control-plane", n.spec.taints[1].key)
    end
    assert.is_nil(ready.w1.metadata.labels["node-role.kubernetes.io/control-plane"])
  end)

  it("has three started voting etcd members, one per control plane (learners promoted)", function()
    local members = etcd_members(st)
    assert.equal(3, #members)
    local names = {}
    for _, m in ipairs(members) do
      assert.is_not_true(m.isLearner, m.name)
      names[#names + 1] = m.name
    end
    table.sort(names)
    assert.same({ "cp1", "cp2", "cp3" }, names)
  end)

  it("points each control plane's kubelet at its own apiserver and the workers at the endpoint (KEP-4471)", function()
    for _, n in ipairs(st.nodes) do
      if n.role ~= "spare" then
        local kc = yaml.decode(h.read(n.root .. "/etc/kubernetes/kubelet.conf"))[1]
        local server = kc.clusters[1].cluster.server
        if n.role == "control-plane" then
          assert.equal("https://" .. n.ip .. ":6443", server, n.name)
        else
          assert.equal("https://" .. st.endpoint, server, n.name)
        end
      end
    end
  end)

  it("carries the KEP-2506 annotations on every kube-apiserver and etcd mirror pod", function()
    local rc, out = fixture.kubectl(st, { "-n", "kube-system", "get", "pods", "-o", "json" })
    assert.equal(0, rc, out)
    local seen = {}
    for _, p in ipairs(cjson.decode(out).items) do
      local a, node = p.metadata.annotations or {}, fixture.node(st, p.spec.nodeName)
      if p.metadata.labels.component == "kube-apiserver" then
        assert.equal(node.ip .. ":6443", a["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"])
        seen[#seen + 1] = p.metadata.name
      elseif p.metadata.labels.component == "etcd" then
        assert.equal("https://" .. node.ip .. ":2379", a["kubeadm.kubernetes.io/etcd.advertise-client-urls"])
        seen[#seen + 1] = p.metadata.name
      end
    end
    assert.equal(6, #seen)
  end)

  describe("on the spare node", function()
    local spare, pin, id
    local function join_file(token, extra)
      local doc = {
        apiVersion = "kubeadm.k8s.io/v1beta4", kind = "JoinConfiguration",
        discovery = { bootstrapToken = { token = token, apiServerEndpoint = st.endpoint, caCertHashes = { pin } } },
        nodeRegistration = { name = "s1" },
        timeouts = { discovery = "8s" },
      }
      for k, v in pairs(extra or {}) do doc.discovery.bootstrapToken[k] = v end
      local path = st.dir .. "/s1-negative.yaml"
      h.write(path, yaml.encode(doc))
      return path
    end
    local function nothing_left()
      local p = io.popen("find " .. h.q(spare.root .. "/etc/kubernetes") .. " " .. h.q(spare.root .. "/var/lib/kubelet") ..
        " -type f 2>/dev/null | wc -l")
      local n = p:read("l")
      p:close()
      assert.equal("0", n, "files left on s1")
      assert.equal(3, #etcd_members(st))
    end

    setup(function()
      spare = fixture.node(st, "s1")
      pin = pki.read_cert(h.read(st.nodes[1].root .. "/etc/kubernetes/pki/ca.crt")):pin()
      id = st.token:match("^(%w+)%.")
    end)

    it("refuses a wrong CA hash, naming the key it found", function()
      local bad = "sha256:" .. ("0"):rep(64)
      local code, out, err = fixture.exec(st, "s1", { "moonadm", "join", "--config",
        join_file(st.token, { caCertHashes = { bad } }) })
      assert.equal(1, code, out)
      assert.matches("none of the public keys \"" .. pin .. "\" are pinned", err, 1, true)
      nothing_left()
    end)

    it("refuses a cluster-info whose signature does not verify with the token (forged or wrong secret)", function()
      local code, out, err = fixture.exec(st, "s1", { "moonadm", "join", "--config",
        join_file(id .. "." .. ("x"):rep(16)) })
      assert.equal(1, code, out)
      assert.matches("failed to verify JWS signature of received cluster info object", err, 1, true)
      nothing_left()
    end)

    it("refuses an unknown or expired token once discovery times out", function()
      local code, out, err = fixture.exec(st, "s1", { "moonadm", "join", "--config", join_file("zzzzzz.0123456789abcdef") })
      assert.equal(1, code, out)
      assert.matches("there is no JWS signed token in the cluster-info ConfigMap", err, 1, true)
      assert.matches('token id "zzzzzz" is invalid for this cluster or it has expired', err, 1, true)
      nothing_left()
    end)

    it("lets the reference kubeadm discover the moonadm cluster with moonadm's token and CA hash (join --dry-run)", function()
      local code, out = fixture.exec(st, "s1", { "kubeadm", "join", st.endpoint, "--token", st.token,
        "--discovery-token-ca-cert-hash", pin, "--dry-run", "--ignore-preflight-errors=all", "--node-name", "s1" })
      assert.matches("[preflight] Reading configuration from the \"kubeadm-config\" ConfigMap", out, 1, true)
      assert.equal(0, code, out)
    end)
  end)
end)
