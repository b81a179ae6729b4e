-- Crash-anywhere convergence on the lab, shared by crash_spec.lua and kill_spec.lua (a sample chosen
-- from the commit, every `make test`), long_crash_spec.lua (every mutation point of every flow, in
-- parallel labs, make test-long) and long_kill_sweep_spec.lua (many kills at random moments).
--
-- Mutation points: the hooked build (bin/moonadm-hooks, make test-hooks) kills itself after the Nth
-- completed file write / mutating API call / etcd member change (MOONADM_CRASH_AFTER=kind:N); the
-- plain binary then re-runs with --resume (reset: runs again), and the node must converge.
-- Random kills: the plain binary SIGKILLed at a random wall-clock moment of its run, then --resume.
-- Converged means: every file under the node's trees complete, with its final mode, keys matching
-- their certificates and every certificate signed by its CA, no temp file left; every static Pod
-- running its current manifest; and the flow's own state (etcd members, none a learner, one
-- bootstrap-token Secret per token, the Node's role, the reconfigured apiserver, ...).
--
-- The node under test is always the lab's spare s1; the flows (M.FLOWS):
--   init        s1 as a one-node cluster of its own (init --upload-certs)
--   worker      s1 joins the lab's cluster as a worker
--   join        s1 joins the lab's HA cluster as a control plane (KEP-4471 new order, the default)
--   join_old    the same on a lab made with ControlPlaneKubeletLocalMode=false (the old order)
--   upgrade     upgrade apply on s1's one-node cluster, each point after a kubeadm-config edit
--               (apiserver event-ttl), so the apiserver is really reconfigured and restarted
--   reset       reset --force of s1 joined as a control plane (its etcd member leaves)
--
-- Run as a script, this file is one worker of the parallel sweep (long_crash_spec.lua):
--   moonadm lua tests/e2e/crash_common.lua worker JOBFILE
if arg and arg[0] and arg[0]:match("crash_common%.lua$") then
  local dir = arg[0]:match("^(.*)/[^/]*$") or "."
  package.path = dir .. "/?.lua;" .. dir .. "/../spec/?.lua;" .. package.path
end

local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local core = require "moonadm.core"
local proc = require "moonadm.proc"
local encoding = require "moonadm.encoding"

local M = { LAB = "dev14c" }
M.hooks = h.hooks
M.bin_dir = os.getenv("MOONADM_LAB_BIN") or (h.top .. "/.lab/bin")

-- The labs a flow runs on (lab up arguments); s1 is always the spare.
M.LAB_ARGS = {
  one = { "--control-planes", "1", "--spares", "1" },
  ha = { "--control-planes", "2", "--spares", "1" },
  old = { "--control-planes", "2", "--spares", "1", "--feature-gates", "ControlPlaneKubeletLocalMode=false" },
  -- the real kubelet and containerd on every node (the crash sample of real_kubelet_crash_spec.lua)
  real = { "--kubelet", "real", "--control-planes", "2", "--spares", "1" },
}

-- A lab of real kubelets: s1's pods are containers its containerd runs, its kubelet a service.
local function real(st) return st.kubelet == "real" end

local CRICTL = { "crictl", "--config", "/dev/null", "--runtime-endpoint", "unix:///run/containerd/containerd.sock" }

