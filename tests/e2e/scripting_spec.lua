-- Scriptability on the lab: a site phase inserted after kubelet-start on a worker join runs once,
-- at that point of the flow, and its effect is visible through the API; the KEP-4471 experiment
-- from docs/scripting.md ("reorder a join flow") runs a 2-control-plane lab in both join orders.
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local core = require "moonadm.core"


-- Brings a lab up and returns its state and how long `lab up` took.
local function up(key, name, subnet, args)
  fixture.LABS[key] = { name = name, subnet = subnet, args = args }
  local t0 = core.monotonic()
  local st = fixture.get(key)
  return st, core.monotonic() - t0
end

local function journal_phases(node)
  local text = h.read(node.root .. "/var/lib/moonadm/journal/join.json")
  assert.is_string(text, node.name .. ": no journal")
  local j = cjson.decode(text)
  return j.phases
end

describe("site phases and reordered flows on the lab", function()
  local new, old, t_new, t_old
  setup(function()
    new, t_new = up("dev12", "dev12", "10.253.12", { "--control-planes", "2", "--spares", "1" })
  end)
  teardown(function()
    h.moonadm { "lab", "down", "--name", "dev12" }
    h.moonadm { "lab", "down", "--name", "dev12b" }
  end)

  it("runs a site phase inserted after kubelet-start on a worker join, once, at that point", function()
    local s1 = assert(fixture.node(new, "s1"))
    -- a spare is a host made ready for Kubernetes: IPv4 forwarding on (kubeadm's join preflight checks it)
    local fcode, fwd, ferr = fixture.exec(new, "s1", { "cat", "/proc/sys/net/ipv4/ip_forward" })
    assert.equal(0, fcode, fwd .. ferr)
    assert.equal("1", fwd:match("%S+"))
    local cp1 = new.nodes[1]
    local pin = pki.read_cert(h.read(cp1.root .. "/etc/kubernetes/pki/ca.crt")):pin()
    local file = new.dir .. "/s1-site-join.yaml"
    h.write(file, yaml.encode {
      apiVersion = "kubeadm.k8s.io/v1beta4", kind = "JoinConfiguration",
      discovery = { bootstrapToken = { token = new.token, apiServerEndpoint = new.endpoint or (cp1.ip .. ":6443"),
        caCertHashes = { pin } } },
      nodeRegistration = { name = "s1", criSocket = "unix:///var/run/containerd/containerd.sock" },
    })
    -- provisioning's facts and a credential that may taint (here: the lab's admin)
    h.write(s1.root .. "/etc/kubernetes/site/node-facts.yaml", "zone: edge\ndedicated: ingress\n")
    h.write(s1.root .. "/etc/kubernetes/site/labeler.conf", h.read(new.dir .. "/super-admin.conf"))
    os.execute("chmod 0600 " .. h.q(s1.root .. "/etc/kubernetes/site/labeler.conf"))
    local code, out, err = fixture.exec(new, "s1", { "moonadm", "join", "--config", file, "--output", "json",
      "--phase-file", h.top .. "/docs/examples/label-and-taint.lua", "--phase-add", "label-and-taint:after=kubelet-start" })
    assert.equal(0, code, out .. err)
    local events, starts = {}, 0
    for line in out:gmatch("[^\n]+") do
      local ok, ev = pcall(cjson.decode, line)
      if ok and type(ev) == "table" and ev.type and ev.phase then
        events[#events + 1] = ev.type .. ":" .. ev.phase
        if ev.type == "phase-start" and ev.phase == "label-and-taint" then starts = starts + 1 end
      end
    end
    assert.equal(1, starts, table.concat(events, "\n"))
    local function at(e) for i, x in ipairs(events) do if x == e then return i end end end
    assert.truthy(at("phase-end:kubelet-start") < at("phase-start:label-and-taint"))
    assert.truthy(at("phase-end:label-and-taint") < at("phase-start:kubelet-wait-bootstrap"))
    -- its effect, seen by kubectl
    local rc, kout = fixture.kubectl(new, { "get", "node", "s1", "-o", "json" })
    assert.equal(0, rc, kout)
    local node = cjson.decode(kout)
    assert.equal("edge", node.metadata.labels["topology.kubernetes.io/zone"])
    assert.equal("ingress", node.metadata.labels["site.example.com/dedicated"])
    assert.equal("moonadm-site-phase", node.metadata.labels["site.example.com/labelled-by"])
    local tainted = false
    for _, t in ipairs(node.spec.taints or {}) do
      if t.key == "site.example.com/dedicated" and t.value == "ingress" and t.effect == "NoSchedule" then tainted = true end
    end
    assert.is_true(tainted)
    local before = node.metadata.annotations["site.example.com/phases-done-before"]
    assert.matches("kubelet-start", before, 1, true)
    assert.is_nil(before:find("kubelet-wait-bootstrap", 1, true))
    -- the journal has it once, and `phases join --root` shows it next to the stock phases
    assert.truthy(journal_phases(s1)["label-and-taint"])
    code, out = h.moonadm { "phases", "join", "--root", s1.root, "--phase-file", h.top .. "/docs/examples/label-and-taint.lua",
      "--phase-add", "label-and-taint:after=kubelet-start", "-o", "json" }
    assert.equal(0, code, out)
    local seen
    for _, r in ipairs(cjson.decode(out)) do if r.path == "label-and-taint" then seen = r end end
    assert.is_true(seen.journal.done)
  end)

  it("runs the KEP-4471 experiment: a 2-control-plane join in the stock order and in the old order", function()
    -- stock order: etcd-join, then kubelet-wait-bootstrap, then control-plane-join
    local p = journal_phases(assert(fixture.node(new, "cp2")))
    assert.truthy(p["etcd-join"])
    assert.truthy(p["kubelet-wait-bootstrap"])
    assert.is_nil(p["control-plane-join/etcd"])
    -- old order (gate off): the kubelet bootstraps through the endpoint, control-plane-join/etcd adds the member after
    old, t_old = up("dev12b", "dev12b", "10.253.13",
      { "--control-planes", "2", "--feature-gates", "ControlPlaneKubeletLocalMode=false" })
    p = journal_phases(assert(fixture.node(old, "cp2")))
    assert.truthy(p["control-plane-join/etcd"])
    assert.is_nil(p["etcd-join"])
    assert.truthy(p["kubelet-wait-bootstrap"])
    for _, st in ipairs { new, old } do
      local rc, out = fixture.kubectl(st, { "get", "nodes", "-o", "json" })
      assert.equal(0, rc, out)
      local cps = 0
      for _, n in ipairs(cjson.decode(out).items) do
        if n.metadata.labels["node-role.kubernetes.io/control-plane"] then cps = cps + 1 end
      end
      assert.equal(2, cps, st.name)
    end
    -- the invalid combination is refused statically on the joining node's own binary
    local code, _, err = fixture.exec(old, "cp2", { "moonadm", "phases", "check", "join", "--control-plane",
      "--kubelet-server", "local", "--feature-gates", "ControlPlaneKubeletLocalMode=false" })
    assert.equal(1, code)
    assert.matches('"kubelet-wait-bootstrap" requires "local-etcd"', err, 1, true)
    io.stderr:write(("\n[timing] lab up (init + 1 control-plane join + spare) stock order: %.1fs; "
      .. "(init + 1 control-plane join) old order: %.1fs\n"):format(t_new, t_old))
  end)
end)
