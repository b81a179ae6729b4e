-- The failure sweep (issue 46): the crash sweep kills moonadm; this makes what moonadm drives fail,
-- the ways operators meet it — a component crash-looping (a patch gives it a flag it refuses), its
-- port taken by another program, the disk full under /etc/kubernetes, the kubelet not answering —
-- in init, a worker and a control-plane join, upgrade apply and reset on the spare s1 of its own
-- stand-in lab (e2efail, 10.252.33: cp1 behind the balancer with cp2, the spare s1). Each row checks:
-- the run fails (or rolls back) with a message that names the component and what to do; no file is
-- partial or of the wrong mode; etcd keeps every key it had (read from etcd itself); and once the
-- cause is gone the next run (--resume; reset: again) converges. The table is printed at the end
-- (docs/failures.md keeps the last one). make test runs the rows marked `short`; make test-long all.
local crash = require "crash_common"
local h = require "helpers"
local core = require "moonadm.core"
local yaml = require "moonadm.yaml"

local LAB, SUBNET = "e2efail", "10.252.33"
local LONG = os.getenv("MOONADM_LONG") == "1"
local PATCHES = "/var/lib/moonadm-lab/failure-patches"

local ETCDCTL = { "etcdctl", "--endpoints", "https://127.0.0.1:2379", "--cacert", "/etc/kubernetes/pki/etcd/ca.crt",
  "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt", "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key",
  "--command-timeout", "5s", "get", "/registry/", "--prefix", "--keys-only" }

-- every key of the etcd serving on `node` (nil, why when it does not answer)
local function etcd_keys(st, node)
  local code, out = crash.exec(st, node, ETCDCTL)
  if code ~= 0 then return nil, out end
  local keys, n = {}, 0
  for k in out:gmatch("[^\n]+") do keys[k] = true; n = n + 1 end
  return keys, n
end

