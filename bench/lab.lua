-- The lab rows of bench/bench.lua: end to end on real control planes (etcd, kube-apiserver,
-- controller-manager, scheduler built by `make lab-bins`) run by moonadm's kubelet stand-in.
-- Lab names bench1..bench6 on subnets 10.253.31..36; each lab is taken down before the next.
local cjson = require "cjson"
local core = require "moonadm.core"
local proc = require "moonadm.proc"

local L = {}
local C
local LOGS -- the lab's command outputs, kept for inspection (/tmp/moonadm-bench-logs)

function L.setup(c) C = c end

local function lab_dir(name) return C.TOP .. "/.lab/" .. name end

local function lab_cmd(args)
  local argv = { C.MOONADM, "lab" }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  return proc.run { argv = argv }
end

local function down(name)
  local code, out = lab_cmd { "down", "--name", name }
  if code ~= 0 then C.say("lab down %s: %s", name, out) end
end

-- `lab up`, its output read as it arrives, each line stamped with the monotonic clock.
local function up(name, subnet, extra)
  local logf = C.WORK .. "/labup-" .. name .. ".log"
  local argv = { C.MOONADM, "lab", "up", "--name", name, "--subnet", subnet }
  for _, a in ipairs(extra or {}) do argv[#argv + 1] = a end
  C.say("lab up %s %s", name, table.concat(extra or {}, " "))
  local t0 = core.monotonic()
  local pid = assert(proc.spawn { argv = argv, log = logf })
  local lines, consumed, code = {}, 0, nil
  local function poll()
    local f = io.open(logf, "r")
    if not f then return end
    f:seek("set", consumed)
    while true do
      local l = f:read("L")
      if not l or not l:match("\n$") then break end
      consumed = consumed + #l
      lines[#lines + 1] = { t = core.monotonic() - t0, line = l:sub(1, -2) }
    end
    f:close()
  end
  while true do
    local done, c = proc.wait(pid, true)
    poll()
    if done then code = c break end
    core.sleep(0.02)
  end
  poll()
  if code ~= 0 then C.say("lab up %s failed (exit %d):\n%s", name, code, (C.readf(logf) or ""):sub(-1500)) end
  return code, lines, core.monotonic() - t0
end

-- Join durations from `lab up`'s stamped output: "[lab] NODE: moonadm join" to the next "[lab]" line.
local function join_times(lines)
  local out, cur = {}, nil
  for _, l in ipairs(lines) do
    if l.line:match("^%[lab%]") then
      if cur then out[#out + 1] = { node = cur.node, seconds = l.t - cur.t }; cur = nil end
      local node = l.line:match("^%[lab%] (%S+): moonadm join")
      if node then cur = { node = node, t = l.t } end
    end
  end
  return out
end

-- `lab exec` without its pod-network wiring after a join (both tools' joins are timed alone).
local function exec(name, node, argv, log)
  local full = { C.MOONADM, "lab", "exec", node, "--name", name, "--no-network", "--" }
  for _, a in ipairs(argv) do full[#full + 1] = a end
  local t0 = core.monotonic()
  local code, out
  if log then
    local pid = assert(proc.spawn { argv = full, log = log })
    local _, c = proc.wait(pid)
    code, out = c, C.readf(log) or ""
  else
    code, out = proc.run { argv = full }
  end
  return code, out or "", core.monotonic() - t0
end

-- What every lab row pays before either tool runs: `lab exec` of `true` on the node, spawned the
-- same way (the lab's state read, the node's namespaces entered, the process reaped). The engine
-- rows carry its median (exec_floor) and the notes read them above it.
local function exec_floor(name, node, reps)
  local xs = {}
  for _ = 1, reps or 11 do
    local c, _, secs = exec(name, node, { "true" })
    if c == 0 then xs[#xs + 1] = secs end
  end
  return xs
end

local function above_floor(r, floor)
  local st = C.stats(floor)
  if not st then return end
  r.exec_floor = C.r4(st.median)
  local m, k = r.moonadm.median, r.kubeadm.median
  C.note("%s: above the lab exec floor (%.0f ms) moonadm %.0f ms%s", r.title, st.median * 1000,
    (m and (m - st.median) or 0) * 1000, k and (", kubeadm %.0f ms"):format((k - st.median) * 1000) or "")
end

local function events(text)
  local evs = {}
  for l in text:gmatch("[^\n]+") do
    if l:sub(1, 1) == "{" then
      local ok, e = pcall(cjson.decode, l)
      if ok and type(e) == "table" then evs[#evs + 1] = e end
    end
  end
  return evs
end

-- Every static pod process of a node gone (after a reset): the stand-in reports no pod process and
-- no control-plane port listens any more in the node's network namespace.
local function wait_pods_gone(name, node, timeout)
  local deadline = core.monotonic() + (timeout or 90)
  while core.monotonic() < deadline do
    local pc = proc.run { argv = { C.MOONADM, "lab", "exec", node, "--name", name, "--", "sh", "-c",
      "ss -Htln | grep -qE ':(6443|2379|2380|2381|10257|10259) '" } }
    if pc ~= 0 then
      local code, out = lab_cmd { "status", "--name", name, "-o", "json" }
      local st = code == 0 and cjson.decode(out:match("{.*}") or "{}") or {}
      local alive = false
      for _, n in ipairs(st.nodes or {}) do
        if n.name == node then
          for _, p in ipairs(n.pods or {}) do if p.pid ~= cjson.null and p.pid then alive = true end end
        end
      end
      if not alive then return true end
    end
    core.sleep(0.25)
  end
  return false
end

local function samples_row(group, id, title, m, k, extra)
  local r = { group = group, id = id, title = title, unit = "s", load_start = C.loadavg() }
  for tool, xs in pairs { moonadm = m or {}, kubeadm = k or {} } do
    local s = C.stats(xs)
    r[tool] = s and { min = C.r4(s.min), median = C.r4(s.median), max = C.r4(s.max), n = s.n, samples = xs } or { n = 0 }
  end
  if r.moonadm.median and r.kubeadm.median and r.moonadm.median > 0 then r.ratio = C.r4(r.kubeadm.median / r.moonadm.median) end
  for kk, v in pairs(extra or {}) do r[kk] = v end
  C.results.rows[#C.results.rows + 1] = r
  C.say("%s: moonadm %s kubeadm %s ratio %s", title, tostring(r.moonadm.median), tostring(r.kubeadm.median), tostring(r.ratio))
  return r
end

local function go_seconds(s)
  -- Go durations as kubeadm prints them: 1.5s, 312ms, 45.1µs, 1m2.5s
  local total, any = 0, false
  for num, unit in s:gmatch("([%d.]+)([^%d.]*)") do
    local v = tonumber(num)
    if v then
      any = true
      if unit == "m" then total = total + v * 60
      elseif unit == "ms" then total = total + v / 1000
      elseif unit == "µs" or unit == "us" then total = total + v / 1e6
      elseif unit == "ns" then total = total + v / 1e9
      elseif unit == "h" then total = total + v * 3600
      else total = total + v end
    end
  end
  return any and total or nil
end

-- kubeadm's waiting: the kubelet check plus the longest control-plane check (they run together).
local function kubeadm_waiting(text)
  local kubelet = text:match("%[kubelet%-check%] The kubelet is healthy after (%S+)")
  local w = kubelet and go_seconds(kubelet) or 0
  local longest = 0
  for d in text:gmatch("%[control%-plane%-check%] [%w%-]+ is healthy after (%S+)") do
    local s = go_seconds(d)
    if s and s > longest then longest = s end
  end
  return w + longest
end

local function join_config(name, node, ip_cp1, token, pin, control_plane)
  local path = C.WORK .. "/" .. name .. "-" .. node .. "-join.yaml"
  C.writef(path, ([[
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: %s:6443
    token: %s
    caCertHashes:
    - %s
nodeRegistration:
  name: %s
  criSocket: unix:///var/run/containerd/containerd.sock
]]):format(ip_cp1, token, pin, node))
  return path
end

local function cluster_secrets(name)
  local dir = lab_dir(name)
  local cfg = C.readf(dir .. "/cp1-init.yaml") or ""
  local token = cfg:match("token: (%w+%.%w+)")
  local ca = C.readf(dir .. "/cp1/etc/kubernetes/pki/ca.crt")
  local pin = ca and require("moonadm.pki").read_cert(ca):pin()
  return token, pin
end

-- apiserver_request_total with code 429 or 5xx, summed (the API errors every client saw).
local function api_errors(kubeconfig)
  local _, out = proc.run { argv = { C.TOP .. "/.lab/bin/kubectl", "--kubeconfig", kubeconfig, "get", "--raw", "/metrics" } }
  local n = 0
  for line in (out or ""):gmatch("[^\n]+") do
    if line:match("^apiserver_request_total{") then
      local code = line:match('code="(%d+)"')
      if code and (code == "429" or code:sub(1, 1) == "5") then n = n + (tonumber(line:match("(%S+)$")) or 0) end
    end
  end
  return n
end

---------------------------------------------------------------------------------------------------
local function part(p)
  local v = os.getenv("BENCH_LAB_PARTS")
  if not v or v == "" then return true end
  return (("," .. v .. ","):find("," .. p .. ",", 1, true)) ~= nil
end

function L.section_lab()
  if core.getuid() ~= 0 then return C.skip("lab", "needs root") end
  if not io.open(C.TOP .. "/.lab/bin/kube-apiserver", "r") then return C.skip("lab", ".lab/bin is empty: run `make lab-bins`") end
  LOGS = "/tmp/moonadm-bench-logs"
  os.execute("rm -rf " .. LOGS .. " && mkdir -p " .. LOGS)
  local INIT_REPS = tonumber(os.getenv("BENCH_INIT_REPS") or "") or 3
  -- worker joins per tool, each on a spare of its own (s1, s3, ... moonadm; s2, s4, ... kubeadm)
  local JOIN_REPS = tonumber(os.getenv("BENCH_JOIN_REPS") or "") or 3
  local name, subnet = "bench1", "10.253.31"
  local cp1ip = subnet .. ".11"
  down(name)
  local code, _, upsecs = up(name, subnet, { "--spares", tostring(2 * JOIN_REPS + 1) })
  if code ~= 0 then return C.skip("one-node init", "lab up failed") end
  local initcfg = lab_dir(name) .. "/cp1-init.yaml"
  local kcfg = C.WORK .. "/kubeadm-cp1-init.yaml"
  C.writef(kcfg, (C.readf(initcfg):gsub("kind: ClusterConfiguration\n", "kind: ClusterConfiguration\nkubernetesVersion: " .. "v1.35.4" .. "\n", 1)))

  local m = { wall = {}, wait = {}, engine = {}, engine_nopre = {}, preflight = {}, reset = {}, notice = {}, within = {} }
  local k = { wall = {}, wait = {}, engine = {}, reset = {} }
  local phase_samples = {}

  local function moon_reset()
    local c, out, secs = exec(name, "cp1", { "moonadm", "reset", "-f", "-o", "json" })
    if c ~= 0 then C.say("moonadm reset failed: %s", out:sub(-500)) return end
    m.reset[#m.reset + 1] = secs
    wait_pods_gone(name, "cp1")
  end

  moon_reset() -- the lab's own init goes first
  local floor = exec_floor(name, "cp1")
  for i = 1, INIT_REPS do
    C.say("one-node init %d/%d (load %s)", i, INIT_REPS, table.concat(C.loadavg(), " "))
    -- kubeadm init on the same node (preflight errors ignored: there is no container runtime here)
    local kc, kout, ksecs = exec(name, "cp1", { C.KUBEADM, "init", "--config", kcfg, "--upload-certs",
      "--ignore-preflight-errors=all", "-v", "1" }, C.WORK .. "/kubeadm-init-" .. i .. ".log")
    os.execute(("mkdir -p %s && cp %s/kubeadm-init-%d.log %s/"):format(LOGS, C.WORK, i, LOGS))
    if kc == 0 then
      local w = kubeadm_waiting(kout)
      k.wall[#k.wall + 1], k.wait[#k.wait + 1], k.engine[#k.engine + 1] = ksecs, w, ksecs - w
    else
      C.say("kubeadm init failed (exit %d): %s", kc, kout:sub(-800))
    end
    local rc, rout, rsecs = exec(name, "cp1", { C.KUBEADM, "reset", "-f" })
    if rc == 0 then k.reset[#k.reset + 1] = rsecs else C.say("kubeadm reset failed: %s", rout:sub(-400)) end
    wait_pods_gone(name, "cp1")
    -- whatever kubeadm reset left (it cleans through the CRI, absent here), removed on the host side
    local nroot = lab_dir(name) .. "/cp1"
    os.execute(("rm -rf '%s'/var/lib/etcd/* '%s'/etc/kubernetes/* '%s'/var/lib/kubelet/* && mkdir -p '%s/etc/kubernetes/manifests'"):format(nroot, nroot, nroot, nroot))

    -- moonadm init with an independent /readyz poller (every 10 ms) running beside it
    local pollf = C.WORK .. "/readyz.out"
    os.remove(pollf)
    local ppid = assert(proc.spawn { argv = { C.MOONADM, "lab", "exec", "cp1", "--name", name, "--", "sh", "-c",
      ("until curl -sk --max-time 0.5 -o /dev/null -w '%%{http_code}' https://%s:6443/readyz | grep -q 200; do sleep 0.01; done; date +%%s.%%N"):format(cp1ip) },
      log = pollf })
    local logf = C.WORK .. "/moonadm-init.json"
    local mc, mout, msecs = exec(name, "cp1", { "moonadm", "init", "--config", initcfg, "--upload-certs", "-o", "json", "-v", "1" }, logf)
    os.execute(("cp %s %s/moonadm-init-%d.json"):format(logf, LOGS, i))
    local deadline = core.monotonic() + 30
    while not proc.wait(ppid, true) and core.monotonic() < deadline do core.sleep(0.05) end
    if proc.alive(ppid) then proc.signal(ppid, "KILL"); proc.wait(ppid) end
    if mc == 0 then
      local evs = events(mout)
      local waiting, pre, healthy_at = 0, 0, nil
      local first, last
      for _, e in ipairs(evs) do
        first = first or e.time
        last = e.time
        if e.type == "phase-end" then
          phase_samples[e.phase] = phase_samples[e.phase] or {}
          table.insert(phase_samples[e.phase], e.duration)
          if e.phase == "wait-control-plane" then waiting = e.duration end
          if e.phase == "preflight" then pre = e.duration end
        end
        local msg = e.message or ""
        if msg:match("kube%-apiserver is healthy after") then healthy_at = e.time end
        local within = msg:match("kube%-apiserver: healthy at most (%S+) before")
        if within then m.within[#m.within + 1] = go_seconds(within) end
      end
      m.wall[#m.wall + 1], m.wait[#m.wait + 1] = msecs, waiting
      m.engine[#m.engine + 1] = msecs - waiting
      m.engine_nopre[#m.engine_nopre + 1] = msecs - waiting - pre
      m.preflight[#m.preflight + 1] = pre
      local ready = tonumber((C.readf(pollf) or ""):match("(%d+%.%d+)%s*$"))
      if ready and healthy_at then m.notice[#m.notice + 1] = healthy_at - ready end
    else
      C.say("moonadm init failed (exit %d): %s", mc, mout:sub(-800))
    end
    if i < INIT_REPS then moon_reset() end
  end
  local phase_medians = {}
  for ph, xs in pairs(phase_samples) do phase_medians[ph] = C.r4(C.stats(xs).median) end
  C.results.lab_init_phase_medians = phase_medians
  samples_row("lab", "init-wall", "one-node init, wall", m.wall, k.wall,
    { note = "kubeadm with --ignore-preflight-errors=all (no container runtime in the lab); both on the same lab node, alternating" })
  samples_row("lab", "init-waiting", "one-node init, waiting for the components", m.wait, k.wait,
    { note = "moonadm: the wait-control-plane phase; kubeadm: its kubelet check + the slowest control-plane check" })
  samples_row("lab", "lab-exec-floor", "lab exec floor: true on cp1", floor, nil,
    { note = "`moonadm lab exec cp1 -- true`, spawned as every lab row spawns its tool" })
  above_floor(samples_row("lab", "init-engine-overhead", "one-node init, engine time (wall - waiting)", m.engine, k.engine), floor)
  samples_row("lab", "init-engine-no-preflight", "one-node init, engine time without preflight", m.engine_nopre, nil,
    { moonadm_preflight = m.preflight })
  samples_row("lab", "reset-last-cp", "reset of the last control plane", m.reset, k.reset,
    { note = "moonadm waits until the static pods stopped (the stand-in's stopping containers killed, as a CRI removal does); kubeadm removes containers through the CRI (absent here) and does not wait" })
  samples_row("lab", "readyz-notice", "wait sees apiserver after first /readyz 200", m.notice, nil,
    { note = "moonadm's 'kube-apiserver is healthy' event time minus the first 200 of an independent 10 ms /readyz poller; negative = moonadm saw /livez before /readyz was ready",
      moonadm_noticed_within = m.within })

  -- Worker joins on the moonadm-initialised cluster, alternating: s1, s3, ... with moonadm, s2, s4, ...
  -- with kubeadm (one sample each was noise: the CSR approver's latency varies by a second).
  local token, pin = cluster_secrets(name)
  if token and pin then
    -- Both joins wait for the node's TLS bootstrap, which needs the controller-manager's CSR
    -- approver: the init just before restarted it, so the first join (moonadm's) used to pay for its
    -- leader election. Untimed: wait until it holds its lease, then a few seconds for its controllers.
    local admin = lab_dir(name) .. "/admin.conf"
    local deadline = core.monotonic() + 90
    repeat
      local _, lease = proc.run { argv = { C.TOP .. "/.lab/bin/kubectl", "--kubeconfig", admin, "get", "-n", "kube-system",
        "lease", "kube-controller-manager", "-o", "jsonpath={.spec.holderIdentity}" } }
      local held = lease and lease:match("%S")
      if not held then core.sleep(0.5) end
    until held or core.monotonic() > deadline
    core.sleep(5)
    -- The cluster's first join after an init took 1.5 s longer whichever tool made it (both sections,
    -- 2026-12-06): one untimed join on the last spare takes that cost before the timed ones.
    local warm = "s" .. (2 * JOIN_REPS + 1)
    exec(name, warm, { "moonadm", "join", "--config", join_config(name, warm, cp1ip, token, pin) })
    local mj, kj = {}, {}
    for i = 1, JOIN_REPS do
      local sm, sk = "s" .. (2 * i - 1), "s" .. (2 * i)
      local c1, o1, t1 = exec(name, sm, { "moonadm", "join", "--config", join_config(name, sm, cp1ip, token, pin) })
      local c2, o2, t2 = exec(name, sk, { C.KUBEADM, "join", "--config", join_config(name, sk, cp1ip, token, pin),
        "--ignore-preflight-errors=all" })
      if c1 ~= 0 then C.say("moonadm join %s failed: %s", sm, o1:sub(-600)) else mj[#mj + 1] = t1 end
      if c2 ~= 0 then C.say("kubeadm join %s failed: %s", sk, o2:sub(-600)) else kj[#kj + 1] = t2 end
    end
    samples_row("lab", "worker-join", "worker join (alternating, a spare each)", #mj > 0 and mj or nil, #kj > 0 and kj or nil,
      { note = "after the controller-manager holds its lease; each join on a fresh spare node, the tools alternating; kubeadm with --ignore-preflight-errors=all" })
  else
    C.skip("worker join", "could not read the token or CA of " .. name)
  end

  -- token list with 5,000 bootstrap tokens (one kubectl apply of a List of Secrets)
  local ntok = tonumber(os.getenv("BENCH_TOKENS") or "") or 5000
  local admin = lab_dir(name) .. "/cp1/etc/kubernetes/admin.conf"
  local items = {}
  local chars = "abcdefghijklmnopqrstuvwxyz0123456789"
  local function rnd(n)
    local t = {}
    for j = 1, n do local x = math.random(#chars); t[j] = chars:sub(x, x) end
    return table.concat(t)
  end
  for i = 1, ntok do
    local id = rnd(6)
    items[#items + 1] = { apiVersion = "v1", kind = "Secret", type = "bootstrap.kubernetes.io/token",
      metadata = { name = "bootstrap-token-" .. id, namespace = "kube-system" },
      stringData = { ["token-id"] = id, ["token-secret"] = rnd(16), description = "bench token " .. i,
        expiration = "2099-01-01T00:00:00Z", ["usage-bootstrap-authentication"] = "true",
        ["usage-bootstrap-signing"] = "true", ["auth-extra-groups"] = "system:bootstrappers:kubeadm:default-node-token" } }
  end
  local lf = C.WORK .. "/tokens.json"
  C.writef(lf, cjson.encode { apiVersion = "v1", kind = "List", items = items })
  local t0 = core.monotonic()
  local ac, aout = proc.run { argv = { C.TOP .. "/.lab/bin/kubectl", "--kubeconfig", admin, "create", "-f", lf } }
  C.say("created %d token secrets in %.1fs (exit %d)", ntok, core.monotonic() - t0, ac)
  if ac ~= 0 then C.say("%s", aout:sub(-400)) end
  local tm, tk = {}, {}
  local nm, nk
  for _ = 1, 3 do
    local d1, c1, o1 = C.timed({ C.MOONADM, "token", "list", "--kubeconfig", admin })
    if c1 == 0 then tm[#tm + 1] = d1; nm = select(2, o1:gsub("\n", "")) else C.say("moonadm token list: %s", o1:sub(-300)) end
    local d2, c2, o2 = C.timed({ C.KUBEADM, "token", "list", "--kubeconfig", admin })
    if c2 == 0 then tk[#tk + 1] = d2; nk = select(2, o2:gsub("\n", "")) else C.say("kubeadm token list: %s", o2:sub(-300)) end
  end
  samples_row("lab", "token-list-5000", ("token list with %d tokens"):format(ntok), tm, tk,
    { output_lines = { moonadm = nm, kubeadm = nk } })
  down(name)

  if not part("ha") then return end
  -- Three control planes: each join's time from lab up's stamped output.
  local c3, lines3, up3 = up("bench2", "10.253.32", { "--control-planes", "3" })
  if c3 == 0 then
    local js = join_times(lines3)
    local xs = {}
    for _, j in ipairs(js) do xs[#xs + 1] = j.seconds end
    samples_row("lab", "cp-join-3", "control-plane join (cp2, cp3 of 3)", xs, nil,
      { per_node = js, lab_up_seconds = C.r4(up3), note = "moonadm only: the lab joins with moonadm" })
  else
    C.skip("three-control-plane joins", "lab up failed")
  end
  down("bench2")

  -- KEP-4471: the two join orders, with 2 control planes each.
  local orders = {}
  for _, v in ipairs { { "bench3", "10.253.33", {}, "ControlPlaneKubeletLocalMode=true (default)" },
    { "bench4", "10.253.34", { "--feature-gates", "ControlPlaneKubeletLocalMode=false" }, "ControlPlaneKubeletLocalMode=false" } } do
    local args = { "--control-planes", "2" }
    for _, a in ipairs(v[3]) do args[#args + 1] = a end
    local c, lines, total = up(v[1], v[2], args)
    if c == 0 then
      local js = join_times(lines)
      orders[#orders + 1] = { gate = v[4], join_seconds = js[1] and js[1].seconds, lab_up_seconds = total }
    else
      C.skip("KEP-4471 " .. v[4], "lab up failed")
    end
    down(v[1])
  end
  for _, o in ipairs(orders) do
    samples_row("lab", "kep4471-" .. (o.gate:match("=false") and "false" or "true"), "cp2 join of 2, " .. o.gate,
      o.join_seconds and { o.join_seconds } or nil, nil, { lab_up_seconds = C.r4(o.lab_up_seconds),
        note = "KEP-4471 join order; one sample; moonadm only (the lab joins with moonadm)" })
  end
  C.results.kep4471 = orders
end

---------------------------------------------------------------------------------------------------
-- The same one-node init, reset and worker join on the real-kubelet lab (kubelet + containerd per
-- node, `lab up --kubelet real`): lab bench7 on 10.253.37, 1 control plane + 1 worker. Here kubeadm
-- finds its container runtime, removes containers through the CRI on reset, and the waits are a real
-- kubelet's. Both tools use the lab's own config for each node (its patches directory, --node-ip).
function L.section_realnode()
  if core.getuid() ~= 0 then return C.skip("realnode", "needs root") end
  if not io.open(C.TOP .. "/.lab/images.tar", "r") or not io.open(C.TOP .. "/.lab/bin/kubelet", "r") then
    return C.skip("realnode", "the real-kubelet lab is not built: run `make lab-bins-node`")
  end
  LOGS = LOGS or "/tmp/moonadm-bench-logs"
  os.execute("mkdir -p " .. LOGS)
  local REPS = tonumber(os.getenv("BENCH_INIT_REPS") or "") or 3
  local name, subnet = "bench7", "10.253.37"
  local dir = lab_dir(name)
  local kubectl = C.TOP .. "/.lab/bin/kubectl"
  down(name)
  local code = up(name, subnet, { "--kubelet", "real", "--workers", "1" })
  if code ~= 0 then return C.skip("realnode", "lab up --kubelet real failed (lab " .. name .. " left for inspection)") end
  local initcfg = dir .. "/cp1-init.yaml"
  local kcfg = C.WORK .. "/kubeadm-real-cp1-init.yaml"
  -- kubeadm refuses --ignore-preflight-errors=all beside the lab's own list (SystemVerification)
  local function for_kubeadm(text)
    local out, skipping = {}, false
    for line in text:gmatch("[^\n]*\n") do
      if line == "  ignorePreflightErrors:\n" then skipping = true
      elseif skipping and line:match("^  %- ") then -- an item of that list
      else skipping = false; out[#out + 1] = line end
    end
    return table.concat(out)
  end
  C.writef(kcfg, for_kubeadm(C.readf(initcfg):gsub("kind: ClusterConfiguration\n", "kind: ClusterConfiguration\nkubernetesVersion: v1.35.4\n", 1)))
  local m = { wall = {}, wait = {}, engine = {}, reset = {}, join = {} }
  local k = { wall = {}, wait = {}, engine = {}, reset = {}, join = {} }
  local init_phases, join_phases = {}, {}
  local function cleanup_cp1()
    wait_pods_gone(name, "cp1")
    local nroot = dir .. "/cp1"
    os.execute(("rm -rf '%s'/var/lib/etcd/* '%s'/etc/kubernetes/* '%s'/var/lib/kubelet/* && mkdir -p '%s/etc/kubernetes/manifests'"):format(nroot, nroot, nroot, nroot))
  end
  local function moon_reset(node, into)
    local c, out, secs = exec(name, node, { "moonadm", "reset", "-f" })
    if c ~= 0 then C.say("moonadm reset %s failed: %s", node, out:sub(-500)) return false end
    if into then into[#into + 1] = secs end
    return true
  end
  moon_reset("w1")
  moon_reset("cp1")
  cleanup_cp1()
  local floor = exec_floor(name, "cp1")
  for i = 1, REPS do
    C.say("real-kubelet one-node init %d/%d (load %s)", i, REPS, table.concat(C.loadavg(), " "))
    local kc, kout, ksecs = exec(name, "cp1", { C.KUBEADM, "init", "--config", kcfg, "--upload-certs",
      "--ignore-preflight-errors=all", "-v", "1" }, C.WORK .. "/kubeadm-real-init-" .. i .. ".log")
    os.execute(("cp %s/kubeadm-real-init-%d.log %s/"):format(C.WORK, i, LOGS))
    if kc == 0 then
      local w = kubeadm_waiting(kout)
      k.wall[#k.wall + 1], k.wait[#k.wait + 1], k.engine[#k.engine + 1] = ksecs, w, ksecs - w
    else
      C.say("kubeadm init (real kubelet) failed (exit %d): %s", kc, kout:sub(-800))
    end
    local rc, rout, rsecs = exec(name, "cp1", { C.KUBEADM, "reset", "-f" })
    if rc == 0 then k.reset[#k.reset + 1] = rsecs else C.say("kubeadm reset failed: %s", rout:sub(-400)) end
    cleanup_cp1()
    local logf = C.WORK .. "/moonadm-real-init.json"
    local mc, mout, msecs = exec(name, "cp1", { "moonadm", "init", "--config", initcfg, "--upload-certs", "-o", "json", "-v", "1" }, logf)
    os.execute(("cp %s %s/moonadm-real-init-%d.json"):format(logf, LOGS, i))
    if mc == 0 then
      local waiting = 0
      for _, e in ipairs(events(mout)) do
        if e.type == "phase-end" then
          if e.phase == "wait-control-plane" then waiting = e.duration end
          init_phases[e.phase] = init_phases[e.phase] or {}
          table.insert(init_phases[e.phase], e.duration)
        end
      end
      m.wall[#m.wall + 1], m.wait[#m.wait + 1], m.engine[#m.engine + 1] = msecs, waiting, msecs - waiting
    else
      C.say("moonadm init (real kubelet) failed (exit %d): %s", mc, mout:sub(-800))
    end
    if i < REPS then moon_reset("cp1", m.reset); cleanup_cp1() end
  end
  local medians = {}
  for ph, xs in pairs(init_phases) do medians[ph] = C.r4(C.stats(xs).median) end
  C.results.realnode_init_phase_medians = medians
  samples_row("realnode", "init-real-wall", "real kubelet: one-node init, wall", m.wall, k.wall,
    { note = "lab --kubelet real; kubeadm with --ignore-preflight-errors=all, as the lab's own init ignores SystemVerification (cgroup v1)" })
  samples_row("realnode", "init-real-waiting", "real kubelet: one-node init, waiting", m.wait, k.wait)
  samples_row("realnode", "realnode-exec-floor", "real kubelet: lab exec floor, true on cp1", floor, nil)
  above_floor(samples_row("realnode", "init-real-engine", "real kubelet: one-node init, engine time", m.engine, k.engine), floor)
  samples_row("realnode", "reset-real-last-cp", "real kubelet: reset of the last control plane", m.reset, k.reset,
    { note = "both remove the static pods' containers through the CRI" })

  -- Worker joins of w1 onto moonadm's cluster, alternating tools; after each, the tool's own reset
  -- and the Node deleted (as a user re-joining a node does).
  local token, pin = cluster_secrets(name)
  local jcfg = C.WORK .. "/real-w1-join.yaml"
  if token and pin then
    local text = C.readf(dir .. "/w1-join.yaml")
    text = text:gsub("token: %S+", "token: " .. token, 1):gsub("%- sha256:%x+", "- " .. pin, 1)
    C.writef(jcfg, text)
    local kjcfg = C.WORK .. "/real-w1-join-kubeadm.yaml"
    C.writef(kjcfg, for_kubeadm(text))
    local admin = dir .. "/cp1/etc/kubernetes/admin.conf"
    local deadline = core.monotonic() + 90
    repeat
      local _, lease = proc.run { argv = { kubectl, "--kubeconfig", admin, "get", "-n", "kube-system",
        "lease", "kube-controller-manager", "-o", "jsonpath={.spec.holderIdentity}" } }
      local held = lease and lease:match("%S")
      if not held then core.sleep(0.5) end
    until held or core.monotonic() > deadline
    core.sleep(5)
    local function forget_w1()
      proc.run { argv = { kubectl, "--kubeconfig", admin, "delete", "node", "w1", "--ignore-not-found" } }
    end
    -- untimed: the cluster's first join after an init pays a cost of its own (see section_lab)
    exec(name, "w1", { "moonadm", "join", "--config", jcfg })
    moon_reset("w1"); forget_w1()
    for _ = 1, REPS do
      local c1, o1, t1 = exec(name, "w1", { "moonadm", "join", "--config", jcfg, "-o", "json", "-v", "1" })
      for _, e in ipairs(events(o1)) do
        if e.type == "phase-end" then
          join_phases[e.phase] = join_phases[e.phase] or {}
          table.insert(join_phases[e.phase], e.duration)
        end
      end
      if c1 == 0 then m.join[#m.join + 1] = t1 else C.say("moonadm join w1 failed: %s", o1:sub(-600)) end
      moon_reset("w1"); forget_w1()
      local c2, o2, t2 = exec(name, "w1", { C.KUBEADM, "join", "--config", kjcfg, "--ignore-preflight-errors=all" })
      if c2 == 0 then k.join[#k.join + 1] = t2 else C.say("kubeadm join w1 failed: %s", o2:sub(-600)) end
      exec(name, "w1", { C.KUBEADM, "reset", "-f" }); forget_w1()
    end
    local medians = {}
    for ph, xs in pairs(join_phases) do medians[ph] = C.r4(C.stats(xs).median) end
    C.results.realnode_join_phase_medians = medians
    samples_row("realnode", "worker-join-real", "real kubelet: worker join", m.join, k.join,
      { note = "w1 alternately with each tool, each followed by its own reset and the Node deleted" })
  else
    C.skip("real kubelet worker join", "could not read the token or CA of " .. name)
  end
  down(name)
end

---------------------------------------------------------------------------------------------------
function L.section_scale()
  if core.getuid() ~= 0 then return C.skip("scale", "needs root") end
  local avail = tonumber(C.sh("awk '/MemAvailable/{print $2}' /proc/meminfo")) or 0
  -- 50 parallel worker joins against one control plane
  local N = tonumber(os.getenv("BENCH_JOINS") or "") or 50
  if avail < (600 + 30 * N + 1024) * 1024 then
    C.skip(N .. " parallel joins", ("MemAvailable %d MiB is too little for 1 control plane + %d spares"):format(avail // 1024, N))
  else
    local name = "bench5"
    down(name)
    local c = up(name, "10.253.35", { "--spares", tostring(N) })
    if c == 0 then
      local token, pin = cluster_secrets(name)
      local admin = lab_dir(name) .. "/cp1/etc/kubernetes/admin.conf"
      local err0 = api_errors(admin)
      local jobs = {}
      local t0 = core.monotonic()
      for i = 1, N do
        local node = "s" .. i
        local cfg = join_config(name, node, "10.253.35.11", token, pin)
        local logf = C.WORK .. "/join-" .. node .. ".json"
        jobs[i] = { node = node, log = logf, pid = assert(proc.spawn { argv = { C.MOONADM, "lab", "exec", node, "--name", name, "--",
          "moonadm", "join", "--config", cfg, "-o", "json" }, log = logf }) }
      end
      local pending = N
      local deadline = t0 + 900
      while pending > 0 and core.monotonic() < deadline do
        for _, j in ipairs(jobs) do
          if not j.done then
            local done, code = proc.wait(j.pid, true)
            if done then j.done, j.code, j.seconds, pending = true, code, core.monotonic() - t0, pending - 1 end
          end
        end
        core.sleep(0.05)
      end
      local xs, failed, warn_lines = {}, 0, 0
      for _, j in ipairs(jobs) do
        if j.done and j.code == 0 then xs[#xs + 1] = j.seconds else failed = failed + 1 end
        if not j.done then proc.signal(j.pid, "KILL") end
        for _, e in ipairs(events(C.readf(j.log) or "")) do
          if e.type == "warning" or e.type == "error" then warn_lines = warn_lines + 1 end
        end
      end
      local err1 = api_errors(admin)
      samples_row("scale", "parallel-joins", ("%d worker joins started at once"):format(N), xs, nil, {
        failed = failed, api_errors_429_5xx = err1 - err0, client_warnings_errors = warn_lines,
        per_join = (function() local t = {} for _, j in ipairs(jobs) do t[#t + 1] = { node = j.node, seconds = j.seconds and C.r4(j.seconds), code = j.code } end return t end)(),
        note = "each sample = seconds from the common start to that join's end; api_errors = apiserver_request_total{code=429|5xx} delta" })
    else
      C.skip(N .. " parallel joins", "lab up with spares failed")
    end
    down(name)
  end
  -- 5 control planes: joins, then the etcd endpoint discovery + member removal of a control plane's reset
  avail = tonumber(C.sh("awk '/MemAvailable/{print $2}' /proc/meminfo")) or 0
  if avail < 5 * 600 * 1024 + 3 * 1024 * 1024 then
    C.skip("5 control planes", ("MemAvailable %d MiB: 5 x ~600 MiB plus 3 GiB headroom does not fit"):format(avail // 1024))
    return
  end
  local name = "bench6"
  down(name)
  local c, lines = up(name, "10.253.36", { "--control-planes", "5" })
  if c == 0 then
    local js = join_times(lines)
    local xs = {}
    for _, j in ipairs(js) do xs[#xs + 1] = j.seconds end
    samples_row("scale", "cp-join-5", "control-plane join (cp2..cp5 of 5)", xs, nil, { per_node = js })
    local rc, out, secs = exec(name, "cp5", { "moonadm", "reset", "-f", "-o", "json" })
    local remove
    for _, e in ipairs(events(out)) do
      if e.type == "phase-end" and e.phase == "remove-etcd-member" then remove = e.duration end
    end
    samples_row("scale", "etcd-endpoints-5", "reset cp5 of 5: etcd endpoint discovery + member removal", remove and { remove } or nil, nil,
      { reset_seconds = secs, reset_code = rc })
  else
    C.skip("5 control planes", "lab up failed")
  end
  down(name)
end

return L
