-- Differential tests: moonadm's local init phases against the reference kubeadm v1.35.4, config by
-- config (tests/spec/fixtures/diff/*.yaml), field by field. Random parts (keys, serials,
-- signatures, times within a minute) are the only allowed differences; every other difference is
-- listed in EXPECTED below with its entry in docs/compatibility.md, so that a change on either side
-- fails here. The reference binary is required: without it every test fails (make lab-bins-for-specs),
-- or is pending where it cannot be built (make test-unit without Go or a cache: ref.when_built).
local h = require "helpers"
local ref = require "reference_kubeadm"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"
local nodeview = require "node.view"

local FIX = h.top .. "/tests/spec/fixtures/diff/"

local PHASES = {
  { "certs", "all" }, { "kubeconfig", "all" }, { "etcd", "local" }, { "control-plane", "all" }, { "kubelet-start" },
}

-- Differences that are not random, per config, per area; each has an entry in docs/compatibility.md.
local PATCHED_SOCKET = "kubelet config.yaml.containerRuntimeEndpoint: kubeadm=\"unix:///run/containerd/containerd.sock\" " ..
  "moonadm=\"unix:///run/patched.sock\""
local EXPECTED = {
  -- compatibility.md "Patch order under NodeLocalCRISocket"
  patches = { kubelet = { PATCHED_SOCKET, "kubelet config.yaml: bytes differ" } },
}

---------------------------------------------------------------------------------------------------
-- comparison helpers: each returns a list of difference strings (empty = same)

local function show(v)
  if type(v) == "string" then return ("%q"):format(v) end
  if type(v) ~= "table" then return tostring(v) end
  return yaml.encode(v):gsub("\n$", ""):gsub("\n", " | ")
end

local function is_list(t)
  return type(t) == "table" and (getmetatable(t) == yaml.array_mt or (#t > 0 and next(t, #t) == nil))
end

-- Deep difference of two decoded YAML values; lists of strings compare as sets (flags).
local function deep_diff(a, b, path, out)
  if type(a) ~= "table" or type(b) ~= "table" then
    if a ~= b then out[#out + 1] = ("%s: kubeadm=%s moonadm=%s"):format(path, show(a), show(b)) end
    return out
  end
  if is_list(a) and is_list(b) then
    local strings = true
    for _, v in ipairs(a) do if type(v) ~= "string" then strings = false end end
    for _, v in ipairs(b) do if type(v) ~= "string" then strings = false end end
    if strings and (#a > 0 or #b > 0) then
      local sa, sb = {}, {}
      for _, v in ipairs(a) do sa[v] = true end
      for _, v in ipairs(b) do sb[v] = true end
      for _, v in ipairs(a) do if not sb[v] then out[#out + 1] = ("%s: only kubeadm has %q"):format(path, v) end end
      for _, v in ipairs(b) do if not sa[v] then out[#out + 1] = ("%s: only moonadm has %q"):format(path, v) end end
      local same_set = true
      for _, v in ipairs(a) do if not sb[v] then same_set = false end end
      for _, v in ipairs(b) do if not sa[v] then same_set = false end end
      if same_set and #a == #b then
        for i = 1, #a do
          if a[i] ~= b[i] then out[#out + 1] = ("%s: same items, other order"):format(path); break end
        end
      end
      return out
    end
    if #a ~= #b then out[#out + 1] = ("%s: kubeadm has %d items, moonadm %d"):format(path, #a, #b) end
    for i = 1, math.min(#a, #b) do deep_diff(a[i], b[i], ("%s[%d]"):format(path, i - 1), out) end
    return out
  end
  local keys = {}
  for k in pairs(a) do keys[k] = true end
  for k in pairs(b) do keys[k] = true end
  local sorted = {}
  for k in pairs(keys) do sorted[#sorted + 1] = tostring(k) end
  table.sort(sorted)
  for _, k in ipairs(sorted) do
    local p = path == "" and k or (path .. "." .. k)
    if a[k] == nil then out[#out + 1] = ("%s: only moonadm has it (%s)"):format(p, show(b[k]))
    elseif b[k] == nil then out[#out + 1] = ("%s: only kubeadm has it (%s)"):format(p, show(a[k]))
    else deep_diff(a[k], b[k], p, out) end
  end
  return out
end

local function pem_types(text)
  local t = {}
  for ty in text:gmatch("%-%-%-%-%-BEGIN ([%u ]+)%-%-%-%-%-") do t[#t + 1] = ty end
  return table.concat(t, ",")
end

-- What of a certificate must match (everything but the key, serial, signature, exact times).
local TIME_SLACK = 90
local function cert_facts(pem)
  local c = assert(pki.read_cert(pem))
  local i = c:info()
  return {
    subject = i.subject, issuer = i.issuer, dns = i.dns, ips = i.ips, usages = i.usages,
    ext_usages = i.ext_usages, is_ca = i.is_ca, key_type = i.key_type, key_bits = i.key_bits,
    has_ski = i.ski ~= nil and i.ski ~= "", has_aki = i.aki ~= nil and i.aki ~= "",
    serial_positive = i.serial ~= nil and i.serial ~= "" and not i.serial:match("^%-"),
    pem = pem_types(pem),
  }, i
end

local function compare_cert(name, a_pem, b_pem, out)
  local fa, ia = cert_facts(a_pem)
  local fb, ib = cert_facts(b_pem)
  deep_diff(fa, fb, name, out)
  -- both tools ran within a minute or so: NotBefore / NotAfter agree within TIME_SLACK, which still
  -- tells a 5-minute back-dating or a different validity period apart
  if math.abs(ia.not_before - ib.not_before) > TIME_SLACK then
    out[#out + 1] = ("%s: NotBefore differs by %ds"):format(name, ib.not_before - ia.not_before)
  end
  if math.abs(ia.not_after - ib.not_after) > TIME_SLACK then
    out[#out + 1] = ("%s: NotAfter differs by %ds"):format(name, ib.not_after - ia.not_after)
  end
  return out
end

local function compare_key(name, a_pem, b_pem, out, public)
  local read = public and pki.read_public_key or pki.read_key
  local ka, kb = assert(read(a_pem)), assert(read(b_pem))
  deep_diff({ type = ka:type(), bits = ka:bits(), pem = pem_types(a_pem) },
    { type = kb:type(), bits = kb:bits(), pem = pem_types(b_pem) }, name, out)
  return out
end

-- A kubeconfig: the embedded CA must be the tool's own ca.crt, the client certificate is compared
-- as a certificate, the key by type; everything else (names, server, contexts) exactly; bytes with
-- the *-data values masked.
local function compare_kubeconfig(name, a, b, ca_a, ca_b, out)
  local function strip(text, ca)
    local doc = assert(yaml.decode(text))[1]
    local certs, keys, ca_ok = {}, {}, true
    for _, c in ipairs(doc.clusters or {}) do
      local d = c.cluster["certificate-authority-data"]
      if d then
        ca_ok = ca_ok and encoding.base64_decode(d) == ca
        c.cluster["certificate-authority-data"] = "<ca.crt>"
      end
    end
    for _, u in ipairs(doc.users or {}) do
      if u.user["client-certificate-data"] then
        certs[u.name] = encoding.base64_decode(u.user["client-certificate-data"])
        u.user["client-certificate-data"] = "<cert>"
      end
      if u.user["client-key-data"] then
        keys[u.name] = encoding.base64_decode(u.user["client-key-data"])
        u.user["client-key-data"] = "<key>"
      end
    end
    local masked = text:gsub("(%-data: )%S+", "%1X")
    return doc, certs, keys, ca_ok, masked
  end
  local da, ca_, ka, oka, ma = strip(a, ca_a)
  local db, cb, kb, okb, mb = strip(b, ca_b)
  if oka ~= okb then out[#out + 1] = ("%s: embedded CA is ca.crt: kubeadm=%s moonadm=%s"):format(name, oka, okb) end
  deep_diff(da, db, name, out)
  for u, pem in pairs(ca_) do
    if cb[u] then compare_cert(name .. " client cert", pem, cb[u], out) end
  end
  for u, pem in pairs(ka) do
    if kb[u] then compare_key(name .. " client key", pem, kb[u], out) end
  end
  if ma ~= mb and #out == 0 then out[#out + 1] = name .. ": bytes differ (data masked)" end
  return out
end

-- kubeadm-flags.env as a set of flags.
local function flags_of(text)
  local q = text and text:match('KUBELET_KUBEADM_ARGS="(.*)"') or ""
  local l = setmetatable({}, yaml.array_mt)
  for w in q:gmatch("%S+") do l[#l + 1] = w end
  return l
end

---------------------------------------------------------------------------------------------------
-- one run of both tools per config, shared by that config's tests

local runs = {}
-- release: another minor's column (the fixture's kubernetesVersion replaced, that release's kubeadm)
local function run(name, release)
  local id = name .. (release and ("@" .. release) or "")
  if runs[id] then return runs[id] end
  ref.require(release)
  local scratch = h.tmpdir()
  local cfg = ref.config(FIX .. name .. ".yaml", scratch, release)
  local r = {
    scratch = scratch,
    kubeadm = ref.run_kubeadm(cfg, PHASES, scratch, { release = release }),
    moonadm = ref.run_moonadm(cfg, PHASES, scratch, { mkdirs = ref.host_ca_dirs() }),
    config = cfg,
  }
  for i, o in ipairs(r.moonadm.out) do
    assert(o.code == 0, ("moonadm init phase %s failed:\n%s"):format(table.concat(PHASES[i], " "), o.output))
  end
  for i, o in ipairs(r.kubeadm.out) do
    assert(o.code == 0, ("kubeadm init phase %s failed:\n%s"):format(table.concat(PHASES[i], " "), o.output))
  end
  runs[id] = r
  return r
end

local function files(r, prefix, suffix)
  local list = {}
  for rel, e in pairs(r.kubeadm.files) do
    if e.type == "file" and rel:sub(1, #prefix) == prefix and (not suffix or rel:sub(-#suffix) == suffix) then
      list[#list + 1] = rel
    end
  end
  for rel, e in pairs(r.moonadm.files) do
    if e.type == "file" and rel:sub(1, #prefix) == prefix and (not suffix or rel:sub(-#suffix) == suffix)
      and not r.kubeadm.files[rel] then
      list[#list + 1] = rel
    end
  end
  table.sort(list)
  return list
end

-- the scratch dirs the test itself made for kubeadm's bind mounts: their modes are not kubeadm's
local OWN_DIRS = { etc = true, ["etc/kubernetes"] = true, var = true, ["var/lib"] = true }

local AREAS = {}

function AREAS.files(r)
  local out = {}
  local names = {}
  for rel in pairs(r.kubeadm.files) do names[rel] = true end
  for rel in pairs(r.moonadm.files) do names[rel] = true end
  local sorted = {}
  for rel in pairs(names) do sorted[#sorted + 1] = rel end
  table.sort(sorted)
  for _, rel in ipairs(sorted) do
    local a, b = r.kubeadm.files[rel], r.moonadm.files[rel]
    if OWN_DIRS[rel] then -- made by the test (kubeadm's bind mounts, moonadm's --root)
    elseif not a then out[#out + 1] = ("/%s: only moonadm writes it"):format(rel)
    elseif not b then out[#out + 1] = ("/%s: only kubeadm writes it"):format(rel)
    elseif a.type ~= b.type then out[#out + 1] = ("/%s: kubeadm %s, moonadm %s"):format(rel, a.type, b.type)
    elseif a.mode ~= b.mode then
      out[#out + 1] = ("/%s: mode kubeadm %s, moonadm %s"):format(rel, a.mode, b.mode)
    end
  end
  return out
end

function AREAS.certs(r)
  local out = {}
  for _, rel in ipairs(files(r, "etc/kubernetes/pki/")) do
    local a, b = r.kubeadm.files[rel], r.moonadm.files[rel]
    if a and b then
      local short = rel:gsub("^etc/kubernetes/pki/", "")
      if rel:match("%.crt$") then compare_cert(short, a.data, b.data, out)
      elseif rel:match("%.pub$") then compare_key(short, a.data, b.data, out, true)
      else compare_key(short, a.data, b.data, out) end
    end
  end
  return out
end

function AREAS.kubeconfigs(r)
  local out = {}
  local ca_a = (r.kubeadm.files["etc/kubernetes/pki/ca.crt"] or {}).data
  local ca_b = (r.moonadm.files["etc/kubernetes/pki/ca.crt"] or {}).data
  for _, rel in ipairs(files(r, "etc/kubernetes/", ".conf")) do
    local a, b = r.kubeadm.files[rel], r.moonadm.files[rel]
    if a and b then compare_kubeconfig(rel:match("[^/]+$"), a.data, b.data, ca_a, ca_b, out) end
  end
  return out
end

function AREAS.manifests(r)
  local out = {}
  for _, rel in ipairs(files(r, "etc/kubernetes/manifests/")) do
    local a, b = r.kubeadm.files[rel], r.moonadm.files[rel]
    if a and b then
      local name = rel:match("[^/]+$")
      local n = #out
      deep_diff(assert(yaml.decode(a.data))[1], assert(yaml.decode(b.data))[1], name, out)
      if a.data ~= b.data then
        out[#out + 1] = name .. ": bytes differ"
        if #out == n + 1 then
          -- same objects, other bytes: show the first differing line
          local la, lb = {}, {}
          for l in a.data:gmatch("[^\n]*") do la[#la + 1] = l end
          for l in b.data:gmatch("[^\n]*") do lb[#lb + 1] = l end
          for i = 1, math.max(#la, #lb) do
            if la[i] ~= lb[i] then
              out[#out] = ("%s: bytes differ at line %d: kubeadm %q moonadm %q"):format(name, i, la[i] or "", lb[i] or "")
              break
            end
          end
        end
      end
    end
  end
  return out
end

function AREAS.kubelet(r)
  local out = {}
  for _, rel in ipairs(files(r, "var/lib/kubelet/")) do
    local a, b = r.kubeadm.files[rel], r.moonadm.files[rel]
    if a and b then
      local name = "kubelet " .. rel:match("[^/]+$")
      if rel:match("%.env$") then
        deep_diff(flags_of(a.data), flags_of(b.data), name, out)
      else
        deep_diff(assert(yaml.decode(a.data))[1], assert(yaml.decode(b.data))[1], name, out)
      end
      if a.data ~= b.data then out[#out + 1] = name .. ": bytes differ" end
    end
  end
  return out
end

local function kubeconfig_server(text)
  return assert(yaml.decode(text))[1].clusters[1].cluster.server
end

local function manifest(files, name)
  return assert(yaml.decode(files["etc/kubernetes/manifests/" .. name .. ".yaml"].data))[1]
end

local function set_of(list)
  local t = {}
  for _, v in ipairs(list) do t[v] = true end
  return t
end

local function sorted_keys(t)
  local l = {}
  for k in pairs(t) do l[#l + 1] = k end
  table.sort(l)
  return l
end

-- moonadm's init preflight checks (scripts/phases/init/preflight.lua) for a node runtime, by name.
local function moonadm_preflight_names(cfgfile, runtime)
  local config = require "config"
  local context = require "framework.context"
  local preflight = require "preflight.checks"
  local cfg = assert(config.load { files = { cfgfile }, kind = "init" })
  local ctx = context.new { command = "init", cfg = cfg, gates = cfg.gates, flags = { ["node-runtime"] = runtime }, root = "/" }
  local names = { [preflight.is_privileged_user.name] = true }
  local checks = preflight.control_plane_checks(ctx, nodeview.advertise_address(ctx), nodeview.bind_port(ctx))
  for _, c in ipairs(preflight.node_checks(ctx, nodeview.name(ctx), cfg.cluster.kubernetesVersion)) do checks[#checks + 1] = c end
  checks[#checks + 1] = preflight.image_pull({}) -- run after the others (kubeadm's RunPullImagesCheck)
  for _, c in ipairs(checks) do names[c.name] = true end
  return names
end

-- `init phase addon coredns|kube-proxy --print-manifest`: the documents decoded (by kind and
-- name) and the bytes. Differences found here are listed in ADDON_EXPECTED (docs/compatibility.md).
-- Open (the addon phase's owner; docs/compatibility.md): kubeadm prints its Service with
-- resourceVersion "0" and the kube-proxy RoleBinding subject without apiGroup; kubeadm's coredns
-- text is its template (comments, flow lists), so bytes differ.
local CD = { 'coredns.Service/kube-dns.metadata.resourceVersion: only kubeadm has it ("0")', "coredns: bytes differ" }
local KP = { 'kube-proxy.RoleBinding/kube-proxy.subjects[0].apiGroup: only moonadm has it ("rbac.authorization.k8s.io")',
  "kube-proxy: bytes differ" }
local ADDON_EXPECTED = { ["coredns/defaults"] = CD, ["coredns/ecdsa"] = CD, ["kube-proxy/defaults"] = KP,
  ["kube-proxy/ecdsa"] = KP }

local function addon_diffs(addon, cfg, release)
  local r = run(cfg, release)
  local ok, out = ref.moonadm_has_print_manifest(r.config)
  assert(ok, "moonadm init phase addon --print-manifest failed: " .. out)
  local scratch = h.tmpdir()
  local P = { { "addon", addon, "--print-manifest" } }
  local k = ref.run_kubeadm(r.config, P, scratch, { release = release })
  local m = ref.run_moonadm(r.config, P, scratch)
  h.rmrf(scratch)
  assert.equal(0, k.out[1].code, k.out[1].output)
  assert.equal(0, m.out[1].code, m.out[1].output)
  local function docs(text)
    local by = {}
    for _, d in ipairs(assert(yaml.decode(text))) do
      if type(d) == "table" and d.kind then
        -- component configs inside ConfigMaps compare decoded too
        for key, v in pairs(d.kind == "ConfigMap" and d.data or {}) do
          if type(v) == "string" and v:match("^apiVersion:") then d.data[key] = assert(yaml.decode(v))[1] end
        end
        by[d.kind .. "/" .. d.metadata.name] = d
      end
    end
    return by
  end
  local diffs = deep_diff(docs(k.out[1].output), docs(m.out[1].output), addon, {})
  if k.out[1].output ~= m.out[1].output then diffs[#diffs + 1] = addon .. ": bytes differ" end
  return diffs
end

local CONFIGS = { "defaults", "ecdsa", "ha", "external_etcd", "extra", "patches", "crisocket_on", "crisocket_off" }

describe("differential: moonadm's local init phases against kubeadm v1.35.4", function()
  local it = ref.when_built(nil, it, pending)
  teardown(function()
    for _, r in pairs(runs) do h.rmrf(r.scratch) end
  end)

  it("the reference kubeadm is there (make lab-bins)", function()
    ref.require()
  end)

  -- The reference's UNCONFIRMED items (../shared/reference), settled by running it; recorded in
  -- docs/compatibility.md, "Settled by the reference kubeadm".
  describe("settled by the reference kubeadm:", function()
    it("static Pod manifests are 0600 in a 0700 dir; /var/lib/etcd and /var/lib/kubelet are 0700", function()
      for _, side in ipairs { "kubeadm", "moonadm" } do
        local f = run("defaults")[side].files
        assert.equal("700", f["etc/kubernetes/manifests"].mode, side)
        for _, c in ipairs { "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler" } do
          assert.equal("600", f["etc/kubernetes/manifests/" .. c .. ".yaml"].mode, side .. " " .. c)
        end
        assert.equal("700", f["var/lib/etcd"].mode, side)
        assert.equal("700", f["var/lib/kubelet"].mode, side)
        assert.equal("700", run("extra")[side].files["var/lib/etcd/data"].mode, side)
      end
    end)

    it("kubelet.conf (and controller-manager.conf, scheduler.conf) point at the local API endpoint; admin and super-admin at the controlPlaneEndpoint", function()
      for _, side in ipairs { "kubeadm", "moonadm" } do
        local f = run("ha")[side].files
        local want = { ["admin.conf"] = "https://cp.example.test:8443", ["super-admin.conf"] = "https://cp.example.test:8443",
          ["kubelet.conf"] = "https://192.0.2.10:6443", ["controller-manager.conf"] = "https://192.0.2.10:6443",
          ["scheduler.conf"] = "https://192.0.2.10:6443" }
        for name, server in pairs(want) do
          assert.equal(server, kubeconfig_server(f["etc/kubernetes/" .. name].data), side .. " " .. name)
        end
      end
    end)

    it("etcd gets the etcd 3.6 flag names (--feature-gates=InitialCorruptCheck=true, --watch-progress-notify-interval)", function()
      for _, side in ipairs { "kubeadm", "moonadm" } do
        local cmd = set_of(manifest(run("defaults")[side].files, "etcd").spec.containers[1].command)
        assert.is_true(cmd["--feature-gates=InitialCorruptCheck=true"], side)
        assert.is_true(cmd["--watch-progress-notify-interval=5s"], side)
        for flag in pairs(cmd) do assert.is_nil(flag:match("^%-%-experimental"), side .. " " .. flag) end
      end
    end)

    it("probe hosts: apiserver = advertise address, etcd = 127.0.0.1 or the metrics URL's host, unspecified bind-address = none", function()
      for _, side in ipairs { "kubeadm", "moonadm" } do
        local f = run("extra")[side].files
        assert.equal("192.0.2.10", manifest(f, "kube-apiserver").spec.containers[1].livenessProbe.httpGet.host, side)
        local e = manifest(f, "etcd").spec.containers[1]
        assert.same({ host = "127.0.0.1", path = "/livez", port = "probe-port", scheme = "HTTP" }, e.livenessProbe.httpGet, side)
        assert.equal(2382, e.ports[1].containerPort, side)
        assert.is_nil(manifest(f, "kube-controller-manager").spec.containers[1].livenessProbe.httpGet.host, side)
        assert.equal("127.0.0.2", manifest(f, "kube-scheduler").spec.containers[1].livenessProbe.httpGet.host, side)
      end
    end)

    it("an unspecified advertiseAddress: kubeadm uses the default route's address (probe host too); moonadm refuses it (documented)", function()
      ref.require()
      local scratch = h.tmpdir()
      local cfg = ref.config(FIX .. "advertise_unspecified.yaml", scratch)
      local k = ref.run_kubeadm(cfg, { { "control-plane", "apiserver" } }, scratch)
      local m = ref.run_moonadm(cfg, { { "control-plane", "apiserver" } }, scratch)
      h.rmrf(scratch)
      assert.equal(0, k.out[1].code, k.out[1].output)
      local c = manifest(k.files, "kube-apiserver")
      local ip = require("moonadm.net").default_ip()
      assert.equal("--advertise-address=" .. ip, c.spec.containers[1].command[2])
      assert.equal(ip, c.spec.containers[1].livenessProbe.httpGet.host)
      assert.not_equal(0, m.out[1].code)
      assert.matches('advertiseAddress: cannot use "0.0.0.0" as the advertise address', m.out[1].output, 1, true)
    end)

    it("kubeconfig client certificates take the CA's NotBefore (not the kubeconfig run's start - 5m)", function()
      ref.require()
      local scratch = h.tmpdir()
      local cfg = ref.config(FIX .. "ecdsa.yaml", scratch)
      local P = { { "certs", "ca" }, 3, { "kubeconfig", "admin" } }
      local k = ref.run_kubeadm(cfg, P, scratch)
      local m = ref.run_moonadm(cfg, P, scratch)
      h.rmrf(scratch)
      for side, r in pairs { kubeadm = k, moonadm = m } do
        local ca = pki.read_cert(r.files["etc/kubernetes/pki/ca.crt"].data):info()
        local d = assert(yaml.decode(r.files["etc/kubernetes/admin.conf"].data))[1]
        local c = pki.read_cert(encoding.base64_decode(d.users[1].user["client-certificate-data"])):info()
        assert.equal(ca.not_before, c.not_before, side)
        -- NotAfter: the kubeconfig run's start + certificateValidityPeriod (2000h), 3 s or more after the CA's
        assert.is_true(c.not_after - (ca.not_before + 300) - 2000 * 3600 >= 3, side)
      end
    end)

    it("every *_proxy variable of the process (any case, sorted) goes to the control-plane Pods, none to etcd's", function()
      ref.require()
      local scratch = h.tmpdir()
      local cfg = ref.config(FIX .. "ecdsa.yaml", scratch)
      local vars = { HTTP_PROXY = "http://proxy.test:3128", https_proxy = "http://proxy.test:3129",
        NO_PROXY = "10.0.0.0/8", no_proxy = "localhost", ALL_PROXY = "socks5://proxy.test:1080", FTP_PROXY = "http://ftp.test",
        EMPTY_PROXY = "" }
      local envlist = { "PATH=" .. os.getenv("PATH") }
      for n, v in pairs(vars) do envlist[#envlist + 1] = n .. "=" .. v end
      local P = { { "control-plane", "all" }, { "etcd", "local" } }
      local k = ref.run_kubeadm(cfg, P, scratch, { env = envlist })
      local m = ref.run_moonadm(cfg, P, scratch, { env = vars })
      h.rmrf(scratch)
      for i = 1, #P do
        assert.equal(0, k.out[i].code, k.out[i].output)
        assert.equal(0, m.out[i].code, m.out[i].output)
      end
      -- etcd gets none (kubeadm's GetEtcdPodSpec takes only etcd.local.extraEnvs)
      assert.is_nil(manifest(k.files, "etcd").spec.containers[1].env)
      assert.is_nil(manifest(m.files, "etcd").spec.containers[1].env)
      for _, c in ipairs { "kube-apiserver", "kube-controller-manager", "kube-scheduler" } do
        local ek = manifest(k.files, c).spec.containers[1].env
        assert.same({ { name = "ALL_PROXY", value = "socks5://proxy.test:1080" }, { name = "FTP_PROXY", value = "http://ftp.test" },
          { name = "HTTP_PROXY", value = "http://proxy.test:3128" }, { name = "NO_PROXY", value = "10.0.0.0/8" },
          { name = "https_proxy", value = "http://proxy.test:3129" }, { name = "no_proxy", value = "localhost" } },
          { table.unpack(ek) }, "kubeadm " .. c)
        assert.same({ table.unpack(ek) }, { table.unpack(manifest(m.files, c).spec.containers[1].env) }, "moonadm " .. c)
      end
    end)
  end)

  describe("preflight:", function()
    -- kubeadm prints only the checks that fail; at --v=5 it logs one line per check, mapped to names
    -- by reference_kubeadm.PREFLIGHT_LOG. IsPrivilegedUser, NumCPU and Mem log nothing and pass here.
    local KUBEADM_ONLY = { "FileContent--proc-sys-net-ipv4-ip_forward", "Firewalld", "HTTPProxy", "HTTPProxyCIDR",
      "KubernetesVersion" }
    local MOONADM_ONLY = { "FileExisting-crictl", "IsPrivilegedUser", "Mem", "NumCPU" }

    it("the check names kubeadm mentions are moonadm's (systemd runtime), but for the documented ones", function()
      ref.require()
      local r = run("defaults")
      local scratch = h.tmpdir()
      local names = ref.preflight_names(r.config, scratch)
      h.rmrf(scratch)
      local mine = moonadm_preflight_names(r.config, "systemd")
      local only_k, only_m = {}, {}
      for n in pairs(names) do if not mine[n] then only_k[#only_k + 1] = n end end
      for n in pairs(mine) do if not names[n] then only_m[#only_m + 1] = n end end
      table.sort(only_k); table.sort(only_m)
      assert.same(KUBEADM_ONLY, only_k)
      assert.same(MOONADM_ONLY, only_m)
      -- the shared ones, by name
      local shared = {}
      for n in pairs(names) do if mine[n] then shared[#shared + 1] = n end end
      table.sort(shared)
      assert.same({ "CRI", "ContainerRuntimeVersion", "DirAvailable--var-lib-etcd", "FileAvailable--etc-kubernetes-manifests-etcd.yaml",
        "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml",
        "FileAvailable--etc-kubernetes-manifests-kube-controller-manager.yaml",
        "FileAvailable--etc-kubernetes-manifests-kube-scheduler.yaml", "FileExisting-cp", "FileExisting-losetup", "FileExisting-mount", "Hostname", "ImagePull",
        "KubeletVersion", "Port-10250", "Port-10257", "Port-10259", "Port-2379", "Port-2380", "Port-6443", "Service-kubelet",
        "Swap", "SystemVerification" }, shared)
    end)
  end)

  describe("addons:", function()
    for _, addon in ipairs { "coredns", "kube-proxy" } do
      for _, cfg in ipairs { "defaults", "ecdsa" } do
        it(addon .. " --print-manifest (" .. cfg .. ")", function()
          assert.same(ADDON_EXPECTED[addon .. "/" .. cfg] or {}, addon_diffs(addon, cfg))
        end)
      end
    end
  end)

  for _, cfg in ipairs(CONFIGS) do
    describe(cfg .. ":", function()
      for _, area in ipairs { "files", "certs", "kubeconfigs", "manifests", "kubelet" } do
        it(area .. " match kubeadm's, but for the documented differences", function()
          local r = run(cfg)
          local got = AREAS[area](r)
          local want = (EXPECTED[cfg] or {})[area] or {}
          assert.same(want, got)
        end)
      end
    end)
  end
end)

-- One column per further minor moonadm speaks: the same fixtures with kubernetesVersion set to
-- that release, against that release's own kubeadm (make lab-bins-for-specs; without it these fail, as above).
-- Differences per release are listed with their entry in docs/compatibility.md.
local RELEASE_COLUMNS = {
  { release = "v1.36.3", configs = CONFIGS, expected = EXPECTED },
  -- v1.37 removed the NodeLocalCRISocket gate the crisocket fixtures set
  { release = "v1.37.2", configs = { "defaults", "ecdsa", "ha", "external_etcd", "extra", "patches" }, expected = EXPECTED },
}
for _, col in ipairs(RELEASE_COLUMNS) do
  describe("differential: moonadm's local init phases against kubeadm " .. col.release, function()
    local it = ref.when_built(col.release, it, pending)
    it("the reference kubeadm " .. col.release .. " is there (LAB_RELEASES=" .. col.release .. " make lab-bins)", function()
      ref.require(col.release)
    end)
    for _, cfg in ipairs(col.configs) do
      describe(cfg .. ":", function()
        for _, area in ipairs { "files", "certs", "kubeconfigs", "manifests", "kubelet" } do
          it(area .. " match kubeadm's, but for the documented differences", function()
            local r = run(cfg, col.release)
            assert.same((col.expected[cfg] or {})[area] or {}, AREAS[area](r))
          end)
        end
      end)
    end
    for _, addon in ipairs { "coredns", "kube-proxy" } do
      it(addon .. " --print-manifest (defaults)", function()
        assert.same(ADDON_EXPECTED[addon .. "/defaults"], addon_diffs(addon, "defaults", col.release))
      end)
    end
  end)
end
