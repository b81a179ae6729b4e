-- The certificate tree under certificatesDir: decide per certificate whether to create, reuse or
-- refuse (kubeadm's CreatePKIAssets / writeCertificateFilesIfNotExist rules, reference §1.8), then
-- write. Planning reads and checks everything first and raises before any byte is written, so a
-- bad tree leaves the disk as it was; keys are written before their certificates, each atomically.
--
-- An environment E (see tree.env) carries the cluster configuration, the node name, the advertise
-- address (detected lazily), the key algorithm, the shared start time and file access (ctx's).
local pki = require "moonadm.pki"
local config = require "config"
local certlist = require "pki.certlist"
local nodeview = require "node.view"
local log = require "framework.log"

local M = {}

local BACKDATE <const> = 300

local function seconds(text, default)
  local s = text and config.duration_seconds(text)
  return math.floor(s or default)
end

-- The time every certificate of this run is based on (kubeadm's StartTimeUTC), shared by phases.
function M.start_time(ctx)
  ctx.data.pki_start = ctx.data.pki_start or os.time()
  return ctx.data.pki_start
end

-- At -v 1, once a run: which generator makes its RSA keys, and why (SECURITY.md, "Key generation").
-- A wrong MOONADM_RSA_GENERATOR is said here and is the error of the first key made.
local rsa_named = false
local function name_rsa_generator()
  if rsa_named then return end
  rsa_named = true
  local name, why = pki.rsa_generator()
  log.v(1, "[certs] RSA keys: %s", name and ("the %s generator (%s)"):format(name, why) or why)
end

-- The environment of a run context. opts.cert_dir overrides certificatesDir.
function M.env(ctx, opts)
  opts = opts or {}
  local cluster = ctx.cfg.cluster or {}
  local alg = config.encryption_algorithm(cluster)
  local E = {
    ctx = ctx,
    cluster = cluster,
    dir = opts.cert_dir and (opts.cert_dir:gsub("(.)/+$", "%1")) or config.cert_dir(cluster),
    node_name = opts.node_name or nodeview.name(ctx),
    alg = alg,
    start = M.start_time(ctx),
    leaf_validity = seconds(cluster.certificateValidityPeriod, 8760 * 3600),
    ca_validity = seconds(cluster.caCertificateValidityPeriod, 87600 * 3600),
    keys = ctx.data.pki_keys or {},
  }
  ctx.data.pki_keys = E.keys
  local supported = false
  for _, a in ipairs(pki.algorithms) do if a == alg then supported = true end end
  if not supported then
    error(("unsupported encryptionAlgorithm %q: use one of %s"):format(tostring(alg),
      table.concat(pki.algorithms, ", ")), 0)
  end
  if alg:match("^RSA") then name_rsa_generator() end
  return setmetatable(E, { __index = function(t, k)
    if k == "advertise_address" then
      local a = nodeview.advertise_address(ctx)
      rawset(t, k, a)
      return a
    end
  end })
end

function M.path(E, base, ext) return ("%s/%s.%s"):format(E.dir, base, ext) end

local function read(E, p) return E.ctx:read(p) end

-- A key or certificate parsed from its PEM once per run: every leaf re-reads its CA from disk, and
-- OpenSSL 3.0's decoders make each parse cost more than signing. Keyed by the exact text, so a
-- rewritten file is parsed again; what this run writes is known without a parse (remember).
local function parsed(E, kind)
  local memo = E.ctx and E.ctx.data
  local cache = memo and memo.pki_parsed or { key = {}, cert = {} }
  if memo then memo.pki_parsed = cache end
  return cache[kind]
end

local function parse(E, kind, pem, read_fn)
  local cache = parsed(E, kind)
  local v = cache[pem]
  if v then return v end
  local err
  v, err = read_fn(pem)
  if v then cache[pem] = v end
  return v, err
end

local function parse_key(E, pem) return parse(E, "key", pem, pki.read_key) end
local function parse_cert(E, pem) return parse(E, "cert", pem, pki.read_cert) end

local function remember(E, kind, pem, obj) parsed(E, kind)[pem] = obj end

-- Each file is replaced atomically, a key and its certificate are not: a run killed between the two
-- writes leaves the key alone. When the journal records that key as this engine's own write (same
-- content), it is such a leftover, and the pair is generated again; any other lone key is refused.
local function interrupted_pair(E, keyp, key)
  local j = E.ctx and E.ctx.journal
  if j and j:owns(keyp, key) then
    log.info("[certs] %s has no certificate: left by an interrupted run (journal), generating both again", keyp)
    return true
  end
  return false
end

local function iso(t) return os.date("!%Y-%m-%dT%H:%M:%SZ", t) end

-- kubeadm's CheckCertificatePeriodValidity: only ever a warning.
local function check_period(base, info)
  local now = os.time()
  if now < info.not_before then
    log.warn("could not validate bounds for certificate %s: the certificate is not valid yet: %s", base,
      iso(info.not_before))
  elseif now > info.not_after then
    log.warn("could not validate bounds for certificate %s: the certificate has expired: %s", base,
      iso(info.not_after))
  end
end

-- A CA's state: {state = "missing"} | {state = "ok", cert, key} | {state = "keyless", cert}.
function M.load_ca(E, c)
  local crtp, keyp = M.path(E, c.base, "crt"), M.path(E, c.base, "key")
  local crt, key = read(E, crtp), read(E, keyp)
  if not crt then
    if key and not interrupted_pair(E, keyp, key) then
      error(("found the CA key %s without its certificate %s: restore the certificate or remove the key")
        :format(keyp, crtp), 0)
    end
    return { state = "missing", entry = c }
  end
  local cert, err = parse_cert(E, crt)
  if not cert then error(("failure loading %s certificate %s: %s"):format(c.name, crtp, err), 0) end
  local info = cert:info()
  if not info.is_ca then error(("certificate %s is not a CA"):format(crtp), 0) end
  check_period(c.base, info)
  if not key then return { state = "keyless", cert = cert, info = info, entry = c } end
  local k, kerr = parse_key(E, key)
  if not k then error(("failure loading %s key %s: %s"):format(c.name, keyp, kerr), 0) end
  local ok, merr = k:matches(cert)
  if not ok then error(("the CA key %s does not match the certificate %s: %s"):format(keyp, crtp, merr), 0) end
  return { state = "ok", cert = cert, key = k, info = info, entry = c }
end

-- The expected SANs of a leaf: dns, ips (empty lists when it has none).
function M.sans(E, c)
  if not c.sans then return {}, {} end
  return c.sans(E)
end

-- Checks an existing leaf against its CA. Returns "missing" | "ok", or raises naming the file.
-- ca: a load_ca result, or {state = "planned"} for a CA this run is about to create.
function M.check_leaf(E, c, ca)
  local crtp, keyp = M.path(E, c.base, "crt"), M.path(E, c.base, "key")
  local crt, key = read(E, crtp), read(E, keyp)
  local ca_entry = certlist.by_name[c.ca]
  if not crt and not key then
    if ca.state == "keyless" then
      error(("external CA mode: %s is missing and the %s key %s is not there to sign it: provide %s and %s")
        :format(crtp, c.ca, M.path(E, ca_entry.base, "key"), crtp, keyp), 0)
    elseif ca.state == "missing" then
      error(("couldn't load CA certificate %s: %s does not exist"):format(c.ca, M.path(E, ca_entry.base, "crt")), 0)
    end
    return "missing"
  end
  if not crt then
    if interrupted_pair(E, keyp, key) then return "missing" end
    error(("found the key %s without its certificate %s"):format(keyp, crtp), 0)
  end
  if not key then error(("found the certificate %s without its key %s"):format(crtp, keyp), 0) end
  local k, kerr = parse_key(E, key)
  if not k then error(("failure loading key for %s: %s: %s"):format(c.name, keyp, kerr), 0) end
  local certs, cerr = pki.read_certs(crt)
  if not certs then error(("failure loading certificate for %s: %s: %s"):format(c.name, crtp, cerr), 0) end
  local leaf = certs[1]
  local ok, merr = leaf:matches(k)
  if not ok then error(("the key %s does not match the certificate %s: %s"):format(keyp, crtp, merr), 0) end
  if ca.state == "planned" or ca.state == "missing" then
    error(("certificate %s is not signed by corresponding CA: %s does not exist (yet); remove %s and %s " ..
      "to have them generated"):format(crtp, M.path(E, ca_entry.base, "crt"), crtp, keyp), 0)
  end
  local vok, verr = leaf:verify(ca.cert, { check_time = false, intermediates = { table.unpack(certs, 2) } })
  if not vok then
    error(("certificate %s is not signed by corresponding CA %s: %s"):format(crtp,
      M.path(E, ca_entry.base, "crt"), verr), 0)
  end
  local dns, ips = M.sans(E, c)
  for _, list in ipairs { dns, ips } do
    for _, name in ipairs(list) do
      local cov = leaf:covers(name)
      if not cov then
        error(("certificate %s is invalid: it does not cover the expected SAN %q (it has DNS names [%s] and " ..
          "IPs [%s]); remove %s and %s to have them generated"):format(crtp, name,
          table.concat(leaf:info().dns, " "), table.concat(leaf:info().ips, " "), crtp, keyp), 0)
      end
    end
  end
  check_period(c.base, leaf:info())
  return "ok"
end

local function check_sa(E)
  local keyp = M.path(E, "sa", "key")
  local key = read(E, keyp)
  if not key then return "missing" end
  local k, err = parse_key(E, key)
  if not k then error(("file %s existed but it could not be loaded properly: %s"):format(keyp, err), 0) end
  return "ok"
end

-- Plans the named entries (certlist rows, in order). Returns a list of actions
-- {entry, action = "create"|"reuse"|"keyless"|"external-etcd"}; raises on the first problem.
function M.plan(E, entries)
  local cas, out = {}, {}
  local ext_etcd = certlist.external_etcd(E.cluster)
  for _, c in ipairs(entries) do
    local act
    if ext_etcd and c.etcd then
      act = "external-etcd"
    elseif c.sa then
      act = check_sa(E) == "ok" and "reuse" or "create"
    elseif c.is_ca then
      local st = M.load_ca(E, c)
      if st.state == "missing" then
        act, cas[c.name] = "create", { state = "planned" }
      else
        act, cas[c.name] = st.state == "ok" and "reuse" or "keyless", st
      end
    else
      local ca = cas[c.ca] or M.load_ca(E, certlist.by_name[c.ca])
      cas[c.ca] = ca
      act = M.check_leaf(E, c, ca) == "ok" and "reuse" or "create"
      if act == "create" then M.sans(E, c) end -- fails now (e.g. no advertise address), not mid-write
    end
    out[#out + 1] = { entry = c, action = act }
  end
  return out
end

-- Generates, in parallel on all cores, the keys the planned actions will need (kept in E.keys).
function M.pregenerate(E, actions, prefix)
  local names, algs = {}, {}
  for _, a in ipairs(actions) do
    local id = (prefix or "") .. a.entry.name
    if a.action == "create" and not E.keys[id] then
      names[#names + 1], algs[#algs + 1] = id, E.alg
    end
  end
  if #algs == 0 then return end
  local keys, err = pki.generate_keys(algs)
  if not keys then error("generating private keys: " .. err, 0) end
  for i, id in ipairs(names) do E.keys[id] = keys[i] end
end

-- A fresh key: the pre-generated one for id, or a new one.
function M.take_key(E, id)
  local k = E.keys[id]
  if k then
    E.keys[id] = nil
    return k
  end
  local err
  k, err = pki.generate_key(E.alg)
  if not k then error("generating a private key: " .. err, 0) end
  return k
end

-- The certificate spec of a row.
function M.spec(E, c)
  if c.is_ca then
    local cn = certlist.cn(c, E)
    return { cn = cn, dns = { cn }, is_ca = true, not_before = E.start - BACKDATE, not_after = E.start + E.ca_validity }
  end
  local dns, ips = M.sans(E, c)
  return { cn = certlist.cn(c, E), o = certlist.org(c, E), dns = dns, ips = ips, ext_usages = c.ext,
    not_before = E.start - BACKDATE, not_after = E.start + E.leaf_validity }
end

-- Writes key then certificate (each atomically).
function M.write_pair(E, base, key, cert)
  local kpem, cpem = assert(key:pem()), assert(cert:pem())
  E.ctx:write(M.path(E, base, "key"), kpem, tonumber("600", 8))
  E.ctx:write(M.path(E, base, "crt"), cpem, tonumber("644", 8))
  remember(E, "key", kpem, key)
  remember(E, "cert", cpem, cert)
end

local function print_serving(c, spec)
  if c.ext and c.ext[1] == "server_auth" then
    log.info("[certs] %s serving cert is signed for DNS names [%s] and IPs [%s]", c.base,
      table.concat(spec.dns, " "), table.concat(spec.ips, " "))
  end
end

-- Carries out one planned action.
function M.apply(E, a)
  local c = a.entry
  if a.action == "external-etcd" then
    if E.ctx.data.pki_join then
      log.v(1, "[certs] External etcd mode: no %s certificate on a control-plane join", c.base)
    elseif c.is_ca then
      log.info("[certs] External etcd mode: Skipping %s certificate authority generation", c.base)
    else
      log.info("[certs] External etcd mode: Skipping %s certificate generation", c.base)
    end
  elseif c.sa then
    if a.action == "reuse" then
      log.info('[certs] Using the existing "sa" key')
      -- a run killed between sa.key and sa.pub leaves the key alone: derive the public key again
      local pubp = M.path(E, "sa", "pub")
      if not E.ctx:exists(pubp) then
        local k = assert(parse_key(E, assert(read(E, M.path(E, "sa", "key")))))
        log.info('[certs] Writing the missing "sa" public key from the existing key')
        E.ctx:write(pubp, assert(k:public_pem()), tonumber("600", 8))
      end
      return
    end
    log.info('[certs] Generating "sa" key and public key')
    local k = M.take_key(E, c.name)
    local pub = assert(k:public_pem())
    E.ctx:write(M.path(E, "sa", "key"), assert(k:pem()), tonumber("600", 8))
    E.ctx:write(M.path(E, "sa", "pub"), pub, tonumber("600", 8))
  elseif c.is_ca then
    if a.action == "reuse" and E.ctx.data.pki_join then
      -- a control-plane join (kubeadm's CreatePKIAssets) says this only at -v 1
      log.v(1, "[certs] Using the existing CA certificate %q and key %q", M.path(E, c.base, "crt"), M.path(E, c.base, "key"))
    elseif a.action == "reuse" then
      log.info("[certs] Using existing %s certificate authority", c.base)
    elseif a.action == "keyless" then
      log.info("[certs] Using existing %s keyless certificate authority", c.base)
    else
      log.info('[certs] Generating "%s" certificate and key', c.base)
      local k = M.take_key(E, c.name)
      local cert, err = pki.create_ca(k, M.spec(E, c))
      if not cert then error(("failure while generating %s CA certificate and key: %s"):format(c.name, err), 0) end
      M.write_pair(E, c.base, k, cert)
    end
  elseif a.action == "reuse" then
    log.info("[certs] Using existing %s certificate and key on disk", c.base)
  else
    local ca = M.load_ca(E, certlist.by_name[c.ca])
    if ca.state ~= "ok" then
      error(("couldn't load CA certificate and key %s from %s"):format(c.ca, E.dir), 0)
    end
    log.info('[certs] Generating "%s" certificate and key', c.base)
    local spec = M.spec(E, c)
    local k = M.take_key(E, c.name)
    local cert, err = pki.sign_cert(k, spec, ca.cert, ca.key)
    if not cert then error(("failure while creating %s key and certificate: %s"):format(c.name, err), 0) end
    M.write_pair(E, c.base, k, cert)
    print_serving(c, spec)
  end
end

-- Plans and applies a list of rows: the whole of `certs all` outside the phase machinery.
function M.create(E, entries)
  local actions = M.plan(E, entries)
  M.pregenerate(E, actions)
  for _, a in ipairs(actions) do M.apply(E, a) end
  return actions
end

-- ---- entry points: what init's certs phase, a control-plane join and upgrade call ----

-- Plans the certificates named (certlist names: "ca", "apiserver", ..., "sa") and generates the
-- keys they need at once, in parallel, before any is written: a bad tree fails here, writing nothing.
function M.prepare(ctx, names)
  local E = M.env(ctx)
  log.info('[certs] Using certificateDir folder "%s"', E.dir)
  local entries = {}
  for _, name in ipairs(names) do entries[#entries + 1] = certlist.by_name[name] or error("no certificate " .. name, 0) end
  M.pregenerate(E, M.plan(E, entries))
end

-- Re-checks one certificate on disk and writes what it lacks.
function M.write(ctx, name)
  local E = M.env(ctx)
  M.apply(E, M.plan(E, { certlist.by_name[name] or error("no certificate " .. name, 0) })[1])
end

return M
