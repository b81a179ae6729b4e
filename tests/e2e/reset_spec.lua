-- moonadm reset on a 1-node lab of its own (dev9, 10.253.9.0/24; resetting needs its own lab):
-- --dry-run and a refused prompt change nothing; the reset of the last control plane does not wait
-- on member removal; the node's files and pods are gone, its kubelet stand-in stays; a second reset
-- changes nothing. The 3-control-plane scenario is tests/e2e/long_reset_spec.lua.
local cjson = require "cjson"
local core = require "moonadm.core"
local fixture = require "lab_fixture"
local h = require "helpers"

local LAB, SUBNET = "dev9", "10.253.9"
local dir = h.top .. "/.lab/" .. LAB
local node = dir .. "/cp1"

local function snapshot() return fixture.node_files(node) end

local function status_pods()
  local f = io.open(node .. "/var/lib/moonadm-lab/kubelet-status.json", "r")
  if not f then return nil end
  local st = cjson.decode(f:read("a"))
  f:close()
  local n = 0
  for _ in pairs(st.pods or {}) do n = n + 1 end
  return n, st.pid
end

local function exec(argv, stdin)
  local parts = { h.q(h.bin), "lab", "exec", "cp1", "--name", LAB, "--" }
  for _, a in ipairs(argv) do parts[#parts + 1] = h.q(a) end
  local out = os.tmpname()
  local _, _, code = os.execute(table.concat(parts, " ") .. " <" .. (stdin or "/dev/null") .. " >" .. out .. " 2>&1")
  local text = h.read(out)
  os.remove(out)
  return code, text
end

describe("reset (1-node lab)", function()
  setup(function()
    local code, out, err = h.moonadm { "lab", "up", "--name", LAB, "--subnet", SUBNET }
    assert(code == 0, "lab up failed:\n" .. out .. err)
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", LAB } end)

  it("--dry-run changes nothing and prints what it would do", function()
    local before = snapshot()
    local code, out = exec { "moonadm", "reset", "--force", "--dry-run" }
    assert.equal(0, code, out)
    assert.matches("Would remove the etcd member on this node", out, 1, true)
    assert.matches("Would delete contents of directories", out, 1, true)
    assert.equal(before, snapshot())
    assert.equal(4, (status_pods()))
  end)

  it("without --force and without a terminal it refuses and changes nothing", function()
    local before = snapshot()
    local code, out = exec { "moonadm", "reset" }
    assert.equal(1, code, out)
    assert.matches("standard input is not a terminal", out, 1, true)
    assert.equal(before, snapshot())
  end)

  it("resets the last control plane without waiting on member removal; files and pods gone, stand-in kept", function()
    local t0 = core.monotonic()
    local code, out = exec { "moonadm", "reset", "--force" }
    local took = core.monotonic() - t0
    assert.equal(0, code, out)
    print(("\n[figure] reset of the last control plane (1-node lab): %.1f s wall"):format(took))
    assert.matches("This is the only remaining etcd member in the etcd cluster, skip removing it", out, 1, true)
    assert.not_matches("gave up after", out, 1, true)
    assert.is_true(took < 60, ("took %.1fs"):format(took))
    for _, gone in ipairs { "/etc/kubernetes/manifests/etcd.yaml", "/etc/kubernetes/admin.conf",
      "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/pki/ca.crt", "/var/lib/kubelet/config.yaml",
      "/var/lib/kubelet/kubeadm-flags.env", "/var/lib/kubelet/instance-config.yaml", "/var/lib/etcd/member" } do
      assert.is_nil(io.open(node .. gone, "r"), gone)
    end
    -- the stand-in stopped every pod and is still running
    local deadline = core.monotonic() + 30 -- its status file is written from a loop that API timeouts slow down
    local n, pid = status_pods()
    while n ~= 0 and core.monotonic() < deadline do core.sleep(0.2) n, pid = status_pods() end
    assert.equal(0, n)
    assert.is_true(require("moonadm.proc").alive(math.tointeger(pid)))
  end)

  it("a second reset succeeds and changes nothing", function()
    local before = snapshot()
    local code, out = exec { "moonadm", "reset", "--force" }
    assert.equal(0, code, out)
    assert.not_matches("Deleted contents", out, 1, true)
    assert.not_matches("Removed the static pod manifests", out, 1, true)
    assert.equal(before, snapshot())
  end)

  -- Right after an init the stand-in still holds the mirror pods; the reset stops the apiserver it
  -- would delete them through. Its client retried each call for 3 s, which held the stand-in's pod
  -- side (what the reset waits on) for 9 s: every call is one attempt, the next tick is the retry.
  it("after a fresh init, the stand-in's calls to the stopped apiserver are one attempt each", function()
    local code, out = exec { "moonadm", "init", "--config", dir .. "/cp1-init.yaml" }
    assert.equal(0, code, out)
    -- the stand-in has made the four mirror pods (what the reset then leaves it to delete)
    local kubectl = ("%s --kubeconfig %s get pods -n kube-system -o name 2>&1"):format(
      h.q(h.top .. "/.lab/bin/kubectl"), h.q(node .. "/etc/kubernetes/admin.conf"))
    local deadline, mirrors = core.monotonic() + 60, 0
    repeat
      local p = io.popen(kubectl)
      local names = p:read("a")
      p:close()
      mirrors = select(2, names:gsub("pod/[%w-]+%-cp1\n", ""))
      if mirrors < 4 then core.sleep(0.2) end
    until mirrors >= 4 or core.monotonic() > deadline
    assert.equal(4, mirrors)
    local log = node .. "/var/log/moonadm-kubelet.log"
    local seen = #(h.read(log) or "")
    code, out = exec { "moonadm", "reset", "--force" }
    assert.equal(0, code, out)
    local during = (h.read(log) or ""):sub(seen + 1)
    assert.matches("stopping container kube%-apiserver", during)
    assert.not_matches("gave up after", during, 1, true)
  end)
end)
