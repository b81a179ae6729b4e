-- Differential tests: moonadm's local init phases against the reference kubeadm v1.35.4, config by
-- config (tests/spec/fixtures/diff/*.yaml), field by field. Random parts (keys, serials,
-- signatures, times within a minute) are the only allowed differences; every other difference is
-- listed in EXPECTED below with its entry in docs/compatibility.md, so that a change on either side
-- fails here. The reference binary is required: without it every test fails (make lab-bins).
local h = require "helpers"
local ref = require "reference_kubeadm"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local b64 = require "pki.base64"

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
        ca_ok = ca_ok and b64.decode(d) == ca
        c.cluster["certificate-authority-data"] = "<ca.crt>"
      end
    end
    for _, u in ipairs(doc.users or {}) do
      if u.user["client-certificate-data"] then
        certs[u.name] = b64.decode(u.user["client-certificate-data"])
        u.user["client-certificate-data"] = "<cert>"
      end
      if u.user["client-key-data"] then
        keys[u.name] = b64.decode(u.user["client-key-data"])
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
local function run(name)
  if runs[name] then return runs[name] end
  ref.require()
  local scratch = h.tmpdir()
  local cfg = ref.config(FIX .. name .. ".yaml", scratch)
  local r = {
    scratch = scratch,
    kubeadm = ref.run_kubeadm(cfg, PHASES, scratch),
    moonadm = ref.run_moonadm(cfg, PHASES, scratch, { mkdirs = ref.host_ca_dirs() }),
    config = cfg,
  }
  for i, o in ipairs(r.moonadm.out) do
    assert(o.code == 0, ("moonadm init phase %s failed:\n%s"):format(table.concat(PHASES[i], " "), o.output))
  end
  for i, o in ipairs(r.kubeadm.out) do
    assert(o.code == 0, ("kubeadm init phase %s failed:\n%s"):format(table.concat(PHASES[i], " "), o.output))
  end
  runs[name] = r
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

local CONFIGS = { "defaults", "ecdsa", "ha", "external_etcd", "extra", "patches", "crisocket_on", "crisocket_off" }

describe("differential: moonadm's local init phases against kubeadm v1.35.4", function()
  teardown(function()
    for _, r in pairs(runs) do h.rmrf(r.scratch) end
  end)

  it("the reference kubeadm is there (make lab-bins)", function()
    ref.require()
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
