-- Certificates renewed before they expire, unattended (issue 43, item 3) on a 3-control-plane lab
-- behind its balancer: `certs renew all --if-expiring-within D` renews only what is due, restarts
-- the static Pods that read the renewed certificates one node and one component at a time while a
-- poller reads /readyz through the endpoint, never restarts etcd while the others lack a quorum,
-- and a run killed at any write converges when run again. `check-expiration --warn-within` exits 3
-- when something is due.
local h = require "helpers"
local fixture = require "lab_fixture"
local common = require "crash_common"
local pki = require "moonadm.pki"
local core = require "moonadm.core"

local LAB = { name = "e2ern", subnet = "10.252.44" }
local RENEW_ALL = { "certs", "renew", "all", "--if-expiring-within", "9000h" } -- a year's certificate is due
local NOTHING_DUE = { "certs", "renew", "all", "--if-expiring-within", "720h" }
local CPS = { "cp1", "cp2", "cp3" }
local PENDING = "/etc/kubernetes/tmp/moonadm-restart-pending"
local ASIDE = "/etc/kubernetes/tmp/moonadm-restart-aside/kube-apiserver.yaml"

local st

local function run(node, argv, env)
  local a = { h.bin }
  for _, x in ipairs(argv) do a[#a + 1] = x end
  return common.exec(st, node, a, env)
end

local function node_dir(node) return st.dir .. "/" .. node end

-- Runs a Lua chunk with moonadm's modules on a node (the lab's nodes see the host's files).
local function lua_on(node, chunk)
  local dir = h.tmpdir()
  local f = assert(io.open(dir .. "/chunk.lua", "w"))
  f:write(chunk)
  f:close()
  local code, out = run(node, { "lua", dir .. "/chunk.lua" })
  h.rmrf(dir)
  return code, out
end

-- Whether nothing listens on etcd's client port of a node (asked in its own network namespace).
local function etcd_port_free(node)
  local ip = LAB.subnet .. "." .. (10 + tonumber(node:match("%d+$")))
  local _, out = lua_on(node, ("print(require('moonadm.net').port_free(%q, 2379))"):format(ip))
  return out:match("^true") ~= nil, out
end

-- NotBefore of a node's certificate file (relative to its root).
local function not_before(node, path)
  local cert = assert(pki.read_cert(assert(h.read(node_dir(node) .. path), "no " .. path)))
  return cert:info().not_before
end

-- The cluster answers through the endpoint and its etcd has three healthy voting members.
local function healthy()
  local rc, out = fixture.kubectl(st, { "get", "--raw", "/readyz" })
  assert(rc == 0, "readyz through the endpoint: " .. out)
  local code, text = lua_on("cp1", [[
    local members = require "etcd.members"
    local m = assert(members.new { endpoints = { "https://127.0.0.1:2379" }, cert_dir = "/etc/kubernetes/pki", timeout = 30 })
    local list = assert(m:list())
    local eps = {}
    for _, x in ipairs(list) do assert(not x.is_learner, x.name .. " is a learner"); eps[#eps + 1] = x.client_urls[1] end
    local all = assert(members.new { endpoints = eps, cert_dir = "/etc/kubernetes/pki", timeout = 30 })
    assert(all:check_health())
    print("members " .. #list)
  ]])
  assert(code == 0 and text:find("members 3", 1, true), "etcd: " .. text)
end

describe("certs renew --if-expiring-within on a 3-control-plane lab", function()
  setup(function()
    local code, out, err = h.moonadm { "lab", "up", "--name", LAB.name, "--subnet", LAB.subnet, "--control-planes", "3" }
    assert(code == 0, ("lab %s did not come up:\n%s\n%s"):format(LAB.name, out, err))
    local text = assert(h.read(h.top .. "/.lab/" .. LAB.name .. "/lab.json"), "no lab.json")
    st = require("cjson").decode(text)
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", LAB.name } end)

  it("check-expiration --warn-within exits 3 when something is due, 0 when not", function()
    local code, out = run("cp1", { "certs", "check-expiration", "--warn-within", "9000h" })
    assert.equal(3, code, out)
    assert.matches("expire within 9000h: admin.conf, apiserver", out, 1, true)
    code, out = run("cp1", { "certs", "check-expiration", "--warn-within", "720h" })
    assert.equal(0, code, out)
  end)

  it("renews what is due on every node, restarting one component at a time with the API up", function()
    local t0 = core.now()
    local stop = fixture.readyz_poller(st)
    for _, node in ipairs(CPS) do
      local code, out = run(node, RENEW_ALL)
      assert.equal(0, code, out)
      assert.matches("certificate for serving the Kubernetes API renewed", out, 1, true)
      assert.matches("Restarted etcd, kube-apiserver, kube-controller-manager, kube-scheduler, one at a time.", out, 1, true)
    end
    local ok, failed = stop()
    print(("\n    renewal of 3 control planes: %d /readyz polls through the endpoint answered, %d failed"):format(ok, failed))
    assert.is_true(ok > 0)
    -- each apiserver steps aside while its etcd restarts (0 failed on the lab, 3 before it did): at most
    -- the one or two polls a terminating apiserver answers before the balancer's next check drops it
    assert.is_true(failed <= 2, ("%d of %d polls failed"):format(failed, ok + failed))
    for _, node in ipairs(CPS) do
      for _, f in ipairs { "/etc/kubernetes/pki/apiserver.crt", "/etc/kubernetes/pki/etcd/server.crt",
        "/etc/kubernetes/pki/etcd/peer.crt" } do
        assert.is_true(not_before(node, f) >= t0 - 310, node .. f .. " was not renewed")
      end
      assert.is_nil(h.read(node_dir(node) .. PENDING), node .. " kept a pending restart")
      local code, out = run(node, { "certs", "check-expiration", "--warn-within", "8000h" })
      assert.equal(0, code, out)
    end
    healthy()
  end)

  it("renews nothing and restarts nothing when nothing is due", function()
    local before = not_before("cp2", "/etc/kubernetes/pki/apiserver.crt")
    local code, out = run("cp2", NOTHING_DUE)
    assert.equal(0, code, out)
    assert.matches("apiserver is not due: ", out, 1, true)
    assert.not_matches("Restart", out)
    assert.equal(before, not_before("cp2", "/etc/kubernetes/pki/apiserver.crt"))
  end)

  it("keeps etcd running while another member is down, and restarts it on the next run", function()
    local manifest = node_dir("cp2") .. "/etc/kubernetes/manifests/etcd.yaml"
    local aside = st.dir .. "/cp2-etcd.yaml"
    assert(os.rename(manifest, aside))
    local ok, err = pcall(function()
      fixture.wait_for("cp2's etcd to stop", 60, function() return etcd_port_free("cp2") end)
      local code, out = run("cp1", { "certs", "renew", "etcd-server", "--if-expiring-within", "9000h" })
      assert.equal(1, code, out)
      assert.matches("Not restarting etcd now: another etcd member is not healthy", out, 1, true)
      assert.equal("etcd\n", h.read(node_dir("cp1") .. PENDING))
    end)
    assert(os.rename(aside, manifest))
    assert(ok, err)
    fixture.wait_for("cp2's etcd to be back", 90, function()
      local free, out = etcd_port_free("cp2")
      return not free and out:match("^false") ~= nil, out
    end)
    os.execute("sleep 5")
    local code, out = run("cp1", NOTHING_DUE)
    assert.equal(0, code, out)
    assert.matches("Restarted etcd, one at a time.", out, 1, true)
    assert.is_nil(h.read(node_dir("cp1") .. PENDING))
    healthy()
  end)

  it("converges when run again after a kill at any write (the hooked build)", function()
    local points = os.getenv("MOONADM_LONG") and { 1, 6, 12, 18, 22, 24, 26, 28 } or { 12, 24 }
    for _, n in ipairs(points) do
      local code, out = common.exec(st, "cp3", { common.hooks, table.unpack(RENEW_ALL) }, { "MOONADM_CRASH_AFTER=write:" .. n })
      assert.are_not.equal(0, code, ("write:%d: the hooked run was not killed:\n%s"):format(n, out:sub(-1500)))
      code, out = run("cp3", RENEW_ALL)
      assert.equal(0, code, ("write:%d: the run after the kill:\n%s"):format(n, out))
      assert.is_nil(h.read(node_dir("cp3") .. PENDING), ("write:%d: a pending restart is left"):format(n))
      assert.is_nil(h.read(node_dir("cp3") .. ASIDE), ("write:%d: the apiserver's manifest is left aside"):format(n))
      assert.truthy(h.read(node_dir("cp3") .. "/etc/kubernetes/manifests/kube-apiserver.yaml"), ("write:%d"):format(n))
      assert.truthy(h.read(node_dir("cp3") .. "/etc/kubernetes/manifests/etcd.yaml"), ("write:%d"):format(n))
      code, out = run("cp3", { "certs", "check-expiration", "--warn-within", "8000h" })
      assert.equal(0, code, ("write:%d: %s"):format(n, out))
    end
    healthy()
  end)
end)
