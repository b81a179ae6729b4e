-- Crash-anywhere convergence on the lab, shared by crash_spec.lua (a random sample, every run) and
-- long_crash_spec.lua (every mutation, make test-long). The hooked build (bin/moonadm-hooks, make
-- test-hooks) kills itself after the Nth completed file write / mutating API call / etcd member
-- change (MOONADM_CRASH_AFTER=kind:N); the plain binary then re-runs with --resume, and the node
-- must converge: a healthy control plane, exactly the expected etcd members (none a learner), one
-- bootstrap-token Secret per configured token, every file complete and with its mode.
-- Own lab: dev14c (10.253.14): cp1 and cp2 are the lab's cluster; the spare s1 runs the init sweep
-- as a one-node cluster of its own, then the control-plane join sweep into the lab's cluster.
local cjson = require "cjson"
local h = require "helpers"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local core = require "moonadm.core"

local M = { LAB = "dev14c", SUBNET = "10.253.14" }
M.hooks = h.top .. "/bin/moonadm-hooks"
M.bin_dir = os.getenv("MOONADM_LAB_BIN") or (h.top .. "/.lab/bin")

local function q(argv)
  local p = {}
  for _, a in ipairs(argv) do p[#p + 1] = h.q(a) end
  return table.concat(p, " ")
end

function M.have_hooks()
  local f = io.open(M.hooks, "r")
  if f then f:close() return true end
  return false
end

-- The crash lab: cp1 and cp2 behind the lab's load balancer (a control-plane join needs a stable
-- controlPlaneEndpoint) and the spare s1.
function M.up(name, subnet, args)
  name, subnet = name or M.LAB, subnet or M.SUBNET
  args = args or { "--control-planes", "2", "--spares", "1" }
  local dir = h.top .. "/.lab/" .. name
  local f = io.open(dir .. "/lab.json", "r")
  if f then
    local st = cjson.decode(f:read("a"))
    f:close()
    if st.ready and os.getenv("MOONADM_E2E_RUN") and st.crash_run == os.getenv("MOONADM_E2E_RUN") then return st end
  end
  local up = { "lab", "up", "--name", name, "--subnet", subnet }
  for _, a in ipairs(args) do up[#up + 1] = a end
  local code, out, err = h.moonadm(up)
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

function M.node(st, name)
  for _, n in ipairs(st.nodes) do if n.name == name then return n end end
  error("no node " .. name)
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
  local p = io.popen(q(a) .. " 2>&1; echo \"rc=$?\"")
  local out = p:read("a")
  p:close()
  return tonumber(out:match("rc=(%d+)%s*$")), (out:gsub("rc=%d+%s*$", ""))
end

-- s1's own one-node cluster: the lab's init config with s1's name and address, a fixed token.
function M.init_config(st)
  local s1 = M.node(st, "s1")
  local docs = assert(yaml.decode(assert(h.read(st.dir .. "/cp1-init.yaml"))))
  for _, d in ipairs(docs) do
    if d.kind == "InitConfiguration" then
      d.localAPIEndpoint.advertiseAddress = s1.ip
      d.nodeRegistration.name = "s1"
      d.bootstrapTokens = { { token = "crash1.0123456789crash1" } }
    elseif d.kind == "ClusterConfiguration" then
      d.controlPlaneEndpoint = nil
    end
  end
  local path = st.dir .. "/s1-crash-init.yaml"
  h.write(path, yaml.encode_all(docs))
  return path
end

function M.join_config(st)
  local s1 = M.node(st, "s1")
  local pin = pki.read_cert(h.read(st.nodes[1].root .. "/etc/kubernetes/pki/ca.crt")):pin()
  local path = st.dir .. "/s1-crash-join.yaml"
  h.write(path, yaml.encode {
    apiVersion = "kubeadm.k8s.io/v1beta4", kind = "JoinConfiguration",
    discovery = { bootstrapToken = { token = st.token, apiServerEndpoint = st.endpoint or (st.nodes[1].ip .. ":6443"),
      caCertHashes = { pin } } },
    nodeRegistration = { name = "s1" },
    controlPlane = { localAPIEndpoint = { advertiseAddress = s1.ip, bindPort = 6443 }, certificateKey = st.certificate_key },
  })
  return path
end

function M.etcd_members(st, node)
  local code, out = M.exec(st, node, { "etcdctl", "--endpoints", "https://127.0.0.1:2379",
    "--cacert", "/etc/kubernetes/pki/etcd/ca.crt", "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt",
    "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key", "--command-timeout", "5s", "member", "list", "-w", "json" })
  if code ~= 0 then return nil, out end
  local ok, j = pcall(cjson.decode, out)
  return ok and j.members or nil, out
end

-- Back to a node with nothing of init or join: moonadm reset (removes its etcd member when it
-- joined), its Node deleted from the lab's cluster, whatever a reset might leave removed by hand,
-- and the node's ports free.
function M.clean(st)
  local s1 = M.node(st, "s1")
  M.exec(st, "s1", { h.bin, "reset", "--force" })
  -- as after kubeadm reset: the Node object goes too (a Ready Node "s1" would refuse the next join)
  M.kubectl(st, st.dir .. "/super-admin.conf", { "delete", "node", "s1", "--ignore-not-found" })
  os.execute("rm -f " .. h.q(s1.root) .. "/etc/kubernetes/manifests/*.yaml")
  for _ = 1, 120 do
    local code = M.exec(st, "s1", { "bash", "-c", "! (exec 3<>/dev/tcp/127.0.0.1/6443) 2>/dev/null && ! (exec 3<>/dev/tcp/127.0.0.1/2379) 2>/dev/null" })
    if code == 0 then break end
    core.sleep(0.5)
  end
  for _, d in ipairs { "/etc/kubernetes", "/var/lib/etcd", "/var/lib/moonadm", "/var/lib/kubelet/pki" } do
    os.execute("rm -rf " .. h.q(s1.root .. d) .. "/* " .. h.q(s1.root .. d) .. "/.[!.]* 2>/dev/null")
  end
  for _, f in ipairs { "/var/lib/kubelet/config.yaml", "/var/lib/kubelet/kubeadm-flags.env", "/var/lib/kubelet/instance-config.yaml" } do
    os.remove(s1.root .. f)
  end
end

local function mode_of(path)
  local p = io.popen("stat -c %a " .. h.q(path))
  local m = p:read("l")
  p:close()
  return m
end

-- Every file under etc/kubernetes is complete (parses) and has its mode; no temp file is left.
function M.check_files(root)
  local problems, n = {}, 0
  local p = io.popen("find " .. h.q(root .. "/etc/kubernetes") .. " " .. h.q(root .. "/var/lib/kubelet") ..
    " -maxdepth 3 -type f 2>/dev/null")
  for path in p:lines() do
    n = n + 1
    local text = h.read(path) or ""
    local mode = mode_of(path)
    local function bad(why) problems[#problems + 1] = path .. ": " .. why end
    if path:match("/%.[^/]*%.tmp%-") then bad("temp file left behind")
    elseif path:match("%.key$") then
      if mode ~= "600" then bad("mode " .. mode) end
      if not pki.read_key(text) then bad("not a complete private key") end
    elseif path:match("%.crt$") then
      if not pki.read_cert(text) then bad("not a complete certificate") end
    elseif path:match("%.pub$") then
      if not pki.read_public_key(text) then bad("not a complete public key") end
    elseif path:match("/etc/kubernetes/[^/]+%.conf$") then
      if mode ~= "600" then bad("mode " .. mode) end
      local d = yaml.decode(text)
      if not (d and d[1] and d[1].clusters) then bad("not a complete kubeconfig") end
    elseif path:match("/manifests/[^/]+%.yaml$") then
      if mode ~= "600" then bad("mode " .. mode) end
      local d = yaml.decode(text)
      if not (d and d[1] and d[1].kind == "Pod") then bad("not a complete static Pod") end
    elseif path:match("%.yaml$") then
      if not yaml.decode(text) then bad("not complete YAML") end
    end
  end
  p:close()
  return problems, n
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

-- The converged state: /readyz ok, exactly `want_members` voting members, one Secret per token,
-- the Node a control plane, files complete. Returns nil or a list of problems.
function M.check(st, node_root, kubeconfig, want_members, want_tokens)
  local problems = M.check_files(node_root)
  local ready = false
  for _ = 1, 60 do
    local c, out = M.kubectl(st, kubeconfig, { "get", "--raw", "/readyz" })
    if c == 0 and out:match("^ok") then ready = true break end
    core.sleep(1)
  end
  if not ready then problems[#problems + 1] = "/readyz never ok" end
  local m, raw = M.etcd_members(st, "s1")
  if not m then problems[#problems + 1] = "etcd member list failed: " .. tostring(raw)
  else
    if #m ~= want_members then problems[#problems + 1] = ("%d etcd members, want %d"):format(#m, want_members) end
    for _, x in ipairs(m) do
      if x.isLearner then problems[#problems + 1] = "a learner is left: " .. tostring(x.name) end
    end
  end
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

-- The mutations of one clean run of argv on s1, from the hook log: {write=, api=, etcd=}.
function M.count(st, argv, extra)
  local logf = os.tmpname()
  os.remove(logf)
  local a = { M.hooks }
  for _, x in ipairs(argv) do a[#a + 1] = x end
  for _, x in ipairs(extra or {}) do a[#a + 1] = x end
  local code, out = M.exec(st, "s1", a, { "MOONADM_HOOK_LOG=" .. logf })
  local counts, lines = { write = 0, api = 0, etcd = 0 }, {}
  local fh = io.open(logf, "r") -- absent when the run failed before its first mutation
  for line in fh and fh:lines() or function() end do
    local kind = line:match("^(%a+) %d+ ")
    if counts[kind] then counts[kind] = counts[kind] + 1; lines[#lines + 1] = line end
  end
  if fh then fh:close() end
  os.remove(logf)
  return code, counts, out, lines
end

-- The first mutation whose hook-log line matches `pattern` ("api 9 POST /api/v1/... 201"), as a
-- crash point {kind, n}: regression points named by what they do, not by a number that moves.
function M.point_of(lines, pattern)
  for _, l in ipairs(lines) do
    if l:match(pattern) then
      local kind, n = l:match("^(%a+) (%d+) ")
      return { kind, tonumber(n) }
    end
  end
end

-- One crash point: the hooked run killed at kind:n, then the plain binary with --resume.
-- Returns true, or false and what went wrong.
function M.crash_point(st, argv, kind, n, check)
  local a = { M.hooks }
  for _, x in ipairs(argv) do a[#a + 1] = x end
  local code, out = M.exec(st, "s1", a, { "MOONADM_CRASH_AFTER=" .. kind .. ":" .. n })
  if code == 0 then return false, ("%s:%d: the hooked run was not killed (ran to the end):\n%s"):format(kind, n, out) end
  local r = { h.bin }
  for _, x in ipairs(argv) do r[#r + 1] = x end
  r[#r + 1] = "--resume"
  local rcode, rout = M.exec(st, "s1", r)
  if rcode ~= 0 then
    return false, ("%s:%d: --resume failed (exit %d), killed run:\n%s\n--- resume:\n%s"):format(kind, n, rcode,
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
    forms[#forms + 1] = { path .. " (base64)", api.b64encode(pem) }
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
      if secret and line:find(api.b64encode(secret), 1, true) then problems[#problems + 1] = name .. ": token secret (base64)" end
      if cert_key and line:find(cert_key, 1, true) and line ~= cert_key and not line:find("--certificate-key " .. cert_key, 1, true) then
        problems[#problems + 1] = name .. ": certificate key in " .. line:sub(1, 200)
      end
    end
  end
  return problems
end

-- Crash points to try: every one (full) or `sample` chosen with the seed.
-- MOONADM_CRASH_POINTS="FLOW=kind:n,...;FLOW=..." (FLOW init or join) names the points instead.
function M.points(counts, sample, seed, flow)
  local named = os.getenv("MOONADM_CRASH_POINTS")
  if named and named ~= "" then
    local out = {}
    for spec in named:gmatch("[^;]+") do
      local f, list = spec:match("^%s*(%w+)=(.*)$")
      if f == flow then
        for kind, n in list:gmatch("(%a+):(%d+)") do out[#out + 1] = { kind, tonumber(n) } end
      end
    end
    return out
  end
  local all = {}
  for _, kind in ipairs { "write", "api", "etcd" } do
    for i = 1, counts[kind] do all[#all + 1] = { kind, i } end
  end
  if not sample or sample >= #all then return all end
  math.randomseed(seed)
  local pick, seen = {}, {}
  -- one of each kind that has any (kinds in a seeded order, so a small sample still reaches every
  -- kind over runs), then at random
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

-- Kills argv after each of `points` and re-runs it with --resume; check() says whether the node
-- converged. Prints one line per point as "[tag] flow kind:n converged|FAILED". Returns the
-- failure messages and the number of points tried.
function M.sweep(tag, flow, st, argv, points, check)
  local failures, tried = {}, 0
  for _, p in ipairs(points) do
    M.clean(st)
    tried = tried + 1
    local ok, why = M.crash_point(st, argv, p[1], p[2], check)
    print(("[%s] %s %s:%d %s"):format(tag, flow, p[1], p[2], ok and "converged" or "FAILED"))
    if not ok then failures[#failures + 1] = why end
  end
  print(("[%s] %s: %d crash points tried, %d failed"):format(tag, flow, tried, #failures))
  return failures, tried
end

return M
