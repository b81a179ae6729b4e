-- `certs check-expiration` and `certs renew`: the rows kubeadm's renewal manager knows (leaf
-- certificates of the tree, the client certificates embedded in admin/super-admin/controller-
-- manager/scheduler.conf, the CAs), their expiry, and renewal with a new key.
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"
local certlist = require "pki.certlist"
local kubeconfig = require "pki.kubeconfigs"
local tree = require "pki.tree"
local kube_kubeconfig = require "kube.kubeconfig"
local core = require "moonadm.core"
local duration = require "kube.duration"
local tabwriter = require "kube.tabwriter"

local M = {}

-- Rows {name, kind = "cert"|"kubeconfig"|"ca", entry, ca (CA name), path}, each list sorted by name.
function M.rows(E, kdir)
  local certs, cas = {}, {}
  for _, c in ipairs(certlist.for_cluster(E.cluster, { sa = false })) do
    local row = { name = c.name, entry = c, path = tree.path(E, c.base, "crt") }
    if c.is_ca then
      row.kind = "ca"
      cas[#cas + 1] = row
    else
      row.kind, row.ca = "cert", c.ca
      certs[#certs + 1] = row
    end
  end
  for _, k in ipairs(kubeconfig.list) do
    if k.renew then
      certs[#certs + 1] = { name = k.file, kind = "kubeconfig", entry = k, ca = "ca", path = kdir .. "/" .. k.file }
    end
  end
  local by = function(a, b) return a.name < b.name end
  table.sort(certs, by)
  table.sort(cas, by)
  return certs, cas
end

-- The certificate of a row (nil when the file is missing); raises when it cannot be read.
function M.load(E, row)
  local text = E.ctx:read(row.path)
  if not text then return nil end
  if row.kind ~= "kubeconfig" then
    local cert, err = pki.read_cert(text)
    if not cert then error(("failed to load existing certificate %s: %s"):format(row.path, err), 0) end
    return cert
  end
  local kc, err = kube_kubeconfig.current(text, row.path)
  if not kc then error(("failed to load kubeconfig file %s: %s"):format(row.path, err), 0) end
  local data = kc.user and kc.user.user and kc.user.user["client-certificate-data"]
  if type(data) ~= "string" then
    error(("kubeconfig file %s: the user of the current context has no embedded client-certificate-data")
      :format(row.path), 0)
  end
  local pem, derr = encoding.base64_decode(data)
  local cert
  if pem then cert, derr = pki.read_cert(pem) end
  if not cert then error(("kubeconfig file %s: client-certificate-data: %s"):format(row.path, derr), 0) end
  return cert, kc
end

-- Is this CA externally managed (its key absent)?
function M.external(E, ca_name)
  local c = certlist.by_name[ca_name]
  return not E.ctx:exists(tree.path(E, c.base, "key"))
end

-- Data of both tables: list of {name, missing, expires, residual, ca, external}.
-- Whole seconds left from now (epoch seconds with a fraction) to not_after, cut toward zero as
-- kubeadm's int64(time.Until(t) / time.Second).
function M.residual(not_after, now)
  return duration.whole(not_after - now)
end

-- now: epoch seconds with a fraction (kubeadm's time.Until), so a certificate checked in the second
-- it was made shows 364d, not 365d; residual: whole seconds, cut toward zero as Go's.
function M.collect(E, kdir, now)
  now = now or core.now()
  local certs, cas = M.rows(E, kdir)
  local function info(row)
    local cert = M.load(E, row)
    local r = { name = row.name, ca = row.ca, external = M.external(E, row.ca or row.name) }
    if not cert then r.missing = true; return r end
    r.expires = cert:info().not_after
    r.residual = M.residual(r.expires, now)
    return r
  end
  local a, b = {}, {}
  for _, row in ipairs(certs) do a[#a + 1] = info(row) end
  for _, row in ipairs(cas) do b[#b + 1] = info(row) end
  return a, b
end

local function date(t) return os.date("!%b %d, %Y %H:%M UTC", t) end
local function yesno(b) return ("%-8s"):format(b and "yes" or "no") end

function M.text(certs, cas)
  local l = { { "CERTIFICATE", "EXPIRES", "RESIDUAL TIME", "CERTIFICATE AUTHORITY", "EXTERNALLY MANAGED" } }
  for _, r in ipairs(certs) do
    if r.missing then l[#l + 1] = { "!MISSING! " .. r.name, "", "", "", "" }
    else l[#l + 1] = { r.name, date(r.expires), duration.human(r.residual), r.ca, yesno(r.external) } end
  end
  local m = { { "CERTIFICATE AUTHORITY", "EXPIRES", "RESIDUAL TIME", "EXTERNALLY MANAGED" } }
  for _, r in ipairs(cas) do
    if r.missing then m[#m + 1] = { "!MISSING! " .. r.name, "", "", "" }
    else m[#m + 1] = { r.name, date(r.expires), duration.human(r.residual), yesno(r.external) } end
  end
  return tabwriter.format(l) .. "\n\n" .. tabwriter.format(m) .. "\n"
end

local function iso(t) return os.date("!%Y-%m-%dT%H:%M:%SZ", t) end

-- output.kubeadm.k8s.io/v1alpha3 CertificateExpirationInfo, field order as kubeadm's JSON printer.
function M.json(certs, cas)
  local function q(s) return '"' .. s:gsub('[%c"\\]', function(c) return ("\\u%04x"):format(c:byte()) end) .. '"' end
  local function entry(r, ind)
    local f = { ('"name": %s'):format(q(r.name)),
      ('"expirationDate": %s'):format(r.missing and "null" or q(iso(r.expires))),
      ('"residualTime": %d'):format(r.missing and 0 or r.residual),
      ('"externallyManaged": %s'):format(tostring(r.external and not r.missing or false)) }
    if r.ca and not r.missing then f[#f + 1] = ('"caName": %s'):format(q(r.ca)) end
    f[#f + 1] = ('"missing": %s'):format(tostring(r.missing or false))
    return ind .. "{\n" .. ind .. "    " .. table.concat(f, ",\n" .. ind .. "    ") .. "\n" .. ind .. "}"
  end
  local function list(rows)
    if #rows == 0 then return "[]" end
    local out = {}
    for _, r in ipairs(rows) do out[#out + 1] = entry(r, "        ") end
    return "[\n" .. table.concat(out, ",\n") .. "\n    ]"
  end
  return ('{\n    "kind": "CertificateExpirationInfo",\n    "apiVersion": "output.kubeadm.k8s.io/v1alpha3",\n' ..
    '    "certificates": %s,\n    "certificateAuthorities": %s\n}\n'):format(list(certs), list(cas))
end

function M.yaml(certs, cas)
  local function list(rows)
    local out = setmetatable({}, yaml.array_mt)
    for _, r in ipairs(rows) do
      out[#out + 1] = { name = r.name, expirationDate = r.missing and yaml.null or iso(r.expires),
        residualTime = r.missing and 0 or r.residual, externallyManaged = (r.external and not r.missing) or false,
        caName = (not r.missing) and r.ca or nil, missing = r.missing or false }
    end
    return out
  end
  return yaml.encode { kind = "CertificateExpirationInfo", apiVersion = "output.kubeadm.k8s.io/v1alpha3",
    certificates = list(certs), certificateAuthorities = list(cas) }
end

-- Renewal targets: the rows of check-expiration minus the CAs, by name ("all": every one, sorted).
function M.targets(E, kdir, name)
  local certs = M.rows(E, kdir)
  if name == "all" then return certs end
  for _, r in ipairs(certs) do if r.name == name then return { r } end end
  local names = {}
  for _, r in ipairs(certs) do names[#names + 1] = r.name end
  error(("unknown certificate %q: valid are %s, all"):format(tostring(name), table.concat(names, ", ")), 0)
end

-- The rows of `rows` due for renewal: a certificate that exists, signed by a CA whose key is here,
-- with less than `within` seconds left at `now`. Returns due rows, and {name, residual} of the rest.
function M.due(E, rows, within, now)
  now = now or core.now()
  local due, not_due = {}, {}
  for _, row in ipairs(rows) do
    local cert = M.load(E, row)
    if cert and not M.external(E, row.ca) then
      local left = M.residual(cert:info().not_after, now)
      if left < within then due[#due + 1] = row else not_due[#not_due + 1] = { name = row.name, residual = left } end
    end
  end
  return due, not_due
end

-- Renews rows: same subject, SANs and usages, a new key, start - 5m .. start + certificateValidityPeriod.
-- Returns the lines to print and the names renewed. Every new certificate is signed before anything
-- is written.
function M.renew(E, rows)
  local lines, jobs = {}, {}
  for _, row in ipairs(rows) do
    local long = row.entry.long
    local cert, kc = M.load(E, row)
    if not cert then
      lines[#lines + 1] = "MISSING! " .. long
    elseif M.external(E, row.ca) then
      lines[#lines + 1] = ("Detected external %s, %s can't be renewed"):format(row.ca, long)
    else
      jobs[#jobs + 1] = { row = row, cert = cert, kc = kc }
      lines[#lines + 1] = long .. " renewed"
    end
  end
  if #jobs == 0 then return lines, {} end
  local algs = {}
  for i = 1, #jobs do algs[i] = E.alg end
  local keys, kerr = pki.generate_keys(algs)
  if not keys then error("generating private keys: " .. kerr, 0) end
  local cas = {}
  for i, j in ipairs(jobs) do
    local ca = cas[j.row.ca] or tree.load_ca(E, certlist.by_name[j.row.ca])
    cas[j.row.ca] = ca
    if ca.state ~= "ok" then error(("couldn't load the %s CA to renew %s"):format(j.row.ca, j.row.name), 0) end
    local info = j.cert:info()
    local spec = { cn = info.subject.cn, o = info.subject.o, dns = info.dns, ips = info.ips,
      ext_usages = info.ext_usages, not_before = E.start - 300, not_after = E.start + E.leaf_validity }
    local cert, err = pki.sign_cert(keys[i], spec, ca.cert, ca.key)
    if not cert then error(("failed to renew %s: %s"):format(j.row.name, err), 0) end
    j.new, j.key = cert, keys[i]
  end
  for _, j in ipairs(jobs) do
    if j.row.kind == "kubeconfig" then
      j.kc.user.user["client-certificate-data"] = encoding.base64_encode(assert(j.new:pem()))
      j.kc.user.user["client-key-data"] = encoding.base64_encode(assert(j.key:pem()))
      E.ctx:write(j.row.path, yaml.encode(j.kc.doc), tonumber("600", 8))
    else
      tree.write_pair(E, j.row.entry.base, j.key, j.new)
    end
  end
  local names = {}
  for _, j in ipairs(jobs) do names[#names + 1] = j.row.name end
  return lines, names
end

return M
