-- The body of the whole-cluster restore's e2e specs (etcd_restore_spec: the stand-in kubelet;
-- long_real_kubelet_restore_spec: containerd and the real kubelet, etcdutl from the etcd image through
-- the CRI, a Pod on the worker). A lab of three control planes and a worker behind its balancer:
-- 500 ConfigMaps, a snapshot, then half of them deleted and others added; the restore refuses while
-- another member runs and, without --yes, while the cluster is newer than the snapshot; cp2 and cp3
-- leave (reset), the restore on cp1 is killed (-9) once it took the control plane down and run again
-- converges: exactly the snapshot's ConfigMaps, one member; cp2 and cp3 join again: three voting
-- members, every Node Ready, and the reference kubeadm's `upgrade plan` reads the cluster.
--   require("restore_common")(opts, _ENV) opts: name, subnet, real (bool), etcdutl ("image" or nil);
--   _ENV: the spec's, whose describe, it, setup, teardown and assert are busted's
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"
local crash = require "crash_common"

local NS = "restore-e2e"

local st, LAB, OPTS
local describe, it, setup, teardown, assert -- busted's, from the spec's environment

local function run(node, argv) return fixture.run_on(st, node, argv) end

local function voting(node) return fixture.etcd_voting(st, node) end

-- The ConfigMaps of the test's namespace by their "batch" label: {before=n, after=n}, and the names.
local function configmaps()
  local doc = fixture.kjson(st, { "get", "configmaps", "-n", NS, "-l", "batch", "-o", "json" })
  local count, names = {}, {}
  for _, cm in ipairs(doc.items) do
    local b = cm.metadata.labels.batch
    count[b] = (count[b] or 0) + 1
    names[#names + 1] = cm.metadata.name
  end
  table.sort(names)
  return count, names
end

local function create(prefix, batch, from, to)
  local items = {}
  for i = from, to do
    items[#items + 1] = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = ("%s-%03d"):format(prefix, i),
      namespace = NS, labels = { batch = batch, half = i % 2 == 0 and "even" or "odd" } }, data = { i = tostring(i) } }
  end
  local file = h.tmpdir() .. "/list.json"
  h.write(file, cjson.encode { apiVersion = "v1", kind = "List", items = items })
  local rc, out = fixture.kubectl(st, { "create", "-f", file, "-o", "name" })
  assert.equal(0, rc, out)
end

local function manifest(node, c) return h.read(st.dir .. "/" .. node .. "/etc/kubernetes/manifests/" .. c .. ".yaml") end

