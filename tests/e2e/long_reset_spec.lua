-- moonadm reset of one of 3 control planes on a lab of its own (dev9, 10.253.9.0/24): its etcd
-- member leaves (2 voting members remain), its files and pods are gone, the cluster stays ready,
-- a second reset changes nothing, and the node joins again with the lab's join config.
local cjson = require "cjson"
local core = require "moonadm.core"
local fixture = require "lab_fixture"
local h = require "helpers"

local LAB, SUBNET = "dev9", "10.253.9"
local dir = h.top .. "/.lab/" .. LAB
local kubectl = h.top .. "/.lab/bin/kubectl"

local function exec(nodename, argv)
  local args = { "lab", "exec", nodename, "--name", LAB, "--" }
  for _, a in ipairs(argv) do args[#args + 1] = a end
  local code, out, err = h.moonadm(args)
  return code, out .. err
end

local function members()
  local code, out = exec("cp1", { "etcdctl", "--endpoints", "https://127.0.0.1:2379",
    "--cacert", "/etc/kubernetes/pki/etcd/ca.crt", "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt",
    "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key", "member", "list", "-w", "json" })
  assert.equal(0, code, out)
  return cjson.decode(out:match("{.*}")).members
end

local function voting(list)
  local names = {}
  for _, m in ipairs(list) do if not m.isLearner then names[#names + 1] = m.name end end
  table.sort(names)
  return names
end

local function readyz()
  local p = io.popen(h.q(kubectl) .. " --kubeconfig " .. h.q(dir .. "/super-admin.conf") .. " get --raw /readyz 2>&1")
  local out = p:read("a")
  p:close()
  return out
end

local function lab_status()
  local code, out = h.moonadm { "lab", "status", "--name", LAB, "-o", "json" }
  assert.equal(0, code, out)
  local st = cjson.decode(out)
  for _, n in ipairs(st.nodes) do st[n.name] = n end
  return st
end

local function snapshot(nodename) return fixture.node_files(dir .. "/" .. nodename) end

describe("reset of one of 3 control planes", function()
  setup(function()
    local code, out, err = h.moonadm { "lab", "up", "--name", LAB, "--subnet", SUBNET, "--control-planes", "3" }
    assert(code == 0, "lab up failed:\n" .. out .. err)
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", LAB } end)

  it("removes cp3's member, its files and pods; the cluster stays ready", function()
    assert.same({ "cp1", "cp2", "cp3" }, voting(members()))
    local t0 = core.monotonic()
    local code, out = exec("cp3", { "moonadm", "reset", "--force" })
    local took = core.monotonic() - t0
    assert.equal(0, code, out)
    print(("\n[figure] reset of cp3 (one of 3 control planes): %.1f s wall"):format(took))
    assert.matches("[etcd] Removed etcd member", out, 1, true)
    assert.same({ "cp1", "cp2" }, voting(members()))
    assert.equal(2, #members())
    for _, gone in ipairs { "/etc/kubernetes/manifests/etcd.yaml", "/etc/kubernetes/manifests/kube-apiserver.yaml",
      "/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/pki/ca.crt",
      "/var/lib/kubelet/config.yaml", "/var/lib/kubelet/kubeadm-flags.env", "/var/lib/kubelet/pki",
      "/var/lib/etcd/member" } do
      assert.is_nil(io.open(dir .. "/cp3" .. gone, "r"), gone)
    end
    local st = lab_status()
    assert.same({}, st.cp3.pods)
    assert.is_true(st.cp3.kubelet_alive)
    assert.equal(4, #st.cp1.pods)
    local deadline, ok = core.monotonic() + 30, nil
    repeat ok = readyz():match("^ok") if not ok then core.sleep(0.5) end until ok or core.monotonic() > deadline
    assert.truthy(ok, readyz())
  end)

  it("a second reset succeeds and changes nothing", function()
    local before = snapshot("cp3")
    local code, out = exec("cp3", { "moonadm", "reset", "--force" })
    assert.equal(0, code, out)
    assert.not_matches("Deleted contents", out, 1, true)
    assert.equal(before, snapshot("cp3"))
    assert.same({ "cp1", "cp2" }, voting(members()))
  end)

  it("cp3 joins again with the lab's join config (after kubeadm's `kubectl delete node`)", function()
    -- reset deletes no API object: kubeadm's join refuses a Node of that name still Ready, and the
    -- documented removal is drain, reset, delete node.
    local p = io.popen(h.q(kubectl) .. " --kubeconfig " .. h.q(dir .. "/super-admin.conf") .. " delete node cp3 2>&1")
    p:read("a")
    p:close()
    local code, out = exec("cp3", { "moonadm", "join", "--config", dir .. "/cp3-join.yaml" })
    assert.equal(0, code, out)
    assert.same({ "cp1", "cp2", "cp3" }, voting(members()))
    assert.equal(4, #lab_status().cp3.pods)
    assert.matches("^ok", readyz())
  end)
end)
