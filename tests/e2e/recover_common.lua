-- The body of the lost-quorum recovery's e2e specs (etcd_recover_spec: the stand-in kubelet, make
-- test; long_real_kubelet_recover_spec: containerd, the real kubelet and a worker, make test-long).
-- A lab of three control planes behind its balancer:
-- cp1 cut off from its peers is refused (the others keep their quorum: a forced cluster would split
-- it); then cp2's and cp3's etcd are killed for good (manifest and data deleted), so cp1's member has no
-- quorum and the API is down; `etcd recover` refuses without --yes, is killed (-9) once it has put
-- --force-new-cluster in the manifest, and run again converges: one member, the API back, the last
-- acknowledged write there. cp2 and cp3 rejoin with reset + join: three voting members again.
--   require("recover_common")(opts, _ENV) opts: name, subnet, real (bool); _ENV: the spec's (busted's
--   describe, it, setup, teardown, assert)
local fixture = require "lab_fixture"
local h = require "helpers"

local LAB, OPTS, st
local describe, it, setup, teardown, assert -- busted's, from the spec's environment

local function run(node, argv)
  local code, out = fixture.run_on(st, node, argv)
  return code, out
end

local function etcdctl(node, args) return fixture.etcdctl(st, node, args) end

local function voting(node) return fixture.etcd_voting(st, node) end

local function manifest(node) return h.read(st.dir .. "/" .. node .. "/etc/kubernetes/manifests/etcd.yaml") end

-- Whether the node's etcd answers on its client port (asked in its own network namespace).
local function etcd_answers(node)
  return (etcdctl(node, { "endpoint", "status" })) == 0
end