local function restore_argv(snap, yes)
  local argv = { "moonadm", "etcd", "snapshot", "restore", snap }
  if yes then argv[#argv + 1] = "--yes" end
  if OPTS.etcdutl then argv[#argv + 1] = "--etcdutl=" .. OPTS.etcdutl end
  return argv
end

local POD = [[
apiVersion: v1
kind: Pod
metadata: {name: bb, namespace: restore-e2e}
spec:
  nodeName: w1
  containers:
  - {name: bb, image: "moonadm.lab/busybox:1.35.0", imagePullPolicy: IfNotPresent, command: [sh, -c, "sleep 36000"]}
]]

-- The worker's Pod once Ready: its UID and its container's restart count.
local function pod_ready()
  local rc, out = fixture.kubectl(st, { "wait", "-n", NS, "--for=condition=Ready", "pod/bb", "--timeout=120s" })
  assert.equal(0, rc, out)
  local pod = fixture.kjson(st, { "get", "-n", NS, "pod", "bb", "-o", "json" })
  return pod.metadata.uid, pod.status.containerStatuses[1].restartCount
end

return function(opts, env)
OPTS, LAB = opts, { name = opts.name, subnet = opts.subnet }
describe, it, setup, teardown, assert = env.describe, env.it, env.setup, env.teardown, env.assert
describe("etcd snapshot restore of a whole cluster (" .. LAB.name .. (opts.real and ", real kubelet" or "") .. ")", function()
  local snapdir, snap, names_at_snapshot, pod_uid

  setup(function()
    local args = { "lab", "up", "--name", LAB.name, "--subnet", LAB.subnet, "--control-planes", "3", "--workers", "1" }
    if opts.real then
      for _, a in ipairs { "--kubelet", "real", "--ready-timeout", "300" } do args[#args + 1] = a end
    end
    local code, out, err = h.moonadm(args)
    assert(code == 0, ("lab %s did not come up:\n%s\n%s"):format(LAB.name, out, err))
    st = assert(fixture.state(LAB.name))
    snapdir = h.tmpdir()
  end)
  teardown(function()
    h.moonadm { "lab", "down", "--name", LAB.name }
    if snapdir then h.rmrf(snapdir) end
  end)

  it("refuses while other members run and, without --yes, while the cluster is newer than the snapshot", function()
    local rc, out = fixture.kubectl(st, { "create", "namespace", NS })
    assert.equal(0, rc, out)
    create("kept", "before", 1, 500)
    if opts.real then
      local file = h.tmpdir() .. "/pod.yaml"
      h.write(file, POD)
      rc, out = fixture.kubectl(st, { "apply", "-f", file })
      assert.equal(0, rc, out)
      pod_uid = pod_ready()
    end
    snap = snapdir .. "/before.db"
    local code
    code, out = run("cp1", { "moonadm", "etcd", "snapshot", "save", snap })
    assert.equal(0, code, out)
    local count
    count, names_at_snapshot = configmaps()
    assert.equal(500, count.before)
    -- after the snapshot: half deleted, others added
    rc, out = fixture.kubectl(st, { "delete", "configmaps", "-n", NS, "-l", "half=even", "--wait=false" })
    assert.equal(0, rc, out)
    create("later", "after", 1, 100)
    count = configmaps()
    assert.same({ before = 250, after = 100 }, count)

    local before = manifest("cp1", "etcd")
    code, out = run("cp1", restore_argv(snap, true))
    assert.equal(1, code, out)
    assert.truthy(out:find("still runs", 1, true), out)
    assert.equal(before, manifest("cp1", "etcd"))

    for _, node in ipairs { "cp2", "cp3" } do
      code, out = run(node, { "moonadm", "reset", "--force" })
      assert.equal(0, code, out)
    end
    assert.same({ "cp1" }, voting("cp1"))
    code, out = run("cp1", restore_argv(snap))
    assert.equal(1, code, out)
    assert.truthy(out:find("Not restoring without --yes", 1, true), out)
    assert.truthy(out:find("revisions newer than the snapshot", 1, true), out)
    assert.equal(before, manifest("cp1", "etcd"))
    assert.truthy(manifest("cp1", "kube-apiserver"), "the apiserver manifest stays")
  end)

  it("restores exactly the snapshot's objects, killed once on the way", function()
    local log = h.tmpdir() .. "/restore.log"
    local quoted = {}
    for _, a in ipairs(restore_argv(snap, true)) do quoted[#quoted + 1] = h.q(a) end
    os.execute(("%s lab exec cp1 --name %s -- %s > %s 2>&1 &"):format(h.q(h.bin), LAB.name, table.concat(quoted, " "),
      h.q(log)))
    fixture.wait_for("cp1's etcd manifest to be taken out", 90, function()
      return manifest("cp1", "etcd") == nil, h.read(log)
    end, 0.05)
    h.sh("pkill -9 -f '[s]napshot restore .*--yes'")
    local t0 = os.time()
    local code, out = run("cp1", restore_argv(snap, true))
    io.stderr:write(("figure: etcd snapshot restore after kill -9 (%s): %d s\n"):format(LAB.name, os.time() - t0))
    assert.equal(0, code, out)
    assert.truthy(out:find("Going on with the restore", 1, true), out)
    assert.truthy(out:find("The cluster holds the snapshot's data", 1, true), out)
    if opts.etcdutl == "image" then assert.truthy(out:find("(a one-shot static Pod)", 1, true), out) end
    assert.truthy(manifest("cp1", "etcd"):find("moonadm.io/etcd-restored-from", 1, true))
    assert.falsy(h.read(st.dir .. "/cp1/etc/kubernetes/tmp/moonadm-etcd-restore/plan.json"), "the restore's state is removed")
    assert.same({ "cp1" }, voting("cp1"))
    local count, names = configmaps()
    assert.same({ before = 500 }, count)
    assert.same(names_at_snapshot, names)
    -- run again with the same file: a new restore, refused without --yes (the cluster moved on since)
    code, out = run("cp1", restore_argv(snap))
    assert.equal(1, code, out)
    assert.truthy(out:find("Not restoring without --yes", 1, true), out)
  end)

  -- (the stand-in lab only: each point is a whole restore, and the real kubelet's is slower)
  if not opts.real then
    it("converges when run again after a kill at a write (the hooked build)", function()
      assert.is_true(crash.have_hooks(), "bin/moonadm-hooks is missing (make test-hooks)")
      local argv = { crash.hooks, table.unpack(restore_argv(snap, true), 2) }
      -- one whole run counts its writes; the kill lands at the middle one (make test-long: at every one)
      local hooklog = h.tmpdir() .. "/writes.log"
      local code, out = crash.exec(st, "cp1", argv, { "MOONADM_HOOK_LOG=" .. hooklog })
      assert.equal(0, code, out)
      local writes = 0
      for line in (h.read(hooklog) or ""):gmatch("[^\n]+") do
        if line:match("^write ") then writes = writes + 1 end
      end
      assert.is_true(writes >= 5, ("a restore made %d writes"):format(writes))
      local points = os.getenv("MOONADM_LONG") and {} or { writes // 2 }
      if #points == 0 then for n = 1, writes do points[n] = n end end
      for _, n in ipairs(points) do
        code, out = crash.exec(st, "cp1", argv, { "MOONADM_CRASH_AFTER=write:" .. n })
        assert.are_not.equal(0, code, ("write:%d: the hooked run was not killed:\n%s"):format(n, out:sub(-1500)))
        code, out = run("cp1", restore_argv(snap, true))
        assert.equal(0, code, ("write:%d: the run after the kill:\n%s"):format(n, out))
        assert.truthy(out:find("Going on with the restore", 1, true), ("write:%d: %s"):format(n, out))
        assert.is_nil(h.read(st.dir .. "/cp1/etc/kubernetes/tmp/moonadm-etcd-restore/plan.json"))
        assert.same({ before = 500 }, (configmaps()))
      end
    end)
  end

  it("takes cp2 and cp3 back with join: three voting members, every Node Ready", function()
    local code, out = run("cp1", { "moonadm", "init", "phase", "upload-certs", "--upload-certs", "--config",
      st.dir .. "/cp1-init.yaml" })
    assert.equal(0, code, out)
    for _, node in ipairs { "cp2", "cp3" } do
      fixture.kubectl(st, { "delete", "node", node })
      code, out = run(node, { "moonadm", "join", "--config", st.dir .. "/" .. node .. "-join.yaml" })
      assert.equal(0, code, out)
    end
    assert.same({ "cp1", "cp2", "cp3" }, voting("cp1"))
    assert.truthy(fixture.nodes_ready(st, nil, 4), "4 Nodes Ready")
    local count = configmaps()
    assert.same({ before = 500 }, count)
    if opts.real then -- the worker's Pod ran through the restore: the same Pod, its container never restarted
      local uid, restarts = pod_ready()
      assert.equal(pod_uid, uid)
      assert.equal(0, restarts)
    end
    -- the reference kubeadm reads the restored cluster (its health-check Job aside: not a restore matter)
    code, out = run("cp1", { h.top .. "/.lab/bin/kubeadm", "upgrade", "plan", "--ignore-preflight-errors=CreateJob" })
    assert.equal(0, code, out)
    assert.matches("Cluster version: 1%.35%.4", out)
  end)
end)
end