local function q(argv)
  local p = {}
  for _, a in ipairs(argv) do p[#p + 1] = h.q(a) end
  return table.concat(p, " ")
end

local function append(list, more)
  local out = {}
  for _, x in ipairs(list) do out[#out + 1] = x end
  for _, x in ipairs(more or {}) do out[#out + 1] = x end
  return out
end

function M.have_hooks()
  local f = io.open(M.hooks, "r")
  if f then f:close() return true end
  return false
end

-- ---- the seed rule -----------------------------------------------------------------------------
-- The sample of crash points and kill moments `make test` and CI try: seeded by the commit (the
-- first 8 hex digits of `git rev-parse HEAD`), so it is the same for a commit on every machine and
-- differs across commits; MOONADM_CRASH_SEED=N overrides it. Returns seed, where it came from.
function M.seed()
  local env = tonumber(os.getenv("MOONADM_CRASH_SEED") or "")
  if env then return math.tointeger(env) or env, "MOONADM_CRASH_SEED" end
  local p = io.popen("git -C " .. h.q(h.top) .. " rev-parse HEAD 2>/dev/null")
  local head = p and p:read("l")
  if p then p:close() end
  if head and head:match("^%x+$") then return tonumber(head:sub(1, 8), 16), "commit " .. head:sub(1, 12) end
  return 0, "no git checkout: seed 0"
end

-- ---- the lab ------------------------------------------------------------------------------------
-- Brings a lab up (or reuses it when this test run already did); lab up picks a free subnet unless
-- `subnet` is given.
function M.up(name, subnet, args)
  name = name or M.LAB
  args = args or M.LAB_ARGS.ha
  local dir = h.top .. "/.lab/" .. name
  local f = io.open(dir .. "/lab.json", "r")
  if f then
    local ok, st = pcall(cjson.decode, f:read("a"))
    f:close()
    if ok and st.ready and os.getenv("MOONADM_E2E_RUN") and st.crash_run == os.getenv("MOONADM_E2E_RUN") then return st end
  end
  local up = { "lab", "up", "--name", name }
  if subnet then up[#up + 1] = "--subnet"; up[#up + 1] = subnet end
  for _, a in ipairs(args) do up[#up + 1] = a end
  local code, out, err
  for _ = 1, 2 do -- once more after a failed start (another lab's start-up on 2 cores can be slow)
    code, out, err = h.moonadm(up)
    if code == 0 then break end
  end
  assert(code == 0, ("lab %s did not come up (exit %d):\n%s\n%s"):format(name, code, out, err))
  f = assert(io.open(dir .. "/lab.json", "r"))
  local st = cjson.decode(f:read("a"))
  f:close()
  st.crash_run = os.getenv("MOONADM_E2E_RUN")
  f = assert(io.open(dir .. "/lab.json", "w"))
  f:write(cjson.encode(st))
  f:close()
  return st
end

function M.down(name) h.moonadm { "lab", "down", "--name", name or M.LAB } end

M.node = fixture.node

local function control_planes(st)
  local n = 0
  for _, x in ipairs(st.nodes) do if x.role == "control-plane" then n = n + 1 end end
  return n
end

-- Runs argv on a node (optionally under env VAR=...); returns code, stdout+stderr.
function M.exec(st, node, argv, env, log)
  local a = { h.bin, "lab", "exec", node, "--name", st.name, "--", "env" }
  for _, e in ipairs(env or {}) do a[#a + 1] = e end
  for _, x in ipairs(argv) do a[#a + 1] = x end
  local out = log or os.tmpname()
  local _, _, code = os.execute(q(a) .. " >" .. h.q(out) .. " 2>&1")
  local text = h.read(out) or ""
  if not log then os.remove(out) end
  return code, text
end

function M.kubectl(st, kubeconfig, args)
  local a = { M.bin_dir .. "/kubectl", "--kubeconfig", kubeconfig, "--request-timeout", "10s" }
  for _, x in ipairs(args) do a[#a + 1] = x end
  return h.sh(q(a))
end

-- s1's own one-node cluster: the lab's init config with s1's name and address, a fixed token.
function M.init_config(st)
  local s1 = M.node(st, "s1")
  local docs = assert(yaml.decode(assert(h.read(st.dir .. "/cp1-init.yaml"))))
  for _, d in ipairs(docs) do
    if d.kind == "InitConfiguration" then
      d.localAPIEndpoint.advertiseAddress = s1.ip
      d.nodeRegistration.name = "s1"
      for _, a in ipairs(d.nodeRegistration.kubeletExtraArgs or {}) do
        if a.name == "node-ip" then a.value = s1.ip end
      end
      d.bootstrapTokens = { { token = "crash1.0123456789crash1" } }
    elseif d.kind == "ClusterConfiguration" then
      d.controlPlaneEndpoint = nil
    end
  end
  local path = st.dir .. "/s1-crash-init.yaml"
  h.write(path, yaml.encode_all(docs))
  return path
end

-- s1's join into the lab's cluster: as a control plane, or (worker = true) as a worker.
function M.join_config(st, worker)
  local s1 = M.node(st, "s1")
  local pin = pki.read_cert(h.read(st.nodes[1].root .. "/etc/kubernetes/pki/ca.crt")):pin()
  local path = st.dir .. (worker and "/s1-crash-worker-join.yaml" or "/s1-crash-join.yaml")
  local doc = {
    apiVersion = "kubeadm.k8s.io/v1beta4", kind = "JoinConfiguration",
    discovery = { bootstrapToken = { token = st.token, apiServerEndpoint = st.endpoint or (st.nodes[1].ip .. ":6443"),
      caCertHashes = { pin } } },
    nodeRegistration = { name = "s1" },
  }
  -- a real node's registration as the lab made it (its CRI socket, node-ip, the checks this host
  -- cannot pass, the kubelet patches)
  local lab_join = real(st) and h.read(st.dir .. "/s1-join.yaml")
  if lab_join then
    local d = assert(yaml.decode(lab_join))[1]
    doc.nodeRegistration, doc.patches = d.nodeRegistration, d.patches
  end
  if not worker then
    doc.controlPlane = { localAPIEndpoint = { advertiseAddress = s1.ip, bindPort = 6443 }, certificateKey = st.certificate_key }
  end
  h.write(path, yaml.encode(doc))
  return path
end

local ETCDCTL = { "etcdctl", "--endpoints", "https://127.0.0.1:2379",
  "--cacert", "/etc/kubernetes/pki/etcd/ca.crt", "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt",
  "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key", "--command-timeout", "5s" }

function M.etcd_members(st, node)
  local code, out = M.exec(st, node, append(ETCDCTL, { "member", "list", "-w", "json" }))
  if code ~= 0 then return nil, out end
  local ok, j = pcall(cjson.decode, out)
  return ok and j.members or nil, out
end

-- Children of a process (the kubelet stand-in's static pod processes).
local function children(pid)
  local out = {}
  local p = io.popen("ps -o pid= --ppid " .. math.tointeger(pid) .. " 2>/dev/null")
  for l in p:lines() do
    local c = tonumber(l:match("%d+"))
    if c then out[#out + 1] = c end
  end
  p:close()
  return out
end

local function ports_free(st)
  return M.exec(st, "s1", { "bash", "-c", "for p in 6443 2379 2380 10257 10259; do " ..
    "(exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && exit 1; done; exit 0" }) == 0
end

-- Back to a node with nothing of init or join, fast (a fixture, not the reset under test: reset
-- has its own sweep): the manifests removed and the stand-in's pod processes killed at once (the
-- stand-in gives each 10 s), s1's etcd member (voting or learner) removed from the lab's cluster
-- and its Node deleted (as after kubeadm reset), every tree init and join write emptied.
function M.clean(st, own)
  local s1 = M.node(st, "s1")
  local root = s1.root
  os.execute("rm -f " .. h.q(root) .. "/etc/kubernetes/manifests/* 2>/dev/null")
  if real(st) then
    -- the kubelet service stopped, then every pod the CRI runs removed (what reset does, forced)
    M.exec(st, "s1", { "systemctl", "stop", "kubelet" })
    for _ = 1, 100 do
      M.exec(st, "s1", append(CRICTL, { "rmp", "-af" }))
      if ports_free(st) then break end
      core.sleep(0.2)
    end
  end
  for _ = 1, real(st) and 0 or 200 do
    local kids = s1.kubelet_pid and children(s1.kubelet_pid) or {}
    for _, pid in ipairs(kids) do os.execute("kill -KILL " .. pid .. " 2>/dev/null") end
    if #kids == 0 and ports_free(st) then break end
    core.sleep(0.1)
  end
  -- the lab's cluster side of a join (nothing when s1 ran a cluster of its own: `own`)
  local cp1 = st.nodes[1]
  local code, out = 1, ""
  if not own then code, out = M.exec(st, cp1.name, append(ETCDCTL, { "member", "list", "-w", "simple" })) end
  if code == 0 then
    for line in out:gmatch("[^\n]+") do
      local id, rest = line:match("^(%x+), (.*)$")
      if id and (rest:find(", s1,", 1, true) or rest:find("https://" .. s1.ip .. ":2380", 1, true)) then
        M.exec(st, cp1.name, append(ETCDCTL, { "member", "remove", id }))
      end
    end
  end
  if not own then M.kubectl(st, st.dir .. "/super-admin.conf", { "delete", "node", "s1", "--ignore-not-found", "--wait=false" }) end
  for _, d in ipairs { "/etc/kubernetes", "/var/lib/etcd", "/var/lib/moonadm", "/var/lib/kubelet/pki" } do
    os.execute("rm -rf " .. h.q(root .. d) .. "/* " .. h.q(root .. d) .. "/.[!.]* 2>/dev/null")
  end
  for _, f in ipairs { "/var/lib/kubelet/config.yaml", "/var/lib/kubelet/kubeadm-flags.env", "/var/lib/kubelet/instance-config.yaml" } do
    os.remove(root .. f)
  end
end

local function mode_of(path)
  local p = io.popen("stat -c %a " .. h.q(path))
  local m = p:read("l")
  p:close()
  return m
end

-- The final mode of each file moonadm (or the kubelet stand-in) writes, as kubeadm leaves it.
local MODES = {
  { "%.key$", "600" }, { "%.crt$", "644" }, { "/pki/sa%.pub$", "600|644" }, { "/etc/kubernetes/[^/]+%.conf$", "600" },
  { "/etc/kubernetes/manifests/[^/]+$", "600" }, { "/etc/kubernetes/tmp/.+%.yaml$", "600" },
  { "/var/lib/kubelet/[^/]+%.yaml$", "644" }, { "/var/lib/kubelet/kubeadm%-flags%.env$", "644" },
  { "/var/lib/kubelet/pki/[^/]+%.pem$", "600" }, { "/var/lib/moonadm/journal/[^/]+$", "600" },
}

local function read_kubeconfig(text)
  local d = yaml.decode(text)
  local kc = d and d[1]
  if type(kc) ~= "table" or type(kc.clusters) ~= "table" or not kc.clusters[1] or type(kc.users) ~= "table" then return nil end
  return kc
end

-- Every file under the node's etc/kubernetes, var/lib/kubelet and var/lib/moonadm: complete (it
-- parses as what it is), with its final mode, no temp file; each key matches its certificate, each
-- certificate is signed by its CA, each kubeconfig's client certificate by the cluster CA and
-- matching its key. Returns a list of problems and the number of files looked at.
function M.check_files(root)
  local api = require "moonadm.api"
  local problems, n = {}, 0
  local certs, keys = {}, {}
  local p = io.popen("find " .. h.q(root .. "/etc/kubernetes") .. " " .. h.q(root .. "/var/lib/kubelet") .. " " ..
    h.q(root .. "/var/lib/moonadm") .. " -type f 2>/dev/null")
  local ca_pem = h.read(root .. "/etc/kubernetes/pki/ca.crt")
  local ca = ca_pem and pki.read_cert(ca_pem)
  for path in p:lines() do
    n = n + 1
    local rel = path:sub(#root + 1)
    local text = h.read(path) or ""
    local mode = mode_of(path)
    local function bad(why) problems[#problems + 1] = rel .. ": " .. why end
    if rel:match("/%.[^/]*%.tmp%-") or rel:match("%.tmp%-%w+$") then bad("temp file left behind")
    else
      for _, m in ipairs(MODES) do
        if rel:match(m[1]) then
          if not ("|" .. m[2] .. "|"):find("|" .. tostring(mode) .. "|", 1, true) then bad(("mode %s, want %s"):format(mode, m[2])) end
          break
        end
      end
      if rel:match("%.key$") then
        local k = pki.read_key(text)
        if not k then bad("not a complete private key") else keys[rel] = k end
      elseif rel:match("%.crt$") then
        local c = pki.read_cert(text)
        if not c then bad("not a complete certificate") else certs[rel] = c end
      elseif rel:match("%.pub$") then
        if not pki.read_public_key(text) then bad("not a complete public key") end
      elseif rel:match("%.pem$") then
        if not (text:match("%-%-%-%-%-END CERTIFICATE%-%-%-%-%-") and text:match("%-%-%-%-%-END [%u ]*PRIVATE KEY%-%-%-%-%-")) then
          bad("not a complete certificate and key")
        end
      elseif rel:match("^/etc/kubernetes/[^/]+%.conf$") then
        local kc = read_kubeconfig(text)
        if not kc then bad("not a complete kubeconfig")
        else
          local u = kc.users[1] and kc.users[1].user or {}
          if u["client-certificate-data"] and u["client-key-data"] then
            local c = pki.read_cert(encoding.base64_decode(u["client-certificate-data"]) or "")
            local k = pki.read_key(encoding.base64_decode(u["client-key-data"]) or "")
            if not (c and k) then bad("client certificate or key incomplete")
            else
              if not k:matches(c) then bad("client key does not match its certificate") end
              if ca and not c:verify(ca) then bad("client certificate not signed by pki/ca.crt") end
            end
          end
        end
      elseif rel:match("/manifests/[^/]+%.yaml$") or rel:match("/tmp/kubeadm%-backup%-[^/]+/[^/]+%.yaml$") then
        local d = yaml.decode(text)
        if not (d and d[1] and d[1].kind == "Pod") then bad("not a complete static Pod") end
      elseif rel:match("%.yaml$") then
        if not yaml.decode(text) then bad("not complete YAML") end
      elseif rel:match("%.json$") then
        if not pcall(cjson.decode, text) then bad("not complete JSON") end
      elseif rel:match("kubeadm%-flags%.env$") then
        if not text:match('^KUBELET_KUBEADM_ARGS=".*"\n$') then bad("not a complete kubeadm-flags.env") end
      end
    end
  end
  p:close()
  -- pairs and issuers
  local issuer = { ["/etc/kubernetes/pki/etcd/"] = "/etc/kubernetes/pki/etcd/ca.crt",
    ["/etc/kubernetes/pki/apiserver-etcd-client"] = "/etc/kubernetes/pki/etcd/ca.crt",
    ["/etc/kubernetes/pki/front-proxy-client"] = "/etc/kubernetes/pki/front-proxy-ca.crt" }
  for rel, c in pairs(certs) do
    local base = rel:gsub("%.crt$", "")
    if keys[base .. ".key"] and not keys[base .. ".key"]:matches(c) then
      problems[#problems + 1] = base .. ".key does not match " .. rel
    end
    if not rel:match("/ca%.crt$") and not rel:match("%-ca%.crt$") and rel:match("^/etc/kubernetes/pki/") then
      local ca_rel = "/etc/kubernetes/pki/ca.crt"
      for prefix, x in pairs(issuer) do if rel:sub(1, #prefix) == prefix then ca_rel = x end end
      local cac = certs[ca_rel]
      if cac and not c:verify(cac) then problems[#problems + 1] = rel .. " is not signed by " .. ca_rel end
    end
  end
  local sak, sap = keys["/etc/kubernetes/pki/sa.key"], h.read(root .. "/etc/kubernetes/pki/sa.pub")
  if sak and sap then
    local pub = pki.read_public_key(sap)
    if pub and not sak:equals(pub) then problems[#problems + 1] = "/etc/kubernetes/pki/sa.pub does not match sa.key" end
  end
  return problems, n
end

-- Every manifest under the node's manifests dir runs as its current content (the stand-in's status:
-- the manifest's hash, a pid), within `secs`. Returns a list of problems.
function M.check_pods(node, secs, st)
  if st and real(st) then return M.check_containers(st, node, secs) end
  local want = {}
  local p = io.popen("ls " .. h.q(node.root .. "/etc/kubernetes/manifests") .. " 2>/dev/null")
  for f in p:lines() do
    if f:match("%.yaml$") then want[f] = encoding.sha256_hex(h.read(node.root .. "/etc/kubernetes/manifests/" .. f) or ""):sub(1, 32) end
  end
  p:close()
  local missing
  local deadline = core.monotonic() + (secs or 60)
  repeat
    missing = {}
    local ok, st = pcall(cjson.decode, h.read(node.root .. "/var/lib/moonadm-lab/kubelet-status.json") or "")
    local running = {}
    for _, x in ipairs(ok and st.pods or {}) do
      if type(x.pid) == "number" then running[x.hash] = true end
    end
    for f, hash in pairs(want) do
      if not running[hash] then missing[#missing + 1] = f end
    end
    if #missing == 0 then return {} end
    core.sleep(0.5)
  until core.monotonic() > deadline
  table.sort(missing)
  return { "static Pods not running their current manifest: " .. table.concat(missing, ", ") }
end

-- On a real-kubelet node: a container of each static Pod's component running (the CRI's view), within `secs`.
function M.check_containers(st, node, secs)
  local want = {}
  local p = io.popen("ls " .. h.q(node.root .. "/etc/kubernetes/manifests") .. " 2>/dev/null")
  for f in p:lines() do if f:match("%.yaml$") then want[#want + 1] = f:gsub("%.yaml$", "") end end
  p:close()
  local missing
  local deadline = core.monotonic() + (secs or 90)
  repeat
    missing = {}
    for _, name in ipairs(want) do
      local code, out = M.exec(st, node.name, append(CRICTL, { "ps", "--state", "Running", "--name", "^" .. name .. "$", "-q" }))
      if code ~= 0 or not out:match("%x") then missing[#missing + 1] = name end
    end
    if #missing == 0 then return {} end
    core.sleep(1)
  until core.monotonic() > deadline
  return { "static Pods without a running container: " .. table.concat(missing, ", ") }
end

-- The number of bootstrap-token Secrets (init makes the configured token and, with
-- --upload-certs, the kubeadm-certs owner token: a crash must not add another).
function M.tokens(st, kubeconfig)
  local c, out = M.kubectl(st, kubeconfig, { "get", "secrets", "-n", "kube-system", "--field-selector",
    "type=bootstrap.kubernetes.io/token", "-o", "name" })
  local n = 0
  for _ in out:gmatch("secret/") do n = n + 1 end
  return n, c, out
end

local function readyz(st, kubeconfig, problems)
  for _ = 1, 60 do
    local c, out = M.kubectl(st, kubeconfig, { "get", "--raw", "/readyz" })
    if c == 0 and out:match("^ok") then return true end
    core.sleep(1)
  end
  problems[#problems + 1] = "/readyz never ok"
end

local function check_members(st, node, want, problems, absent)
  local m, raw
  for _ = 1, 20 do
    m, raw = M.etcd_members(st, node)
    if m then break end
    core.sleep(1)
  end
  if not m then problems[#problems + 1] = "etcd member list on " .. node .. " failed: " .. tostring(raw) return end
  if #m ~= want then problems[#problems + 1] = ("%d etcd members, want %d"):format(#m, want) end
  for _, x in ipairs(m) do
    if x.isLearner then problems[#problems + 1] = "a learner is left: " .. tostring(x.name) end
    if absent and x.name == absent then problems[#problems + 1] = "etcd member " .. absent .. " is still there" end
  end
end

-- The converged state of a control plane (init or join): files, pods, /readyz ok, exactly
-- `want_members` voting members, one Secret per token, the Node a control plane. nil or problems.
function M.check(st, node_root, kubeconfig, want_members, want_tokens)
  local problems = M.check_files(node_root)
  for _, x in ipairs(M.check_pods(M.node(st, "s1"), nil, st)) do problems[#problems + 1] = x end
  readyz(st, kubeconfig, problems)
  check_members(st, "s1", want_members, problems)
  local tokens, c, out = M.tokens(st, kubeconfig)
  if c ~= 0 or (want_tokens and tokens ~= want_tokens) then
    problems[#problems + 1] = ("%d bootstrap-token Secrets, want %s: %s"):format(tokens, tostring(want_tokens), out)
  end
  c, out = M.kubectl(st, kubeconfig, { "get", "node", "s1", "-o", "jsonpath={.spec.taints[*].key}" })
  if c ~= 0 or not out:match("node%-role.kubernetes.io/control%-plane") then
    problems[#problems + 1] = "Node s1 is not a tainted control plane: " .. out
  end
  return #problems > 0 and problems or nil
end

-- A converged worker: files, no static Pod, the Node registered and Ready without the control-plane
-- role, the lab's etcd members unchanged.
function M.check_worker(st)
  local s1 = M.node(st, "s1")
  local problems = M.check_files(s1.root)
  local kubeconfig = st.dir .. "/super-admin.conf"
  local p = io.popen("ls " .. h.q(s1.root .. "/etc/kubernetes/manifests") .. " 2>/dev/null")
  local m = p:read("a")
  p:close()
  if m:match("%S") then problems[#problems + 1] = "a worker with static Pod manifests: " .. m end
  if not h.read(s1.root .. "/etc/kubernetes/kubelet.conf") then problems[#problems + 1] = "no kubelet.conf" end
  local ready, out
  for _ = 1, 60 do
    local c
    c, out = M.kubectl(st, kubeconfig, { "get", "node", "s1", "-o",
      "jsonpath={.status.conditions[?(@.type==\"Ready\")].status} {.metadata.labels}" })
    if c == 0 and out:match("^True") then ready = true break end
    core.sleep(1)
  end
  if not ready then problems[#problems + 1] = "Node s1 never Ready: " .. tostring(out)
  elseif out:match("node%-role.kubernetes.io/control%-plane") then problems[#problems + 1] = "worker s1 has the control-plane role" end
  check_members(st, st.nodes[1].name, control_planes(st), problems, "s1")
  return #problems > 0 and problems or nil
end

-- After reset: nothing of the node's files left, its ports free, its etcd member gone from the lab's
-- cluster (no learner left), the cluster ready.
function M.check_reset(st)
  local s1 = M.node(st, "s1")
  local problems = {}
  local p = io.popen("find " .. h.q(s1.root .. "/etc/kubernetes") .. " " .. h.q(s1.root .. "/var/lib/etcd") .. " " ..
    h.q(s1.root .. "/var/lib/kubelet") .. " -type f 2>/dev/null")
  local left = {}
  for f in p:lines() do left[#left + 1] = f:sub(#s1.root + 1) end
  p:close()
  if #left > 0 then problems[#problems + 1] = "files left after reset: " .. table.concat(left, " ", 1, math.min(#left, 8)) end
  local free = false
  for _ = 1, 60 do
    local idle
    if real(st) then
      local code, out = M.exec(st, "s1", append(CRICTL, { "ps", "-q" }))
      idle = code == 0 and not out:match("%x")
    else
      idle = #children(s1.kubelet_pid) == 0
    end
    if idle and ports_free(st) then free = true break end
    core.sleep(0.5)
  end
  if not free then problems[#problems + 1] = "s1's control-plane processes or ports are still there" end
  check_members(st, st.nodes[1].name, control_planes(st), problems, "s1")
  readyz(st, st.dir .. "/super-admin.conf", problems)
  return #problems > 0 and problems or nil
end

-- kubeadm-config's ClusterConfiguration with apiServer.extraArgs event-ttl=`ttl` (an edit that
-- makes upgrade apply rewrite and restart the apiserver, as kubeadm's documented reconfiguration).
function M.set_event_ttl(st, kubeconfig, ttl)
  local c, out = M.kubectl(st, kubeconfig, { "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "json" })
  assert(c == 0, out)
  local cm = cjson.decode(out)
  local lines, skip = {}, false
  for line in (cm.data.ClusterConfiguration .. (cm.data.ClusterConfiguration:match("\n$") and "" or "\n")):gmatch("([^\n]*)\n") do
    if line:match("^apiServer:") then
      skip = true
      lines[#lines + 1] = "apiServer:\n  extraArgs:\n  - name: event-ttl\n    value: " .. ttl
    elseif skip and line:match("^%s") then -- the old apiServer block
    else
      skip = false
      lines[#lines + 1] = line
    end
  end
  cm.data.ClusterConfiguration = table.concat(lines, "\n") .. "\n"
  cm.metadata.resourceVersion = nil
  local tmp = os.tmpname()
  h.write(tmp, cjson.encode(cm))
  c, out = M.kubectl(st, kubeconfig, { "replace", "-f", tmp })
  os.remove(tmp)
  assert(c == 0, out)
end

local function ttl_of(i) return ("%dh0m0s"):format(2 + i % 3) end -- consecutive points always differ

-- ---- the flows ----------------------------------------------------------------------------------
-- Each: the lab it needs; setup(st) → ctx {argv, resume (argv of the run after the kill),
-- prepare(i) (before point i; 0 is the counting run), check(i) → nil or problems}.
M.FLOWS = {}

M.FLOWS.init = { lab = "one", setup = function(st)
  local s1 = M.node(st, "s1")
  local ctx = { argv = { "init", "--config", M.init_config(st), "--upload-certs" } }
  ctx.kubeconfig = s1.root .. "/etc/kubernetes/admin.conf"
  ctx.prepare = function() M.clean(st, true) end
  ctx.check = function()
    local problems = M.check(st, s1.root, ctx.kubeconfig, 1, ctx.want_tokens) or {}
    -- init's last phases ran (upload-config, addons): a resume that stopped at preflight leaves none
    local c, out = M.kubectl(st, ctx.kubeconfig, { "-n", "kube-system", "get", "configmap/kubeadm-config",
      "configmap/kubelet-config", "deployment/coredns", "daemonset/kube-proxy", "-o", "name" })
    if c ~= 0 then problems[#problems + 1] = "init's upload-config or addon phase did not run: " .. out end
    return #problems > 0 and problems or nil
  end
  ctx.after_count = function() ctx.want_tokens = M.tokens(st, ctx.kubeconfig) end
  return ctx
end }

local function cp_join(st)
  local cp1 = st.nodes[1]
  local ctx = { argv = { "join", "--config", M.join_config(st) } }
  ctx.kubeconfig = cp1.root .. "/etc/kubernetes/admin.conf"
  ctx.prepare = function() M.clean(st) end
  ctx.check = function()
    local problems = M.check(st, M.node(st, "s1").root, ctx.kubeconfig, control_planes(st) + 1, nil)
    if st.old_order then
      local kc = read_kubeconfig(h.read(M.node(st, "s1").root .. "/etc/kubernetes/kubelet.conf") or "")
      local server = kc and kc.clusters[1].cluster.server
      if server ~= "https://" .. st.endpoint then
        problems = problems or {}
        problems[#problems + 1] = "old order: kubelet.conf's server is " .. tostring(server) .. ", want the endpoint"
      end
    end
    return problems
  end
  return ctx
end
M.FLOWS.join = { lab = "ha", setup = cp_join }
M.FLOWS.join_old = { lab = "old", setup = function(st) st.old_order = true return cp_join(st) end }

M.FLOWS.worker = { lab = "ha", setup = function(st)
  local ctx = { argv = { "join", "--config", M.join_config(st, true) } }
  ctx.prepare = function() M.clean(st) end
  ctx.check = function() return M.check_worker(st) end
  return ctx
end }

M.FLOWS.upgrade = { lab = "one", setup = function(st)
  local s1 = M.node(st, "s1")
  local init = M.FLOWS.init.setup(st)
  M.clean(st) -- s1 may have been joined to the lab's cluster by an earlier flow of this worker
  local code, out = M.exec(st, "s1", append({ h.bin }, init.argv))
  assert(code == 0, "upgrade: the init it starts from failed:\n" .. out)
  local ctx = { argv = { "upgrade", "apply", "v1.35.4", "--yes" }, kubeconfig = init.kubeconfig }
  ctx.prepare = function(i)
    -- a converged upgrade is the next point's start; after a failed one, start from a fresh init
    if ctx.broken then
      M.clean(st, true)
      M.exec(st, "s1", append({ h.bin }, init.argv))
      ctx.broken = false
    end
    -- a ttl other than the running one (points of one worker are not consecutive with claims)
    local m = h.read(s1.root .. "/etc/kubernetes/manifests/kube-apiserver.yaml") or ""
    ctx.ttl = ttl_of(i)
    if m:find("--event-ttl=" .. ctx.ttl, 1, true) then ctx.ttl = ttl_of(i + 1) end
    M.set_event_ttl(st, ctx.kubeconfig, ctx.ttl)
  end
  ctx.check = function(i)
    local problems = M.check_files(s1.root)
    local m = h.read(s1.root .. "/etc/kubernetes/manifests/kube-apiserver.yaml") or ""
    if not m:find("--event-ttl=" .. ctx.ttl, 1, true) then
      problems[#problems + 1] = "the apiserver manifest lacks --event-ttl=" .. ctx.ttl
    end
    for _, x in ipairs(M.check_pods(s1)) do problems[#problems + 1] = x end
    readyz(st, ctx.kubeconfig, problems)
    check_members(st, "s1", 1, problems)
    if #problems > 0 then ctx.broken = true return problems end
  end
  return ctx
end }

M.FLOWS.reset = { lab = "ha", setup = function(st)
  local join = cp_join(st)
  local ctx = { argv = { "reset", "--force" }, resume = { "reset", "--force" } }
  ctx.prepare = function()
    M.clean(st)
    local code, out = M.exec(st, "s1", append({ h.bin }, join.argv))
    assert(code == 0, "reset: the control-plane join it starts from failed:\n" .. out:sub(-2000))
  end
  ctx.check = function() return M.check_reset(st) end
  return ctx
end }

-- The mutations of one clean run of ctx.argv on s1, from the hook log: {write=, api=, etcd=}.
function M.count(st, argv, extra)
  local logf = os.tmpname()
  os.remove(logf)
  local a = append(append({ M.hooks }, argv), extra)
  local t0 = core.monotonic()
  local code, out = M.exec(st, "s1", a, { "MOONADM_HOOK_LOG=" .. logf })
  local secs = core.monotonic() - t0
  local counts, lines = { write = 0, api = 0, etcd = 0 }, {}
  local fh = io.open(logf, "r") -- absent when the run failed before its first mutation
  for line in fh and fh:lines() or function() end do
    local kind = line:match("^(%a+) %d+ ")
    if counts[kind] then counts[kind] = counts[kind] + 1; lines[#lines + 1] = line end
  end
  if fh then fh:close() end
  os.remove(logf)
  return code, counts, out, lines, secs
end

-- The first mutation whose hook-log line matches `pattern` ("api 9 POST /api/v1/... 201"), as a
-- crash point {kind, n}: regression points named by what they do, not by a number that moves.
function M.point_of(lines, pattern, nth)
  local seen = 0
  for _, l in ipairs(lines) do
    if l:match(pattern) then
      seen = seen + 1
      if seen == (nth or 1) then
        local kind, n = l:match("^(%a+) (%d+) ")
        return { tonumber(n) and kind, tonumber(n), what = l }
      end
    end
  end
end

-- Regression points, replayed by every `make test` and CI: each once found a resume that did not
-- converge (or guards a step that did once). {pattern, nth} of the flow's hook log.
M.REGRESSIONS = {
  init = {
    { "^write %d+ /etc/kubernetes/manifests/kube%-apiserver%.yaml" },     -- was init write:76
    { "^api %d+ POST /api/v1/namespaces/kube%-system/configmaps " },      -- kubeadm-config upload (api:2)
    { "^api %d+ POST /api/v1/namespaces/kube%-system/secrets " },         -- upload-certs owner token (api:8): a second token was left
  },
  join = {
    { "^etcd %d+ ", 2 },                                                  -- the learner's promotion (etcd:2)
    -- kubelet-start killed after bootstrap-kubelet.conf (join_old write:64, 67, 69 in the first whole
    -- sweep): the kubelet bootstrapped and registered a Ready Node before --resume, which refused it
    { "^write %d+ /etc/kubernetes/bootstrap%-kubelet%.conf" },
    { "^write %d+ /var/lib/kubelet/config%.yaml" },
  },
}
M.REGRESSIONS.join_old = M.REGRESSIONS.join
M.REGRESSIONS.worker = { M.REGRESSIONS.join[2], M.REGRESSIONS.join[3] }

function M.regression_points(flow, lines)
  local out = {}
  for _, r in ipairs(M.REGRESSIONS[flow] or {}) do
    local p = M.point_of(lines, r[1], r[2])
    if p then p.regression = true; out[#out + 1] = p end
  end
  return out
end

-- One crash point: the hooked run killed at kind:n, then ctx.resume (default: argv --resume).
-- Returns true, or false and what went wrong.
function M.crash_point(st, argv, kind, n, check, resume)
  local code, out = M.exec(st, "s1", append({ M.hooks }, argv), { "MOONADM_CRASH_AFTER=" .. kind .. ":" .. n })
  if code == 0 then return false, ("%s:%d: the hooked run was not killed (ran to the end):\n%s"):format(kind, n, out:sub(-1500)) end
  local rcode, rout = M.exec(st, "s1", append({ h.bin }, resume or append(argv, { "--resume" })))
  if rcode ~= 0 then
    return false, ("%s:%d: the run after the kill failed (exit %d); killed run:\n%s\n--- after the kill:\n%s"):format(kind, n, rcode,
      out:sub(-1500), rout:sub(-3000))
  end
  local problems = check()
  if problems then return false, ("%s:%d: %s"):format(kind, n, table.concat(problems, "; ")) end
  return true
end

-- Secrets in a run's output and the lab's logs: no private key of `root` (PEM, base64 of the PEM, a
-- base64 body line), no certificate key and no token secret, except where kubeadm prints them on
-- purpose (the join commands: "--token ID.SECRET", "--certificate-key KEY", the upload-certs key on
-- its own line). Returns a list of problems.
function M.secret_leaks(texts, root, token, cert_key)
  local api = require "moonadm.api"
  local problems, forms = {}, {}
  local p = io.popen("find " .. h.q(root .. "/etc/kubernetes") .. " -name '*.key' -type f")
  for path in p:lines() do
    local pem = h.read(path) or ""
    forms[#forms + 1] = { path, pem }
    forms[#forms + 1] = { path .. " (base64)", encoding.base64_encode(pem) }
    for line in pem:gmatch("[^\n]+") do
      if not line:match("^%-%-%-%-%-") and #line >= 40 then forms[#forms + 1] = { path .. " (a PEM line)", line } end
    end
  end
  p:close()
  local secret = token and token:match("%.(%w+)$")
  for name, text in pairs(texts) do
    for _, f in ipairs(forms) do
      if text:find(f[2], 1, true) then problems[#problems + 1] = name .. ": private key " .. f[1] end
    end
    for line in text:gmatch("[^\n]+") do
      if secret and line:find(secret, 1, true) and not line:find("--token " .. token, 1, true) then
        problems[#problems + 1] = name .. ": token secret in " .. line:sub(1, 200)
      end
      if secret and line:find(encoding.base64_encode(secret), 1, true) then problems[#problems + 1] = name .. ": token secret (base64)" end
      if cert_key and line:find(cert_key, 1, true) and line ~= cert_key and not line:find("--certificate-key " .. cert_key, 1, true) then
        problems[#problems + 1] = name .. ": certificate key in " .. line:sub(1, 200)
      end
    end
  end
  return problems
end

-- Crash points to try: every one (sample nil) or `sample` chosen with the seed (one of each kind
-- first). MOONADM_CRASH_POINTS="FLOW=kind:n,...;FLOW=..." names the points instead (to replay one).
function M.points(counts, sample, seed, flow)
  local named = os.getenv("MOONADM_CRASH_POINTS")
  if named and named ~= "" then
    local out = {}
    for spec in named:gmatch("[^;]+") do
      local f, list = spec:match("^%s*([%w_]+)=(.*)$")
      if f == flow then
        for kind, n in list:gmatch("(%a+):(%d+)") do out[#out + 1] = { kind, tonumber(n) } end
      end
    end
    return out, true
  end
  local all = {}
  for _, kind in ipairs { "write", "api", "etcd" } do
    for i = 1, counts[kind] do all[#all + 1] = { kind, i } end
  end
  if not sample or sample >= #all then return all end
  math.randomseed(seed)
  local pick, seen = {}, {}
  local kinds = { "write", "api", "etcd" }
  for i = #kinds, 2, -1 do
    local j = math.random(i)
    kinds[i], kinds[j] = kinds[j], kinds[i]
  end
  for _, kind in ipairs(kinds) do
    if counts[kind] > 0 and #pick < sample then
      local p = { kind, math.random(counts[kind]) }
      pick[#pick + 1] = p
      seen[p[1] .. p[2]] = true
    end
  end
  while #pick < sample do
    local p = all[math.random(#all)]
    if not seen[p[1] .. p[2]] then pick[#pick + 1] = p; seen[p[1] .. p[2]] = true end
  end
  return pick
end

local function fmt_points(points)
  local s = {}
  for _, p in ipairs(points) do s[#s + 1] = p[1] .. ":" .. p[2] .. (p.regression and "(r)" or "") end
  return table.concat(s, ",")
end
M.fmt_points = fmt_points

-- Kills argv after each of `points` and runs ctx.resume; ctx.check says whether the node
-- converged. Prints one line per point: "[tag] flow kind:n converged|FAILED (secs)". Returns the
-- failure messages and the number of points tried.
function M.sweep(tag, flow, st, ctx, points, claims)
  local failures, tried = {}, 0
  for i, p in ipairs(points) do
    if claims and not M.claim(claims, flow .. "-" .. p[1] .. "-" .. p[2]) then goto next end
    local t0 = core.monotonic()
    local ok, why = pcall(ctx.prepare, i)
    if ok then
      ok, why = M.crash_point(st, ctx.argv, p[1], p[2], function() return ctx.check(i) end, ctx.resume)
    else
      why = ("%s:%d: preparing the point failed: %s"):format(p[1], p[2], tostring(why))
    end
    tried = tried + 1
    print(("[%s] %s %s:%d%s %s (%.0fs)"):format(tag, flow, p[1], p[2], p.regression and " (regression)" or "",
      ok and "converged" or "FAILED", core.monotonic() - t0))
    io.stdout:flush()
    if not ok then
      failures[#failures + 1] = flow .. " " .. why
      print(("[%s]   %s"):format(tag, (why:gsub("\n", "\n[" .. tag .. "]   "))))
    end
    ::next::
  end
  print(("[%s] %s: %d crash points tried, %d converged, %d failed"):format(tag, flow, tried, tried - #failures, #failures))
  return failures, tried
end

-- ---- kills at random moments ------------------------------------------------------------------
-- The plain binary run on s1 in a session of its own, SIGKILLed (the whole group: lab exec and
-- moonadm) `delay` seconds in; then argv --resume, and the node must converge. Returns ok, why,
-- and how long the run took when it ended before the kill.
-- With `after` (a Lua pattern), the delay counts from the first output line that matches it (the
-- issue's "kill -9 3 s after [kubelet-check] is printed").
function M.kill_at(st, ctx, delay, after)
  local log = os.tmpname()
  local pid = assert(proc.spawn { argv = append({ h.bin, "lab", "exec", "s1", "--name", st.name, "--", h.bin }, ctx.argv),
    log = log, new_session = true })
  local t0, ended = core.monotonic(), false
  if after then
    while not (h.read(log) or ""):find(after) do
      if proc.wait(pid, true) then ended = core.monotonic() - t0 break end
      core.sleep(0.02)
    end
    t0 = core.monotonic()
  end
  while not ended and core.monotonic() - t0 < delay do
    if proc.wait(pid, true) then ended = core.monotonic() - t0 break end
    core.sleep(0.005)
  end
  if not ended then
    os.execute("kill -KILL -- -" .. pid .. " 2>/dev/null")
    proc.wait(pid)
    for _ = 1, 100 do -- every process of the group gone
      if not os.execute("kill -0 -- -" .. pid .. " 2>/dev/null") then break end
      core.sleep(0.05)
    end
  end
  local out = h.read(log) or ""
  os.remove(log)
  -- the files as the kill left them: complete or absent, never half-written, with their modes
  -- (a temp file may be left by the kill: the next run removes it, which the check after it holds)
  local partial = {}
  for _, p in ipairs(M.check_files(M.node(st, "s1").root)) do
    if not p:match("temp file left behind") then partial[#partial + 1] = p end
  end
  if #partial > 0 then
    return false, ("killed at %.2fs: a partial file or wrong mode right after the kill: %s"):format(delay, table.concat(partial, "; ")), ended
  end
  local rcode, rout = M.exec(st, "s1", append({ h.bin }, ctx.resume or append(ctx.argv, { "--resume" })))
  if rcode ~= 0 then
    return false, ("killed at %.2fs: the run after the kill failed (exit %d); killed run:\n%s\n--- after the kill:\n%s"):format(delay,
      rcode, out:sub(-1200), rout:sub(-2500)), ended
  end
  local problems = ctx.check(0)
  if problems then return false, ("killed at %.2fs: %s"):format(delay, table.concat(problems, "; ")), ended end
  return true, nil, ended
end

-- `n` kills of the flow at moments drawn with the seed from [0, 0.9 × the clean run's time].
function M.kill_sweep(tag, flow, st, ctx, n, seed, run_secs, claims)
  math.randomseed(seed)
  local delays = {}
  for i = 1, n do delays[i] = math.random() * run_secs * 0.9 end
  local line = {}
  for _, d in ipairs(delays) do line[#line + 1] = ("%.2f"):format(d) end
  print(("[%s] %s: %d kills at (s) %s (seed %d, clean run %.1fs)"):format(tag, flow, n, table.concat(line, " "), seed, run_secs))
  local failures, ended, tried = {}, 0, 0
  for i, d in ipairs(delays) do
    if claims and not M.claim(claims, flow .. "-kill-" .. i) then goto next end
    tried = tried + 1
    local t0 = core.monotonic()
    local ok, why = pcall(ctx.prepare, 0)
    local fin
    if ok then ok, why, fin = M.kill_at(st, ctx, d) else why = "preparing failed: " .. tostring(why) end
    if ok and fin then
      -- the run ended before the moment (this run was faster than the timed one): once more, at
      -- the same fraction of the time this run took
      d = d * fin / (run_secs * 0.9)
      ok, why = pcall(ctx.prepare, 0)
      if ok then ok, why, fin = M.kill_at(st, ctx, d) else why = "preparing failed: " .. tostring(why) end
    end
    if fin then ended = ended + 1 end
    print(("[%s] %s kill %d at %.2fs%s %s (%.0fs)"):format(tag, flow, i, d, fin and " (the run had ended)" or "",
      ok and "converged" or "FAILED", core.monotonic() - t0))
    io.stdout:flush()
    if not ok then
      failures[#failures + 1] = flow .. " " .. why
      print(("[%s]   %s"):format(tag, (why:gsub("\n", "\n[" .. tag .. "]   "))))
    end
    ::next::
  end
  print(("[%s] %s: %d kills tried, %d converged, %d failed (%d after the run had ended)"):format(tag, flow, tried, tried - #failures,
    #failures, ended))
  return failures, tried, ended
end

-- A shared work queue between the parallel workers: the first to create claims/NAME does it.
function M.claim(dir, name)
  return os.execute("mkdir " .. h.q(dir .. "/" .. name) .. " 2>/dev/null") == true
end

-- Sets a flow up on its lab and counts its mutations (a clean hooked run after prepare(0)).
function M.setup_flow(st, flow)
  local ctx = M.FLOWS[flow].setup(st)
  ctx.prepare(0)
  local code, counts, out, lines, secs = M.count(st, ctx.argv)
  assert(code == 0, ("%s: the clean run failed (exit %d):\n%s"):format(flow, code, out:sub(-3000)))
  local problems = ctx.check(0)
  assert(not problems, flow .. ": the clean run did not converge: " .. table.concat(problems or {}, "; "))
  if ctx.after_count then ctx.after_count() end
  ctx.counts, ctx.lines, ctx.secs, ctx.out = counts, lines, secs, out
  return ctx
end

-- ---- one worker of the parallel sweep -----------------------------------------------------------
-- JOBFILE: {lab = NAME, kind = "one"|"ha"|"old", out = FILE, jobs = {{flow=, kills=N?, seed=?}, ...}}.
-- Results (FILE, rewritten after each job): {{flow=, what="points"|"kills", tried=, failed=,
-- failures={...}, counts=, secs=}}.
function M.worker_main(jobfile)
  local job = cjson.decode(assert(h.read(jobfile)))
  local results = {}
  local function save() h.write(job.out, cjson.encode(results)) end
  local t0 = core.monotonic()
  local ok, err = pcall(function()
    local st = M.up(job.lab, nil, M.LAB_ARGS[job.kind])
    print(("[%s] lab %s (%s) up in %.0fs"):format(job.lab, job.lab, job.kind, core.monotonic() - t0))
    if job.kind == "one" then
      -- the flows of a "one" lab run s1's own cluster: cp1's control plane would only take CPU
      os.execute("rm -f " .. h.q(st.nodes[1].root) .. "/etc/kubernetes/manifests/*")
    end
    for _, j in ipairs(job.jobs) do
      local t1 = core.monotonic()
      local r = { flow = j.flow, what = j.kills and "kills" or "points", tried = 0, failed = 0, failures = {} }
      results[#results + 1] = r
      local sok, serr = pcall(function()
        local ctx = M.setup_flow(st, j.flow)
        r.counts = ctx.counts
        print(("[%s] %s: %d file writes, %d API mutations, %d etcd member changes; a clean run %.1fs"):format(job.lab, j.flow,
          ctx.counts.write, ctx.counts.api, ctx.counts.etcd, ctx.secs))
        io.stdout:flush()
        local failures, tried, ended
        if j.kills then
          -- the same moments in every worker (one seed, one timed run: the first worker's)
          local secs = tonumber(h.read(job.claims and (job.claims .. "/" .. j.flow .. ".secs") or "") or "")
          if not secs then
            secs = ctx.secs
            if job.claims then h.write(job.claims .. "/" .. j.flow .. ".secs", tostring(secs)) end
          end
          failures, tried, ended = M.kill_sweep(job.lab, j.flow, st, ctx, j.kills, j.seed or 1, secs, job.claims)
        else
          local pts = M.points(ctx.counts, j.sample, j.seed or 0, j.flow)
          failures, tried = M.sweep(job.lab, j.flow, st, ctx, pts, job.claims)
        end
        r.tried, r.failed, r.failures, r.ended = tried, #failures, failures, ended
      end)
      if not sok then r.failed = r.failed + 1; r.failures[#r.failures + 1] = j.flow .. ": " .. tostring(serr) print(serr) end
      r.secs = core.monotonic() - t1
      save()
    end
    M.clean(st, job.kind == "one")
  end)
  if not ok then results[#results + 1] = { flow = "lab " .. job.lab, tried = 0, failed = 1, failures = { tostring(err) } } print(err) end
  save()
  return 0
end

-- Runs `groups` ({{lab=, kind=, jobs=}, ...}) in parallel worker processes (one lab each), prints
-- each worker's log as it ends, and returns every job's result and the wall time.
function M.parallel(tag, groups)
  local tmp = h.tmpdir()
  local pids, t0 = {}, core.monotonic()
  os.execute("mkdir -p " .. h.q(tmp .. "/claims"))
  for i, g in ipairs(groups) do
    g.claims = tmp .. "/claims"
    g.out = tmp .. "/result-" .. i .. ".json"
    local jf = tmp .. "/job-" .. i .. ".json"
    h.write(jf, cjson.encode(g))
    g.log = os.getenv("MOONADM_SWEEP_LOGDIR") and (os.getenv("MOONADM_SWEEP_LOGDIR") .. "/" .. g.lab .. ".log") or (tmp .. "/" .. g.lab .. ".log")
    pids[i] = assert(proc.spawn { argv = { h.bin, "lua", h.top .. "/tests/e2e/crash_common.lua", "worker", jf }, log = g.log,
      cwd = h.top })
    core.sleep(20) -- lab ups one after another: each start-up is CPU-heavy
  end
  local all = {}
  for i, g in ipairs(groups) do
    proc.wait(pids[i])
    print(("\n==== [%s] worker %s (%s lab): its log\n%s"):format(tag, g.lab, g.kind, h.read(g.log) or "(no log)"))
    local ok, res = pcall(cjson.decode, h.read(g.out) or "")
    if not ok or type(res) ~= "table" then res = { { flow = "worker " .. g.lab, tried = 0, failed = 1, failures = { "no results" } } } end
    for _, r in ipairs(res) do r.lab = g.lab; all[#all + 1] = r end
    M.down(g.lab)
  end
  local secs = core.monotonic() - t0
  h.rmrf(tmp)
  return all, secs
end

if arg and arg[0] and arg[0]:match("crash_common%.lua$") and arg[1] == "worker" then
  os.exit(M.worker_main(arg[2]))
end

return M