return function(opts, env)
OPTS, LAB = opts, { name = opts.name, subnet = opts.subnet }
describe, it, setup, teardown, assert = env.describe, env.it, env.setup, env.teardown, env.assert
describe("etcd recover after two of three members are lost (" .. LAB.name .. (opts.real and ", real kubelet" or "") .. ")",
  function()
  local marker

  setup(function()
    local args = { "lab", "up", "--name", LAB.name, "--subnet", LAB.subnet, "--control-planes", "3" }
    if OPTS.real then
      for _, a in ipairs { "--kubelet", "real", "--workers", "1", "--ready-timeout", "300" } do args[#args + 1] = a end
    end
    local code, out, err = h.moonadm(args)
    assert(code == 0, ("lab %s did not come up:\n%s\n%s"):format(LAB.name, out, err))
    st = assert(fixture.state(LAB.name))
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", LAB.name } end)

  it("does nothing while etcd has a quorum", function()
    local before = manifest("cp1")
    local code, out = run("cp1", { "moonadm", "etcd", "recover", "--yes" })
    assert.equal(0, code, out)
    assert.truthy(out:find("its quorum stands", 1, true), out)
    assert.equal(before, manifest("cp1"))
  end)

  it("refuses, even with --yes, on a member cut off from the others while they keep their quorum", function()
    local rules = { { "INPUT", "--dport" }, { "OUTPUT", "--dport" } }
    local function iptables(op)
      for _, r in ipairs(rules) do
        local code, out = run("cp1", { "iptables", op, r[1], "-p", "tcp", r[2], "2380", "-j", "DROP" })
        assert.equal(0, code, out)
      end
    end
    iptables("-I") -- cp1 hears no peer: cp2 and cp3 keep a quorum of two, and answer on their client port
    -- (the rules go again whatever fails in between: the later cases need cp1 in the cluster)
    local ok, err = pcall(function()
      fixture.wait_for("cp1's etcd to know it is alone", 60, function()
        return (etcdctl("cp1", { "endpoint", "health" })) ~= 0
      end)
      local before = manifest("cp1")
      local code, out = run("cp1", { "moonadm", "etcd", "recover", "--yes" })
      assert.equal(1, code, out)
      assert.truthy(out:find("this node is cut off from the cluster", 1, true), out)
      assert.equal(before, manifest("cp1"))
    end)
    iptables("-D")
    if not ok then error(err, 0) end
    fixture.wait_for("cp1's etcd to be back in the cluster", 60, function()
      return (etcdctl("cp1", { "endpoint", "health" })) == 0
    end)
  end)

  it("refuses without --yes once the quorum is lost, then recovers with it, killed once on the way", function()
    marker = "recover-" .. os.time()
    local rc, out = fixture.kubectl(st, { "create", "configmap", marker, "-n", "default", "--from-literal=k=v" })
    assert.equal(0, rc, out) -- acknowledged: it must survive
    for _, node in ipairs { "cp2", "cp3" } do
      assert(os.remove(st.dir .. "/" .. node .. "/etc/kubernetes/manifests/etcd.yaml"))
      fixture.wait_for(node .. "'s etcd to stop", 60, function() return not etcd_answers(node) end)
      h.sh_ok("rm -rf " .. h.q(st.dir .. "/" .. node .. "/var/lib/etcd/member"))
    end
    -- the leader keeps its leadership for a moment after it lost its followers (recover would say its
    -- quorum stands then): an operator meets a member that knows it is alone
    fixture.wait_for("cp1's etcd to know it lost its quorum", 60, function()
      return (etcdctl("cp1", { "endpoint", "health" })) ~= 0
    end)
    local before = manifest("cp1")
    local code
    code, out = run("cp1", { "moonadm", "etcd", "recover" })
    assert.equal(1, code, out)
    assert.truthy(out:find("the cluster lost its quorum", 1, true), out)
    assert.truthy(out:find("Not recovering without --yes", 1, true), out)
    assert.equal(before, manifest("cp1"))
    -- what the refusal advises works without a quorum: a snapshot of the survivor
    local snapdir = h.tmpdir()
    code, out = run("cp1", { "moonadm", "etcd", "snapshot", "save", snapdir .. "/before-recover.db" })
    assert.equal(0, code, out)
    assert.truthy((h.read(snapdir .. "/before-recover.db") or ""):find(marker, 1, true), "the snapshot lacks " .. marker)
    h.rmrf(snapdir)
    -- killed once the manifest has the flag
    local log = h.tmpdir() .. "/recover.log"
    os.execute(("%s lab exec cp1 --name %s -- moonadm etcd recover --yes > %s 2>&1 &"):format(h.q(h.bin), LAB.name, h.q(log)))
    fixture.wait_for("the flag in cp1's etcd manifest", 60, function()
      return (manifest("cp1") or ""):find("--force-new-cluster", 1, true) ~= nil, h.read(log)
    end, 0.05)
    h.sh("pkill -9 -f '[e]tcd recover --yes'")
    local stop = fixture.readyz_poller(st)
    local t0 = os.time()
    code, out = run("cp1", { "moonadm", "etcd", "recover", "--yes" })
    local took = os.time() - t0
    local ok, failed = stop()
    io.stderr:write(("figure: etcd recover after kill -9: %d s; /readyz through the balancer meanwhile: %d answered, %d failed\n")
      :format(took, ok, failed))
    assert.equal(0, code, out)
    assert.truthy(out:find("already has --force-new-cluster", 1, true), out)
    assert.truthy(out:find("etcd has a quorum again", 1, true), out)
    local m = manifest("cp1")
    assert.falsy(m:find("--force-new-cluster", 1, true), m)
    assert.truthy(m:find("moonadm.io/etcd-recovered-at", 1, true), m)
    assert.same({ "cp1" }, voting("cp1"))
    -- through the balancer, which takes cp1 back at its next /readyz check (each second)
    fixture.wait_for("the write " .. marker .. " through the balancer", 30, function()
      rc, out = fixture.kubectl(st, { "get", "configmap", marker, "-n", "default", "-o", "name" })
      return rc == 0, out
    end)
    -- run again: nothing to do
    code, out = run("cp1", { "moonadm", "etcd", "recover", "--yes" })
    assert.equal(0, code, out)
    assert.truthy(out:find("its quorum stands", 1, true), out)
  end)

  it("takes cp2 and cp3 back with reset and join: three voting members, the write kept", function()
    local code, out = run("cp1", { "moonadm", "init", "phase", "upload-certs", "--upload-certs", "--config",
      st.dir .. "/cp1-init.yaml" })
    assert.equal(0, code, out)
    for _, node in ipairs { "cp2", "cp3" } do
      code, out = run(node, { "moonadm", "reset", "--force" })
      assert.equal(0, code, out)
      fixture.kubectl(st, { "delete", "node", node })
      code, out = run(node, { "moonadm", "join", "--config", st.dir .. "/" .. node .. "-join.yaml" })
      assert.equal(0, code, out)
    end
    assert.same({ "cp1", "cp2", "cp3" }, voting("cp1"))
    local nodes = OPTS.real and 4 or 3
    assert.truthy(fixture.nodes_ready(st, nil, nodes), nodes .. " Nodes Ready")
    local rc, got = fixture.kubectl(st, { "get", "configmap", marker, "-n", "default", "-o", "name" })
    assert.equal(0, rc, got)
  end)
end)
end