local function keys_lost(before, after)
  local lost = {}
  for k in pairs(before) do
    -- leases, events and pods come and go by themselves (the pods of s1, whose Node the row before
    -- deleted, are collected meanwhile); every other object must still be there
    if not after[k] and not k:match("^/registry/leases/") and not k:match("^/registry/events/")
        and not k:match("^/registry/masterleases/") and not k:match("^/registry/pods/")
        and not k:match("s1") then lost[#lost + 1] = k end
  end
  table.sort(lost)
  return lost
end

local function wait_keys(st, node, secs)
  local deadline, keys, why = core.monotonic() + secs, nil, nil
  repeat
    keys, why = etcd_keys(st, node)
    if keys then return keys end
    core.sleep(1)
  until core.monotonic() > deadline
  return nil, why
end

-- a JSON patch that makes a component exit at once (kubeadm's patches, target+json.json)
local function crash_patch(st, component)
  local s1 = crash.node(st, "s1")
  os.execute("rm -rf " .. h.q(s1.root .. PATCHES) .. " && mkdir -p -m 0755 " .. h.q(s1.root .. PATCHES))
  h.write(s1.root .. PATCHES .. "/" .. component .. "+json.json",
    '[{"op": "add", "path": "/spec/containers/0/command/-", "value": "--no-such-flag=1"}]')
  os.execute("chmod 0644 " .. h.q(s1.root .. PATCHES) .. "/*")
end

-- the patches dir the configs name, empty (kubeadm refuses a missing one)
local function no_patches(st)
  local dir = crash.node(st, "s1").root .. PATCHES
  os.execute("rm -rf " .. h.q(dir) .. " && mkdir -p -m 0755 " .. h.q(dir))
end

-- s1's init config with short timeouts (a failing component is found in seconds, not 4 minutes);
-- `converge`: kubeadm's defaults, for the run after the cause is gone (a component the kubelet had
-- in back-off after crashes takes its time to start again)
local function init_config(st, converge)
  local path = crash.init_config(st)
  local docs = assert(yaml.decode(assert(h.read(path))))
  for _, d in ipairs(docs) do
    if d.kind == "InitConfiguration" then
      d.timeouts = not converge and { controlPlaneComponentHealthCheck = "25s", kubeletHealthCheck = "20s" } or nil
      d.patches = { directory = PATCHES } -- (kubeadm refuses --patches beside --config)
    end
  end
  local out = st.dir .. (converge and "/s1-failure-init-converge.yaml" or "/s1-failure-init.yaml")
  h.write(out, yaml.encode_all(docs))
  return out
end

local function join_config(st, worker, converge)
  local path = crash.join_config(st, worker)
  local doc = assert(yaml.decode(assert(h.read(path))))[1]
  doc.timeouts = not converge and { controlPlaneComponentHealthCheck = "25s", kubeletHealthCheck = "20s", etcdAPICall = "30s" } or nil
  doc.patches = { directory = PATCHES }
  local out = st.dir .. (worker and "/s1-failure-worker" or "/s1-failure-join") .. (converge and "-converge.yaml" or ".yaml")
  h.write(out, yaml.encode(doc))
  return out
end

-- A listener on `port` in s1's network namespace, by a program named `name` (returns its stopper).
local function hold_port(st, port, name)
  local s1 = crash.node(st, "s1")
  local dir = s1.root .. "/var/lib/moonadm-lab"
  os.execute("cp /usr/bin/python3 " .. h.q(dir .. "/" .. name))
  local pidfile = dir .. "/" .. name .. ".pid"
  os.execute(("%s lab exec s1 --name %s -- %s -c %s >/dev/null 2>&1 & echo $! > %s"):format(h.q(h.bin), st.name,
    h.q("/var/lib/moonadm-lab/" .. name), h.q(("import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET," ..
    "socket.SO_REUSEADDR,1)\ns.bind(('0.0.0.0',%d))\ns.listen()\ntime.sleep(600)"):format(port)), h.q(pidfile)))
  core.sleep(1.5)
  return function()
    os.execute("pkill -f " .. h.q("/var/lib/moonadm-lab/" .. name) .. " 2>/dev/null")
    os.remove(dir .. "/" .. name)
  end
end

local RESULTS = {}
local function record(row, outcome) RESULTS[#RESULTS + 1] = { row.component, row.flow, row.failure, outcome } end

-- One row: setup (the failure), run, expectations on the failed run, undo, converge.
local function try(st, row)
  local s1 = crash.node(st, "s1")
  local out, code
  local problems = {}
  local ok, err = pcall(function()
    local ctx = row.prepare(st)
    local before = row.keys_on and assert(wait_keys(st, row.keys_on, 30))
    local undo = row.fail(st, ctx)
    code, out = crash.exec(st, "s1", { h.bin, table.unpack(ctx.argv) })
    if code == 0 and not row.succeeds then problems[#problems + 1] = "the run succeeded" end
    for _, want in ipairs(row.says) do
      if not out:find(want) then problems[#problems + 1] = ("the message lacks %q"):format(want) end
    end
    if out:find("stack traceback", 1, true) or out:find("attempt to ", 1, true) then
      problems[#problems + 1] = "a raw Lua error"
    end
    for _, p in ipairs(crash.check_files(s1.root)) do
      if not p:match("temp file left behind") then problems[#problems + 1] = "right after the failure: " .. p end
    end
    for _, p in ipairs(row.after_fail and row.after_fail(st, ctx) or {}) do problems[#problems + 1] = p end
    if row.nothing_written and h.read(s1.root .. "/etc/kubernetes/pki/ca.key") then
      problems[#problems + 1] = "files were written before the refusal"
    end
    if before then
      local after, why = wait_keys(st, row.keys_on, 90)
      if not after then problems[#problems + 1] = "etcd does not answer after the failure: " .. tostring(why)
      else
        local lost = keys_lost(before, after)
        if #lost > 0 then problems[#problems + 1] = ("%d etcd keys lost: %s"):format(#lost, table.concat(lost, " ", 1, math.min(5, #lost))) end
      end
    end
    if undo then undo() end
    local rcode, rout = crash.exec(st, "s1", { h.bin, table.unpack(ctx.resume or ctx.argv) })
    if rcode ~= 0 then problems[#problems + 1] = "the run after the cause was removed failed:\n" .. rout:sub(-1500)
    else
      for _, p in ipairs(ctx.check() or {}) do problems[#problems + 1] = "after converging: " .. p end
    end
  end)
  if not ok then problems[#problems + 1] = "the row itself failed: " .. tostring(err) end
  local outcome = #problems == 0 and row.outcome or "FAILED"
  record(row, outcome)
  print(("[failure_sweep] %-24s %-16s %-26s %s"):format(row.component, row.flow, row.failure, outcome))
  if #problems > 0 then print("[failure_sweep]   " .. table.concat(problems, "\n[failure_sweep]   ") .. "\n--- the failed run:\n" .. (out or ""):sub(-2000)) end
  io.stdout:flush()
  return problems
end

-- The flows, on s1: each prepare leaves s1 ready for the flow and returns {argv, resume, check}.
local function init_flow(st)
  crash.clean(st, true)
  no_patches(st)
  local s1 = crash.node(st, "s1")
  local argv = { "init", "--config", init_config(st) }
  return { argv = argv, resume = { "init", "--config", init_config(st, true), "--resume" },
    check = function() return crash.check(st, s1.root, s1.root .. "/etc/kubernetes/admin.conf", 1, nil) end }
end

local function worker_flow(st)
  crash.clean(st)
  local argv = { "join", "--config", join_config(st, true) }
  return { argv = argv, resume = { "join", "--config", join_config(st, true, true), "--resume" },
    check = function() return crash.check_worker(st) end }
end

local function cp_join_flow(st)
  crash.clean(st)
  no_patches(st)
  local argv = { "join", "--config", join_config(st) }
  return { argv = argv, resume = { "join", "--config", join_config(st, false, true), "--resume" },
    check = function() return crash.check(st, crash.node(st, "s1").root, st.nodes[1].root .. "/etc/kubernetes/admin.conf", 3, nil) end }
end

-- s1 as its own one-node cluster, then upgrade apply to the same release with --patches: every
-- patched component's manifest changes, so it is replaced (and rolled back when it fails)
local function upgrade_flow(st)
  local init = init_flow(st)
  local code, out = crash.exec(st, "s1", { h.bin, table.unpack(init.argv) })
  assert(code == 0, "the init the upgrade starts from failed:\n" .. out:sub(-2000))
  local cfg = st.dir .. "/s1-failure-upgrade.yaml"
  h.write(cfg, table.concat({ "apiVersion: kubeadm.k8s.io/v1beta4", "kind: UpgradeConfiguration", "apply:",
    "  kubernetesVersion: v1.35.4", "  patches:", "    directory: " .. PATCHES,
    "timeouts:", "  upgradeManifests: 60s", "  controlPlaneComponentHealthCheck: 20s", "" }, "\n"))
  local s1 = crash.node(st, "s1")
  return { argv = { "upgrade", "apply", "--config", cfg, "--yes" },
    resume = { "upgrade", "apply", "v1.35.4", "--yes" },
    check = function() return crash.check(st, s1.root, s1.root .. "/etc/kubernetes/admin.conf", 1, nil) end }
end

local function crashloop(component, flow, prep, says, opts)
  opts = opts or {}
  return { component = component, flow = flow, failure = "crash-looping", short = opts.short, prepare = prep,
    fail = function(st) crash_patch(st, component) return function() no_patches(st) end end,
    says = says, keys_on = opts.keys_on, outcome = opts.outcome or "fails, named; converges" }
end

local ROWS = {
  -- init: the component that never becomes healthy is named, with how to look at it
  crashloop("etcd", "init", init_flow, { "etcd, which the kube%-apiserver needs, does not listen", "crictl" }, { short = true }),
  crashloop("kube-apiserver", "init", init_flow, { "kube%-apiserver", "crictl" }),
  crashloop("kube-controller-manager", "init", init_flow, { "kube%-controller%-manager", "crictl" }),
  crashloop("kube-scheduler", "init", init_flow, { "kube%-scheduler", "crictl" }),
  { component = "kube-apiserver", flow = "init", failure = "port 6443 taken", short = true, nothing_written = true,
    prepare = init_flow, fail = function(st) return hold_port(st, 6443, "squatter") end,
    says = { "%[ERROR Port%-6443%]: Port 6443 is in use by squatter" }, outcome = "refused, nothing written" },
  { component = "etcd", flow = "init", failure = "port 2379 taken", nothing_written = true,
    prepare = init_flow, fail = function(st) return hold_port(st, 2379, "squatter") end,
    says = { "%[ERROR Port%-2379%]: Port 2379 is in use by squatter" }, outcome = "refused, nothing written" },
  { component = "(the node)", flow = "init", failure = "/etc/kubernetes full", short = true,
    prepare = init_flow, fail = function(st)
      local dir = crash.node(st, "s1").root .. "/etc/kubernetes"
      os.execute("mount -t tmpfs -o size=48k,mode=0755 moonadm-full " .. h.q(dir))
      return function() os.execute("umount " .. h.q(dir)) end
    end, says = { "No space left on device", "/etc/kubernetes/" }, outcome = "fails, named; converges" },
  -- joins
  { component = "kubelet", flow = "worker join", failure = "not answering", short = true,
    prepare = worker_flow, fail = function(st)
      local pid = math.tointeger(crash.node(st, "s1").kubelet_pid)
      os.execute("kill -STOP " .. pid)
      return function() os.execute("kill -CONT " .. pid) end
    end, says = { "The kubelet is not running", "kubelet%-wait%-bootstrap" }, keys_on = "cp1", outcome = "fails, named; converges" },
  crashloop("etcd", "control-plane join", cp_join_flow, { "etcd" }, { keys_on = "cp1" }),
  crashloop("kube-apiserver", "control-plane join", cp_join_flow, { "kube%-apiserver" }, { keys_on = "cp1" }),
  -- upgrade apply: rolled back, every key of etcd kept
  crashloop("etcd", "upgrade apply", upgrade_flow, { "the upgrade of etcd failed", "Restoring the etcd data dir" },
    { short = true, keys_on = "s1", outcome = "rolled back, every key kept" }),
  -- a release whose images are not there (on the lab: no binary built for the tag): refused by the
  -- upgrade's preflight before any manifest is replaced
  { component = "kube-apiserver", flow = "upgrade apply", failure = "image missing", short = true,
    prepare = function(st)
      local ctx = upgrade_flow(st)
      ctx.argv = { "upgrade", "apply", "v1.35.3", "--yes", "--force" } -- (a patch downgrade: --force)
      ctx.manifest = h.read(crash.node(st, "s1").root .. "/etc/kubernetes/manifests/kube-apiserver.yaml")
      return ctx
    end,
    fail = function() end, keys_on = "s1", outcome = "refused, nothing replaced",
    after_fail = function(st, ctx)
      local now = h.read(crash.node(st, "s1").root .. "/etc/kubernetes/manifests/kube-apiserver.yaml")
      return now ~= ctx.manifest and { "the kube-apiserver manifest was replaced" } or {}
    end,
    says = { "%[ERROR ImagePull%]: failed to pull image registry%.k8s%.io/kube%-apiserver:v1%.35%.3" } },
  crashloop("kube-apiserver", "upgrade apply", upgrade_flow, { "the upgrade of kube%-apiserver failed", "crictl logs" },
    { keys_on = "s1", outcome = "rolled back, every key kept" }),
  crashloop("kube-scheduler", "upgrade apply", upgrade_flow, { "the upgrade of kube%-scheduler failed" },
    { keys_on = "s1", outcome = "rolled back, every key kept" }),
  -- reset of a control plane whose etcd is down: its member still leaves the cluster (through the
  -- others), the cluster keeps its quorum and every key
  { component = "etcd", flow = "reset", failure = "not running", succeeds = true, keys_on = "cp1",
    prepare = function(st)
      local join = cp_join_flow(st)
      local code, out = crash.exec(st, "s1", { h.bin, table.unpack(join.argv) })
      assert(code == 0, "the control-plane join the reset starts from failed:\n" .. out:sub(-2000))
      return { argv = { "reset", "--force" }, resume = { "reset", "--force" }, check = function() return crash.check_reset(st) end }
    end,
    fail = function(st)
      local s1 = crash.node(st, "s1")
      os.remove(s1.root .. "/etc/kubernetes/manifests/etcd.yaml") -- the kubelet stops it
      for _ = 1, 60 do
        if crash.exec(st, "s1", { "sh", "-c", "exec 3<>/dev/tcp/127.0.0.1/2379" }) ~= 0 then break end
        core.sleep(0.5)
      end
    end,
    says = { "etcd" }, outcome = "member removed, quorum and keys kept" },
}

describe("the failure sweep (own lab " .. LAB .. ")", function()
  local st
  setup(function() st = crash.up(LAB, SUBNET, crash.LAB_ARGS.ha) end)
  teardown(function()
    crash.clean(st)
    crash.down(LAB)
    print("\n[failure_sweep] component x flow x failure -> outcome")
    for _, r in ipairs(RESULTS) do print(("[failure_sweep] | %s | %s | %s | %s |"):format(r[1], r[2], r[3], r[4])) end
  end)

  for _, row in ipairs(ROWS) do
    if LONG or row.short then
      it(("%s in %s, %s: %s"):format(row.component, row.flow, row.failure, row.outcome), function()
        local problems = try(st, row)
        assert.equal(0, #problems, table.concat(problems, "\n"))
      end)
    end
  end
end)
