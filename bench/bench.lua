-- moonadm vs the reference kubeadm, measured side by side in one run (issue 11).
-- Run with `bin/moonadm lua bench/bench.lua` (bench/run.sh does). Every row times the same operation
-- for both tools on the same machine in the same run, interleaved (moonadm, kubeadm, moonadm, ...),
-- and keeps min/median/max wall seconds, median CPU seconds (user+sys), max RSS and the load average.
-- Nothing here asserts: targets are reported against, never enforced.
--
-- Environment (see bench/README.md):
--   BENCH_REPS=N       repetitions of the fast rows (default 7; RSA-4096 uses N/2, at least 3)
--   BENCH_ONLY=a,b     only these sections: limit,pki,phases,startup,size,instr,lab,realnode,scale
--   BENCH_LAB=0        skip the lab sections (no root, no lab binaries)
--   BENCH_SCALE=1      also the heavy scale items (50 parallel worker joins, 5 control planes)
--   BENCH_OUT=DIR      results directory (default bench/results)
--   BENCH_KUBEADM=PATH the reference kubeadm (default .lab/bin/kubeadm)
local cjson = require "cjson"
local core = require "moonadm.core"
local proc = require "moonadm.proc"

local TOP = core.exe():match("^(.*)/bin/moonadm$") or os.getenv("PWD")
-- The binary under test is a private snapshot of bin/moonadm: other people rebuild bin/moonadm in
-- place while a run goes on ("exec: Permission denied" mid-run). SNAP/.lab points at the checkout's
-- .lab, so the lab (which finds .lab next to its binary) still uses .lab/bin and .lab/NAME, and
-- SNAP/packaging at its kubelet unit drop-in (the real-kubelet lab's kubelet service).
local SNAP = "/tmp/moonadm-bench-snap." .. core.getpid()
do
  local ok = false
  for _ = 1, 20 do
    os.execute(("rm -rf '%s' && mkdir -p '%s/bin' && cp '%s/bin/moonadm' '%s/bin/moonadm' && ln -s '%s/.lab' '%s/.lab' && ln -s '%s/packaging' '%s/packaging'"):format(
      SNAP, SNAP, TOP, SNAP, TOP, SNAP, TOP, SNAP))
    if os.execute(("'%s/bin/moonadm' version >/dev/null 2>&1"):format(SNAP)) then ok = true break end
    core.sleep(3)
  end
  if not ok then error("could not take a working snapshot of bin/moonadm", 0) end
end
local MOONADM = SNAP .. "/bin/moonadm"
local KUBEADM = os.getenv("BENCH_KUBEADM") or (TOP .. "/.lab/bin/kubeadm")
local KVER = "v1.35.4"
local REPS = tonumber(os.getenv("BENCH_REPS") or "") or 7
local OUT = os.getenv("BENCH_OUT") or (TOP .. "/bench/results")
local SCALE = os.getenv("BENCH_SCALE") == "1"
local ONLY = {}
for s in (os.getenv("BENCH_ONLY") or ""):gmatch("[^,%s]+") do ONLY[s] = true end
local function want(section)
  if next(ONLY) then return ONLY[section] end
  if section == "lab" or section == "realnode" or section == "scale" then
    if os.getenv("BENCH_LAB") == "0" then return false end
    if section == "scale" then return SCALE end
  end
  return true
end

local WORK = "/tmp/moonadm-bench." .. core.getpid()
os.execute("rm -rf " .. WORK .. " && mkdir -p " .. WORK)

local results = { started = os.date("!%Y-%m-%dT%H:%M:%SZ"), host = {}, rows = {}, notes = {}, skipped = {} }

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>/dev/null"))
  local out = p:read("a")
  p:close()
  return (out:gsub("%s+$", ""))
end
local function readf(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local t = f:read("a")
  f:close()
  return t
end
local function writef(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end
local function loadavg()
  local a, b, c = (readf("/proc/loadavg") or ""):match("^(%S+) (%S+) (%S+)")
  return { tonumber(a), tonumber(b), tonumber(c) }
end
local function say(fmt, ...) io.stderr:write(("[bench %s] "):format(os.date("%H:%M:%S")) .. fmt:format(...) .. "\n") end
local function note(fmt, ...) local s = fmt:format(...); results.notes[#results.notes + 1] = s; say("NOTE: %s", s) end
local function skip(item, why) results.skipped[#results.skipped + 1] = { item = item, why = why }; say("SKIP %s: %s", item, why) end

local function stats(xs)
  if #xs == 0 then return nil end
  local s = {}
  for i, x in ipairs(xs) do s[i] = x end
  table.sort(s)
  local n = #s
  local med = n % 2 == 1 and s[(n + 1) // 2] or (s[n // 2] + s[n // 2 + 1]) / 2
  return { min = s[1], median = med, max = s[n], n = n }
end
local function r4(x) return x and math.floor(x * 10000 + 0.5) / 10000 end

-- Runs argv under /usr/bin/time (max RSS, CPU), optionally in a private mount namespace.
-- Returns wall seconds, exit code, output, {rss_kb, cpu_s}.
local TIME = "/usr/bin/time"
local function timed(argv, opts)
  opts = opts or {}
  local tf = WORK .. "/time.out"
  local full = { TIME, "-f", "%M %U %S", "-o", tf }
  for _, a in ipairs(argv) do full[#full + 1] = a end
  local t0 = core.monotonic()
  local code, out = proc.run { argv = full, mounts = opts.mounts, cwd = opts.cwd or WORK, env = opts.env }
  local dt = core.monotonic() - t0
  local rss, u, s = (readf(tf) or ""):match("(%d+) ([%d.]+) ([%d.]+)%s*$")
  return dt, code, out or "", { rss_kb = tonumber(rss), cpu_s = (tonumber(u) or 0) + (tonumber(s) or 0) }
end

-- The start-up rows: timed as a shell runs a command (fork, exec, wait4), with nothing between the
-- harness and the tool (timed() adds /usr/bin/time's own fork and exec, and the rows that write
-- files a private mount namespace: the floor was 2.6 ms that way, 0.8 ms this way). CPU from wait4;
-- no RSS (a forked child counts its parent's pages until exec): one run through timed() after the
-- reps gives it.
local function timed_direct(argv, opts)
  opts = opts or {}
  local t0 = core.monotonic()
  local code, out, cpu = proc.run { argv = argv, cwd = opts.cwd or WORK, env = opts.env, cpu_time = true }
  local dt = core.monotonic() - t0
  return dt, code, out or "", { cpu_s = cpu or 0 }
end

-- Waits (at most BENCH_QUIET_WAIT seconds, default 120; 0: never) for the 1-minute load to drop
-- under 0.5, so that a row starts on a quiet machine; the load it started at is kept with the row.
local function quiet()
  local wait = tonumber(os.getenv("BENCH_QUIET_WAIT") or "") or 120
  local deadline = core.monotonic() + wait
  while tonumber(loadavg()[1]) >= 0.5 and core.monotonic() < deadline do core.sleep(2) end
end

-- A row: fns.moonadm(i) / fns.kubeadm(i) return argv, opts (after any untimed preparation).
local function row(group, id, title, reps, fns, extra)
  quiet()
  say("%s (%d reps) load %s", title, reps, table.concat(loadavg(), " "))
  local r = { group = group, id = id, title = title, unit = "s", reps = reps, load_start = loadavg() }
  for _, tool in ipairs { "moonadm", "kubeadm" } do r[tool] = { wall = {}, cpu = {}, rss = {} } end
  for i = 1, reps do
    for _, tool in ipairs { "moonadm", "kubeadm" } do
      local argv, opts = fns[tool](i)
      local dt, code, out, m = (fns.direct and timed_direct or timed)(argv, opts)
      if code ~= 0 and not (opts and opts.ok_codes and opts.ok_codes[code]) then
        say("%s %s failed (exit %d): %s", tool, id, code, out:sub(-600))
        r[tool].errors = (r[tool].errors or 0) + 1
        r[tool].last_error = out:sub(-300)
      else
        local t = r[tool]
        t.wall[#t.wall + 1] = dt
        t.cpu[#t.cpu + 1] = m.cpu_s
        t.rss[#t.rss + 1] = m.rss_kb
      end
      if fns.after then fns.after(tool, i) end
    end
  end
  if fns.direct then -- the peak memory, from one run the way timed() measures it
    for _, tool in ipairs { "moonadm", "kubeadm" } do
      local _, _, _, m = timed(fns[tool](reps + 1))
      r[tool].rss = { m.rss_kb }
    end
  end
  r.load_end = loadavg()
  for _, tool in ipairs { "moonadm", "kubeadm" } do
    local t = r[tool]
    local w, c = stats(t.wall), stats(t.cpu)
    local maxrss = 0
    for _, x in ipairs(t.rss) do if x and x > maxrss then maxrss = x end end
    r[tool] = { min = r4(w and w.min), median = r4(w and w.median), max = r4(w and w.max), n = w and w.n or 0,
      cpu_median = r4(c and c.median), max_rss_kb = maxrss, errors = t.errors, last_error = t.last_error }
  end
  if r.moonadm.median and r.kubeadm.median and r.moonadm.median > 0 then
    r.ratio = r4(r.kubeadm.median / r.moonadm.median)
  end
  if r.moonadm.cpu_median and r.kubeadm.cpu_median and r.moonadm.cpu_median > 0 then
    r.cpu_ratio = r4(r.kubeadm.cpu_median / r.moonadm.cpu_median)
  end
  for k, v in pairs(extra or {}) do r[k] = v end
  results.rows[#results.rows + 1] = r
  say("  moonadm median %.4fs  kubeadm median %.4fs  ratio %s", r.moonadm.median or -1, r.kubeadm.median or -1, tostring(r.ratio))
  return r
end

-- A row measured once per tool by other means (sizes, instruction counts): values, not samples.
local function value_row(group, id, title, unit, mv, kv, extra)
  local r = { group = group, id = id, title = title, unit = unit, load_start = loadavg(),
    moonadm = { min = mv, median = mv, max = mv, n = mv and 1 or 0 }, kubeadm = { min = kv, median = kv, max = kv, n = kv and 1 or 0 } }
  if mv and kv and mv > 0 then r.ratio = r4(kv / mv) end
  for k, v in pairs(extra or {}) do r[k] = v end
  results.rows[#results.rows + 1] = r
  say("%s: moonadm %s kubeadm %s %s ratio %s", title, tostring(mv), tostring(kv), unit, tostring(r.ratio))
  return r
end

---------------------------------------------------------------------------------------------------
-- Configs: the same kubeadm config for both tools.
local function config(alg, extra)
  return ([[
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.0.2.140
  bindPort: 6443
nodeRegistration:
  name: bench-node
  criSocket: unix:///var/run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
encryptionAlgorithm: %s
%s]]):format(KVER, alg, extra or "")
end
local CFG = {}
for _, alg in ipairs { "RSA-2048", "RSA-4096", "ECDSA-P256" } do
  CFG[alg] = WORK .. "/config-" .. alg .. ".yaml"
  writef(CFG[alg], config(alg))
end

-- Both tools write into a fresh root: moonadm with --root ROOT; kubeadm (which has no --root) in a
-- private mount namespace where ROOT's /etc/kubernetes and /var/lib/kubelet are bound at their
-- canonical paths. moonadm runs through the same namespace set-up so both pay the same spawn cost.
local nroot = 0
local function fresh_root(template)
  nroot = nroot + 1
  local root = ("%s/root-%d"):format(WORK, nroot)
  if template then
    os.execute(("cp -a '%s' '%s'"):format(template, root))
  else
    os.execute(("mkdir -p '%s/etc/kubernetes' '%s/var/lib/kubelet'"):format(root, root))
  end
  return root
end
local function mounts(root)
  return { { type = "bind", src = root .. "/etc/kubernetes", dst = "/etc/kubernetes" },
    { type = "bind", src = root .. "/var/lib/kubelet", dst = "/var/lib/kubelet" } }
end
local function moon(root, args, cfg)
  local argv = { MOONADM }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  for _, a in ipairs { "--root", root, "--config", cfg } do argv[#argv + 1] = a end
  return argv, { mounts = mounts(root) }
end
local function kadm(root, args, cfg)
  local argv = { KUBEADM }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  if cfg then argv[#argv + 1] = "--config"; argv[#argv + 1] = cfg end
  return argv, { mounts = mounts(root) }
end
local function cleanup_roots() os.execute("rm -rf " .. WORK .. "/root-*") end

-- Untimed preparation: a root holding each tool's own certs (+ kubeconfigs) to start a row from.
local function prepared(tool, phases, cfg)
  local root = fresh_root()
  for _, ph in ipairs(phases) do
    local args = { "init", "phase" }
    for w in ph:gmatch("%S+") do args[#args + 1] = w end
    local argv, opts
    if tool == "moonadm" then argv, opts = moon(root, args, cfg) else argv, opts = kadm(root, args, cfg) end
    local _, code, out = timed(argv, opts)
    if code ~= 0 then error(("preparing %s %s: %s"):format(tool, ph, out:sub(-400)), 0) end
  end
  return root
end

---------------------------------------------------------------------------------------------------
local function section_pki()
  for _, c in ipairs {
    { alg = "RSA-2048", reps = REPS },
    { alg = "RSA-4096", reps = tonumber(os.getenv("BENCH_REPS_4096") or "") or 3 },
    { alg = "ECDSA-P256", reps = REPS },
  } do
    row("pki", "certs-all-" .. c.alg:lower(), "init phase certs all, " .. c.alg, c.reps, {
      moonadm = function() return moon(fresh_root(), { "init", "phase", "certs", "all" }, CFG[c.alg]) end,
      kubeadm = function() return kadm(fresh_root(), { "init", "phase", "certs", "all" }, CFG[c.alg]) end,
      after = cleanup_roots,
    }, { generates_keys = true })
  end
  -- What choosing OpenSSL's RSA generator costs (SECURITY.md, "Key generation"): the same row with
  -- --rsa-generator openssl. A choice's price, not held to the 2x target.
  row("pki", "certs-all-rsa-2048-openssl", "init phase certs all, RSA-2048, OpenSSL's generator", REPS, {
    moonadm = function() return moon(fresh_root(), { "init", "phase", "certs", "all", "--rsa-generator", "openssl" }, CFG["RSA-2048"]) end,
    kubeadm = function() return kadm(fresh_root(), { "init", "phase", "certs", "all" }, CFG["RSA-2048"]) end,
    after = cleanup_roots,
  }, { generates_keys = true, rsa_generator = "openssl" })
  -- certs renew all: each tool renews the certificates (and kubeconfigs) it wrote itself.
  local tpl = {}
  for _, tool in ipairs { "moonadm", "kubeadm" } do tpl[tool] = prepared(tool, { "certs all", "kubeconfig all" }, CFG["RSA-2048"]) end
  row("pki", "certs-renew-all", "certs renew all, RSA-2048", REPS, {
    moonadm = function() return moon(fresh_root(tpl.moonadm), { "certs", "renew", "all" }, CFG["RSA-2048"]) end,
    kubeadm = function() return kadm(fresh_root(tpl.kubeadm), { "certs", "renew", "all" }, CFG["RSA-2048"]) end,
    after = function() os.execute(("ls -d %s/root-* | grep -v -e '%s$' -e '%s$' | xargs rm -rf"):format(WORK, tpl.moonadm, tpl.kubeadm)) end,
  }, { generates_keys = false })
  -- Does renewal keep the private keys? (kubeadm re-signs with the existing key.)
  local keeps = {}
  for _, tool in ipairs { "moonadm", "kubeadm" } do
    local root = fresh_root(tpl[tool])
    local key = root .. "/etc/kubernetes/pki/apiserver.key"
    local before = sh("sha256sum '" .. key .. "'")
    local argv, opts
    if tool == "moonadm" then argv, opts = moon(root, { "certs", "renew", "all" }, CFG["RSA-2048"])
    else argv, opts = kadm(root, { "certs", "renew", "all" }, CFG["RSA-2048"]) end
    timed(argv, opts)
    keeps[tool] = before ~= "" and before == sh("sha256sum '" .. key .. "'")
  end
  local r = results.rows[#results.rows]
  r.renew_keeps_private_keys = keeps
  r.note = ("apiserver.key kept by renew: moonadm %s, kubeadm %s"):format(tostring(keeps.moonadm), tostring(keeps.kubeadm))
  -- a renewal that writes new keys is a key-generating phase (kubeadm v1.35 does: NewCertAndKey)
  if not keeps.moonadm and not keeps.kubeadm then r.generates_keys = true end
  note("certs renew all: %s", r.note)
  cleanup_roots()
end

-- The limit: N keys straight from the engine's generator (bench/keygen_limit.lua), one key on one
-- core and the 11 keys of `certs all` on every core; the certs rows are read against it.
local function section_limit()
  local script = TOP .. "/bench/keygen_limit.lua"
  for _, c in ipairs {
    { id = "limit-rsa-2048-one", title = "limit: one RSA-2048 key, 1 core", alg = "RSA-2048", n = 1, threads = 1, reps = REPS * 3 },
    { id = "limit-rsa-2048-11", title = "limit: 11 RSA-2048 keys, all cores", alg = "RSA-2048", n = 11, threads = 0, reps = REPS },
    { id = "limit-ecdsa-p256-11", title = "limit: 11 ECDSA-P256 keys, all cores", alg = "ECDSA-P256", n = 11, threads = 0, reps = REPS },
    { id = "limit-rsa-2048-one-openssl", title = "limit: one RSA-2048 key, 1 core, OpenSSL's", alg = "RSA-2048", n = 1, threads = 1, reps = REPS * 3,
      env = "MOONADM_RSA_GENERATOR=openssl ", library = "OpenSSL's generator (EVP_PKEY_Q_keygen)" },
  } do
    quiet()
    local load = loadavg()
    local xs = {}
    for _ = 1, c.reps do
      local out = sh(("%s'%s' lua '%s' %s %d %d"):format(c.env or "", MOONADM, script, c.alg, c.n, c.threads))
      xs[#xs + 1] = tonumber(out:match("^(%S+)"))
    end
    local st = stats(xs)
    local r = value_row("limit", c.id, c.title, "s", st and r4(st.median), nil,
      { library = c.library or "engine/pki_rsa.c (sieve, Miller-Rabin on DRBG bases, constant-time exponentiations; one task per prime; ECDSA: OpenSSL)", reps = c.reps, min = st and r4(st.min),
        max = st and r4(st.max), load_start = load, cpus = core.ncpu() })
    if st then r.moonadm.min, r.moonadm.max, r.moonadm.n = r4(st.min), r4(st.max), st.n end
  end
end

local function section_phases()
  local cfg = CFG["RSA-2048"]
  local tpl = {}
  for _, tool in ipairs { "moonadm", "kubeadm" } do tpl[tool] = prepared(tool, { "certs all" }, cfg) end
  local function keep(tool, i) os.execute(("ls -d %s/root-* | grep -v -e '%s$' -e '%s$' | xargs rm -rf"):format(WORK, tpl.moonadm, tpl.kubeadm)) end
  local phases = {
    { id = "kubeconfig-all", args = { "kubeconfig", "all" }, needs_certs = true, keys = true },
    { id = "control-plane-all", args = { "control-plane", "all" } },
    { id = "etcd-local", args = { "etcd", "local" } },
    { id = "kubelet-start", args = { "kubelet-start" } },
  }
  for _, p in ipairs(phases) do
    local args = { "init", "phase" }
    for _, a in ipairs(p.args) do args[#args + 1] = a end
    local margs = table.move(args, 1, #args, 1, {})
    if p.id == "kubelet-start" then margs[#margs + 1] = "--node-runtime"; margs[#margs + 1] = "none" end
    row("phases", p.id, "init phase " .. table.concat(p.args, " "), REPS, {
      moonadm = function() return moon(fresh_root(p.needs_certs and tpl.moonadm), margs, cfg) end,
      kubeadm = function() return kadm(fresh_root(p.needs_certs and tpl.kubeadm), args, cfg) end,
      after = keep,
    }, { generates_keys = p.keys or false,
      note = p.id == "kubelet-start" and "moonadm --node-runtime none; kubeadm finds no systemd here and skips starting the kubelet" or nil })
  end
  cleanup_roots()
end

local function section_startup()
  local reps = REPS * 3
  -- none of these commands reads or writes the node's files: no mount namespace, timed directly
  local function plain(argv) return argv, {} end
  row("startup", "version", "version", reps, {
    moonadm = function() return plain { MOONADM, "version" } end,
    kubeadm = function() return plain { KUBEADM, "version" } end,
    direct = true,
  })
  row("startup", "phases-init", "phases init (kubeadm: init --help)", reps, {
    moonadm = function() return plain { MOONADM, "phases", "init" } end,
    kubeadm = function() return plain { KUBEADM, "init", "--help" } end,
    direct = true,
  })
  row("startup", "print-init-defaults", "config print init-defaults", reps, {
    moonadm = function() return plain { MOONADM, "config", "print", "init-defaults" } end,
    kubeadm = function() return plain { KUBEADM, "config", "print", "init-defaults" } end,
    direct = true,
  })
  -- What every row above pays before either tool runs: the same spawn (fork, exec, wait4, the
  -- output read back) of /bin/true. A ratio of 10x is out of reach once kubeadm / floor is below 10.
  quiet()
  local load = loadavg()
  local xs = {}
  for _ = 1, reps do xs[#xs + 1] = (timed_direct(plain { "/bin/true" })) end
  local st = stats(xs)
  local r = value_row("startup-floor", "spawn-floor", "spawn floor: /bin/true, timed the same way", "s",
    st and r4(st.median), nil, { reps = reps, load_start = load })
  if st then r.moonadm.min, r.moonadm.max, r.moonadm.n = r4(st.min), r4(st.max), st.n end
end

local function section_size()
  -- peak memory: the largest max RSS any timed command of each tool reached in this run
  local peak = { moonadm = 0, kubeadm = 0 }
  local where = {}
  for _, r in ipairs(results.rows) do
    if r.unit == "s" and r.group ~= "lab" and r.group ~= "realnode" then
      for _, tool in ipairs { "moonadm", "kubeadm" } do
        local v = r[tool] and r[tool].max_rss_kb or 0
        if v > peak[tool] then peak[tool] = v; where[tool] = r.id end
      end
    end
  end
  if peak.moonadm > 0 then
    value_row("memory", "peak-rss", "peak RSS over the local rows", "MiB", r4(peak.moonadm / 1024), r4(peak.kubeadm / 1024),
      { lower_is_better = true, where = where, ratio_note = "kubeadm/moonadm: how many times more memory kubeadm needs" })
  end
  local m, k = WORK .. "/moonadm.stripped", WORK .. "/kubeadm.stripped"
  os.execute(("cp '%s' '%s' && strip '%s'; cp '%s' '%s' && strip '%s'"):format(MOONADM, m, m, KUBEADM, k, k))
  local function size(p) return tonumber(sh("stat -c %s '" .. p .. "'")) end
  value_row("size", "binary-size", "stripped binary size", "MiB", r4(size(m) / 1048576), r4(size(k) / 1048576), {
    lower_is_better = true, unstripped_bytes = { moonadm = size(MOONADM), kubeadm = size(KUBEADM) },
    moonadm_runtime_deps = sh("readelf -d '" .. MOONADM .. "' | awk '/NEEDED/{print $NF}' | tr -d '[]' | tr '\\n' ' '"),
    moonadm_runtime_libs_total = tonumber(sh("ldd '" .. MOONADM .. "' | wc -l")),
    kubeadm_runtime_deps = sh("ldd '" .. KUBEADM .. "' 2>&1 | tr '\\n' ' '"),
  })
end

local function section_instr()
  if sh("command -v valgrind") == "" then return skip("instructions", "valgrind not installed") end
  local perf = sh("perf stat -x, -e instructions true 2>&1 >/dev/null")
  if perf:match("not supported") or perf == "" then
    note("perf stat: hardware counters (instructions/cycles) are <not supported> on this VM; instructions come from callgrind")
  end
  local function collected(tool, argv, opts)
    local vargv = { "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--trace-children=no" }
    for _, a in ipairs(argv) do vargv[#vargv + 1] = a end
    local t0 = core.monotonic()
    local code, out = proc.run { argv = vargv, mounts = opts.mounts, cwd = WORK }
    local n = out:match("Collected : (%d+)")
    say("callgrind %s: exit %d, %s instructions, %.1fs", tool, code, tostring(n), core.monotonic() - t0)
    if code ~= 0 then say("  %s", (out:match("[^\n]*Assertion[^\n]*") or out:match("[^\n]*[Tt]erminating[^\n]*") or out:sub(-200))) end
    return tonumber(n)
  end
  local mi = collected("moonadm", moon(fresh_root(), { "init", "phase", "certs", "all" }, CFG["ECDSA-P256"]))
  local ki = collected("kubeadm", kadm(fresh_root(), { "init", "phase", "certs", "all" }, CFG["ECDSA-P256"]))
  value_row("instructions", "certs-all-ecdsa-p256-instr", "instructions, certs all ECDSA-P256 (callgrind)", "Minstr",
    mi and r4(mi / 1e6), ki and r4(ki / 1e6), { lower_is_better = true,
      note = "callgrind counts the user-space instructions of the main process (all threads); kubeadm's Go runtime threads included" })
  if not ki then note("callgrind: valgrind crashes on the Go binary kubeadm (callgrind's signal-handling assertion in threads.c, Go's runtime signals), so kubeadm has no instruction count; compare the CPU seconds (cpu_median) of the timed rows instead") end
  local mv = collected("moonadm", { MOONADM, "version" }, { mounts = mounts(fresh_root()) })
  local kv = collected("kubeadm", { KUBEADM, "version" }, { mounts = mounts(fresh_root()) })
  value_row("instructions", "version-instr", "instructions, version (callgrind)", "Minstr", mv and r4(mv / 1e6), kv and r4(kv / 1e6),
    { lower_is_better = true })
  cleanup_roots()
end

---------------------------------------------------------------------------------------------------
-- The lab: real control planes (etcd, kube-apiserver, ...) run by moonadm's kubelet stand-in.
local lab = dofile(TOP .. "/bench/lab.lua")
lab.setup { MOONADM = MOONADM, KUBEADM = KUBEADM, TOP = TOP, WORK = WORK, say = say, note = note, skip = skip,
  loadavg = loadavg, stats = stats, r4 = r4, results = results, sh = sh, readf = readf, writef = writef,
  timed = timed, SCALE = SCALE, REPS = REPS }

---------------------------------------------------------------------------------------------------
local machine = {
  cpus = core.ncpu(), mem_total = sh("awk '/MemTotal/{print $2\" kB\"}' /proc/meminfo"),
  kernel = sh("uname -r"), moonadm_version = sh(MOONADM .. " version -o json || " .. MOONADM .. " version"),
  kubeadm_version = sh(KUBEADM .. " version -o short"), commit = sh("git -C '" .. TOP .. "' rev-parse --short HEAD"),
  moonadm_sha256 = sh("sha256sum '" .. MOONADM .. "' | cut -c1-16"),
}
results.host = machine
results.load_start = loadavg()
say("moonadm %s | kubeadm %s | %d cpus | load %s", machine.commit, machine.kubeadm_version, machine.cpus, table.concat(results.load_start, " "))

local sections = {
  { "limit", section_limit }, { "pki", section_pki }, { "phases", section_phases }, { "startup", section_startup }, { "instr", section_instr },
  { "size", section_size }, { "lab", lab.section_lab }, { "realnode", lab.section_realnode }, { "scale", lab.section_scale },
}
for _, s in ipairs(sections) do
  if want(s[1]) then
    local ok, err = xpcall(s[2], debug.traceback)
    if not ok then
      say("section %s failed: %s", s[1], err)
      results.notes[#results.notes + 1] = ("section %s failed: %s"):format(s[1], tostring(err):match("[^\n]*"))
    end
  end
end
if want("pki") and os.getenv("BENCH_PKI_AGAIN") == "1" then
  -- the PKI rows once more at the end (quieter machine?): kept as separate rows, marked "rerun"
  local before = #results.rows
  section_pki()
  for i = before + 1, #results.rows do results.rows[i].id = results.rows[i].id .. "-rerun"; results.rows[i].title = results.rows[i].title .. " (re-run)" end
end
-- BENCH_MERGE=FILE: rows of an earlier results file that this run did not produce are carried over
-- (marked carried_from), e.g. the scale rows of a BENCH_SCALE=1 run into a later default run.
if os.getenv("BENCH_MERGE") then
  local old = readf(os.getenv("BENCH_MERGE"))
  local prev = old and cjson.decode(old)
  if prev then
    local have = {}
    for _, r in ipairs(results.rows) do have[r.id] = true end
    for _, r in ipairs(prev.rows or {}) do
      if not have[r.id] then
        r.carried_from = r.carried_from or prev.started
        results.rows[#results.rows + 1] = r
      end
    end
    for _, k in ipairs { "kep4471", "lab_init_phase_medians" } do results[k] = results[k] or prev[k] end
  end
end
results.finished = os.date("!%Y-%m-%dT%H:%M:%SZ")
results.load_end = loadavg()

---------------------------------------------------------------------------------------------------
-- Targets (issue 11), reported, not asserted.
local targets = {}
local function target(name, ok, detail) targets[#targets + 1] = { target = name, met = ok, detail = detail } end
do
  local worst, wid
  for _, r in ipairs(results.rows) do
    if r.generates_keys and not r.rsa_generator and r.ratio and (not worst or r.ratio < worst) then worst, wid = r.ratio, r.id end
  end
  if worst then target("moonadm >= 2x faster on every key-generating phase", worst >= 2, ("lowest ratio %.2f (%s)"):format(worst, wid)) end
  local sworst, sid
  for _, r in ipairs(results.rows) do
    if r.group == "startup" and r.ratio and (not sworst or r.ratio < sworst) then sworst, sid = r.ratio, r.id end
  end
  if sworst then target(">= 10x faster start-up", sworst >= 10, ("lowest ratio %.2f (%s)"):format(sworst, sid)) end
  local floor
  for _, r in ipairs(results.rows) do if r.id == "spawn-floor" then floor = r.moonadm.median end end
  if floor then
    for _, r in ipairs(results.rows) do
      local m, k = r.moonadm and r.moonadm.median, r.kubeadm and r.kubeadm.median
      if r.group == "startup" and m and k and m > floor then
        r.ratio_above_floor = r4((k - floor) / (m - floor))
        results.notes[#results.notes + 1] = ("%s: above the spawn floor (%.1f ms) moonadm %.1f ms, kubeadm %.1f ms: %.1fx"):format(
          r.title, floor * 1000, (m - floor) * 1000, (k - floor) * 1000, r.ratio_above_floor)
      end
    end
  end
  -- the verdict on the raw median; beside it the time above the harness's own `lab exec` (lab.lua)
  local function engine_detail(r)
    local d = ("median %.0f ms"):format(r.moonadm.median * 1000)
    if r.exec_floor then
      d = d .. ("; %.0f ms above the lab exec floor of %.0f ms"):format((r.moonadm.median - r.exec_floor) * 1000, r.exec_floor * 1000)
    end
    return d
  end
  for _, r in ipairs(results.rows) do
    if r.id == "peak-rss" and r.ratio then target("<= 1/10 of kubeadm's peak memory", r.ratio >= 10, ("kubeadm/moonadm %.2f"):format(r.ratio)) end
    if r.id == "init-engine-overhead" and r.moonadm.median then
      target("engine time of a one-node init < 500 ms", r.moonadm.median < 0.5, engine_detail(r))
    end
    if r.id == "reset-last-cp" and r.moonadm.median then
      target("reset of the last control plane < 2 s", r.moonadm.median < 2, ("median %.2f s"):format(r.moonadm.median))
    end
    if r.id == "worker-join" and r.ratio then
      target("a worker join no slower than kubeadm's", r.ratio >= 1, ("kubeadm/moonadm %.2f"):format(r.ratio))
    end
    if r.id == "init-real-engine" and r.moonadm.median then
      target("real kubelet: engine time of a one-node init < 500 ms", r.moonadm.median < 0.5, engine_detail(r))
    end
    if r.id == "reset-real-last-cp" and r.moonadm.median then
      target("real kubelet: reset of the last control plane < 2 s", r.moonadm.median < 2, ("median %.2f s"):format(r.moonadm.median))
    end
    if r.id == "worker-join-real" and r.ratio then
      target("real kubelet: a worker join no slower than kubeadm's", r.ratio >= 1, ("kubeadm/moonadm %.2f"):format(r.ratio))
    end
  end
  -- moonadm / limit: a key-generating row against the engine's own generator on all cores
  local by = {}
  for _, r in ipairs(results.rows) do by[r.id] = r end
  for _, pair in ipairs { { "certs-all-rsa-2048", "limit-rsa-2048-11" }, { "certs-all-ecdsa-p256", "limit-ecdsa-p256-11" } } do
    local r, l = by[pair[1]], by[pair[2]]
    if r and l and r.moonadm.median and l.moonadm.median and l.moonadm.median > 0 then
      r.limit_ratio = r4(r.moonadm.median / l.moonadm.median)
      results.notes[#results.notes + 1] = ("%s: moonadm / limit (%s) = %.2f"):format(r.title, l.title, r.limit_ratio)
    end
  end
end
results.targets = targets

-- The table.
local function fmt(v, unit)
  if v == nil then return "-" end
  if unit == "s" then return v < 1 and ("%.0f ms"):format(v * 1000) or ("%.2f s"):format(v) end
  return ("%.2f %s"):format(v, unit)
end
local lines = {}
local function out(s) lines[#lines + 1] = s end
out(("moonadm %s vs kubeadm %s, %d cpus, load at start %s, at end %s (each row's own: load column)"):format(machine.commit, machine.kubeadm_version,
  machine.cpus, table.concat(results.load_start, " "), table.concat(results.load_end, " ")))
out(("%-48s %-30s %-30s %7s %15s %6s %3s"):format("row", "moonadm min/median/max", "kubeadm min/median/max", "ratio", "cpu m/k (ratio)", "load", "n"))
for _, r in ipairs(results.rows) do
  local function trio(t) return t and t.median and ("%s / %s / %s"):format(fmt(t.min, r.unit), fmt(t.median, r.unit), fmt(t.max, r.unit)) or "-" end
  local cpu = r.moonadm and r.moonadm.cpu_median and r.kubeadm.cpu_median and
    ("%.2f/%.2f (%s)"):format(r.moonadm.cpu_median, r.kubeadm.cpu_median, r.cpu_ratio and ("%.1f"):format(r.cpu_ratio) or "-") or "-"
  out(("%-48s %-30s %-30s %7s %15s %6s %3s"):format((r.title:sub(1, 46) .. (r.carried_from and " *" or "")), trio(r.moonadm), trio(r.kubeadm),
    r.ratio and ("%.2f"):format(r.ratio) or "-", cpu, r.load_start and ("%.1f"):format(r.load_start[1]) or "-",
    tostring(math.tointeger(r.moonadm and r.moonadm.n or 0) or "")))
end
out("* carried over from an earlier run (BENCH_MERGE), see carried_from in the JSON")
out("")
out("targets (reported, not asserted):")
for _, t in ipairs(targets) do out(("  [%s] %s: %s"):format(t.met and "met" or "NOT met", t.target, t.detail)) end
for _, s in ipairs(results.skipped) do out(("  skipped %s: %s"):format(s.item, s.why)) end
for _, n in ipairs(results.notes) do out("  note: " .. n) end
local table_text = table.concat(lines, "\n")
print(table_text)
results.table = table_text

os.execute("mkdir -p '" .. OUT .. "'")
local json = cjson.encode(results)
writef(OUT .. "/latest.json", json)
local dated = OUT .. "/" .. os.date("!%Y-%m-%dT%H%M%SZ") .. ".json"
writef(dated, json)
writef(OUT .. "/latest.txt", table_text .. "\n")
say("wrote %s/latest.json, %s, %s/latest.txt", OUT, dated, OUT)
os.execute("rm -rf " .. WORK .. " " .. SNAP)
