-- SECURITY.md's promises that no other spec held (issue 46): where TLS verification is off and what
-- those connections carry, token and file discovery's trust steps, the log's redaction, the
-- kubeadm-certs owner token, where super-admin.conf lives, the journal's contents, the body caps of
-- the API and etcd clients, the fuzz targets it names, and its own table of which test holds each
-- promise. Transport doubles stand in for servers where what matters is what moonadm asks and trusts.
local h = require "helpers"
local pki = require "moonadm.pki"
local encoding = require "moonadm.encoding"
local log = require "framework.log"

local TOKEN_ID, TOKEN_SECRET = "abcdef", "0123456789abcdef"
local TOKEN = TOKEN_ID .. "." .. TOKEN_SECRET
local CERT_KEY = ("fedcba9876543210"):rep(4)
local MiB = 1024 * 1024

-- Runs f with the log captured; returns what it logged (text mode, or JSON events with json = true).
local function logged(f, json)
  local seen = {}
  local sink = { write = function(self, ...) for _, s in ipairs { ... } do seen[#seen + 1] = tostring(s) end return self end,
                 flush = function() end }
  local saved = { log.verbosity, log.out, log.err, log.json }
  log.verbosity, log.out, log.err, log.json = 10, sink, sink, json or false
  local ok, err = pcall(f)
  log.verbosity, log.out, log.err, log.json = table.unpack(saved)
  if not ok then error(err, 0) end
  return table.concat(seen)
end

-- Replaces field `name` of module table `mod` with `fn` while f runs.
local function stubbed(mod, name, fn, f)
  local real = mod[name]
  mod[name] = fn
  local ok, err = pcall(f, real)
  mod[name] = real
  if not ok then error(err, 0) end
end

-- The Lua table constructor around position `at` of text: `{ ... }`, braces balanced.
local function constructor_at(text, at)
  local depth, i = 0, at
  while i > 0 do
    local ch = text:sub(i, i)
    if ch == "}" then depth = depth + 1 elseif ch == "{" then
      if depth == 0 then break end
      depth = depth - 1
    end
    i = i - 1
  end
  local j, d = i, 0
  repeat
    local ch = text:sub(j, j)
    if ch == "{" then d = d + 1 elseif ch == "}" then d = d - 1 end
    j = j + 1
  until d == 0 or j > #text
  return text:sub(i, j - 1)
end

describe("TLS verification", function()
  it("is turned off only by kubeadm's three probes, none of which carries a credential", function()
    local p = io.popen("cd " .. h.q(h.top .. "/scripts") .. " && grep -rl --include='*.lua' 'insecure *= *true' .")
    local files = {}
    for f in p:lines() do files[#files + 1] = f:sub(3) end
    p:close()
    table.sort(files)
    -- SECURITY.md's table, "TLS verification": wait-control-plane, cluster-info's first fetch, upgrade health
    assert.same({ "cluster/discovery.lua", "cluster/wait.lua", "upgrade/control_plane.lua" }, files)
    for _, f in ipairs(files) do
      local text = h.read(h.top .. "/scripts/" .. f)
      for at in text:gmatch("()insecure *= *true") do
        local ctor = constructor_at(text, at)
        for _, cred in ipairs { "token", "cert_pem", "key_pem", "cert_file", "key_file" } do
          assert.is_nil(ctor:find("%f[%w_]" .. cred .. "%s*="), f .. ": an unverified connection with " .. cred .. ": " .. ctor)
        end
      end
    end
  end)

  it("a kubeconfig's own insecure-skip-tls-verify is honoured as client-go honours it; absent, the server is verified", function()
    local kubeconfig = require "kube.kubeconfig"
    local text = "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n" ..
      "clusters:\n- name: c\n  cluster:\n    server: https://192.0.2.131:6443\n%s"
    assert.is_nil(assert(kubeconfig.parse(text:format(""))).insecure)
    assert.is_true(assert(kubeconfig.parse(text:format("    insecure-skip-tls-verify: true\n"))).insecure)
  end)

  it("wait-control-plane: one unverified handle per component, no credential, each closed after the wait", function()
    local api = require "moonadm.api"
    local wait = require "cluster.wait"
    local made = {}
    stubbed(api, "new", function(o)
      local hd = { opts = o }
      function hd.request() return { status = 200, body = "", headers = {} } end
      function hd.close() hd.closed = true end
      made[#made + 1] = hd
      return hd
    end, function()
      logged(function()
        wait.components_healthy({
          { name = "kube-apiserver", url = "https://192.0.2.131:6443/livez", server = "https://192.0.2.131:6443", path = "/livez" },
          { name = "kube-scheduler", url = "https://127.0.0.1:10259/livez", server = "https://127.0.0.1:10259", path = "/livez" },
        }, 5)
      end)
    end)
    assert.equal(2, #made)
    for _, hd in ipairs(made) do
      assert.is_true(hd.opts.insecure)
      assert.is_nil(hd.opts.token or hd.opts.cert_pem or hd.opts.key_pem)
      assert.is_true(hd.closed)
    end
  end)
end)

describe("token discovery", function()
  local client_mod = require "kube.client"
  local discovery = require "cluster.discovery"
  local tokens = require "cluster.tokens"
  local cakey = assert(pki.generate_key("ECDSA-P256"))
  local ca = assert(pki.create_ca(cakey, { cn = "kubernetes", not_before = os.time() - 300, not_after = os.time() + 3600 }))
  local content = tokens.cluster_info("https://192.0.2.131:6443", ca:pem()).data.kubeconfig

  -- Runs discovery.token against clients that answer cluster-info signed with `secret`; returns
  -- the result (or nil, the error), the clients made, and the log.
  local function discover(bt, secret, second_content)
    local made, result, err = {}, nil, nil
    local jws = pki.jws_sign(content, TOKEN_ID, secret or TOKEN_SECRET)
    local out = logged(function()
      stubbed(client_mod, "new", function(o)
        local c = { opts = o }
        local n = #made + 1
        function c.get()
          return { data = { kubeconfig = n > 1 and second_content or content, ["jws-kubeconfig-" .. TOKEN_ID] = jws } }
        end
        function c.close() c.closed = true end
        made[n] = c
        return c
      end, function()
        local ok, r = pcall(discovery.token, {}, { bootstrapToken = bt }, 5)
        if ok then result = r else err = r end
      end)
    end)
    return result, err, made, out
  end
  local function bt(extra)
    local t = { token = TOKEN, apiServerEndpoint = "192.0.2.131:6443" }
    for k, v in pairs(extra or {}) do t[k] = v end
    return t
  end

  it("fetches anonymously and unverified first, trusts after the JWS and the pin, then fetches again verified by that CA", function()
    local r, err, made = discover(bt { caCertHashes = { ca:pin() } })
    assert.is_nil(err)
    assert.equal(2, #made)
    local first, second = made[1].opts, made[2].opts
    assert.is_true(first.insecure)
    assert.is_nil(first.token or first.cert_pem or first.key_pem, "the anonymous fetch sent a credential")
    assert.equal(MiB, first.max_body)
    assert.is_nil(second.insecure)
    assert.equal(ca:pem(), second.ca_pem)
    assert.equal(MiB, second.max_body)
    assert.is_true(made[1].closed and made[2].closed)
    assert.equal(ca:pem(), r.ca_pem)
  end)

  it("refuses a cluster-info whose JWS does not verify, or whose CA is not pinned, before any verified fetch", function()
    local _, err, made = discover(bt { caCertHashes = { ca:pin() } }, "0123456789abcdee")
    assert.matches("failed to verify JWS signature", err, 1, true)
    assert.equal(1, #made)
    _, err, made = discover(bt { caCertHashes = { "sha256:" .. ("0"):rep(64) } })
    assert.matches("none of the public keys", err, 1, true)
    assert.equal(1, #made)
    _, err, made = discover(bt { caCertHashes = { ca:pin() } }, nil, content .. "# changed\n")
    assert.matches("changed between the insecure and the secure fetch", err, 1, true)
  end)

  it("without a pin: refused unless the unsafe flag is given, and then it warns naming the flag", function()
    local _, err, made = discover(bt())
    assert.matches("without --discovery-token-ca-cert-hash can be unsafe", err, 1, true)
    assert.equal(0, #made)
    local r, _, made2, out = discover(bt { unsafeSkipCAVerification = true })
    assert.equal(ca:pem(), r.ca_pem)
    assert.equal(ca:pem(), made2[2].opts.ca_pem) -- the second fetch is still verified, by the CA it got
    assert.matches("[WARNING] [discovery] the cluster CA is NOT verified (--discovery-token-unsafe-skip-ca-verification)", out, 1, true)
  end)
end)

describe("file discovery", function()
  local client_mod = require "kube.client"
  local discovery = require "cluster.discovery"
  local CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
  local KC = ("apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n" ..
    "clusters:\n- name: c\n  cluster:\n    server: https://192.0.2.131:6443\n    certificate-authority-data: %s\n" ..
    "    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user: {}\n"):format(encoding.base64_encode(CA_PEM))

  local function file(loc)
    local made, result, err = {}, nil, nil
    logged(function()
      stubbed(client_mod, "new", function(o)
        local c = { opts = o }
        function c.raw(_, method, path)
          c.asked = method .. " " .. path
          return { status = 200, body = KC, headers = {} }
        end
        function c.close() c.closed = true end
        made[#made + 1] = c
        return c
      end, function()
        local ok, r = pcall(discovery.file, {}, { file = { kubeConfigPath = loc }, tlsBootstrapToken = TOKEN })
        if ok then result = r else err = r end
      end)
    end)
    return result, err, made
  end

  it("https://: fetched with TLS verification on against the system trust store, capped at 1 MiB", function()
    local r, err, made = file("https://discovery.example.test/cluster-info.yaml")
    assert.is_nil(err)
    assert.equal(1, #made)
    local o = made[1].opts
    assert.equal("https://discovery.example.test", o.server)
    assert.is_nil(o.insecure)
    assert.is_nil(o.ca_pem or o.ca_file) -- no CA of its own: libcurl's system trust store
    assert.equal(MiB, o.max_body)
    assert.equal("GET /cluster-info.yaml", made[1].asked)
    -- the file's CA then verifies the cluster; its insecure-skip-tls-verify is not carried on
    assert.equal(CA_PEM, r.ca_pem)
    assert.is_nil(r.insecure)
  end)

  it("http://: read as a local path, never fetched", function()
    local _, err, made = file("http://127.0.0.1:1/cluster-info.yaml")
    assert.matches("cannot read the discovery file", err, 1, true)
    assert.equal(0, #made)
  end)
end)

describe("secrets in the log", function()
  local key = assert(pki.generate_key("ECDSA-P256"))

  it("log.* passes every message through the engine's redaction, in text and JSON", function()
    for _, json in ipairs { false, true } do
      local out = logged(function()
        log.info("[bootstrap-token] Using token: %s", TOKEN)
        log.warn("join with --token=%s", TOKEN)
        log.v(5, "key:\n%s", key:pem())
        log.line("info", "Authorization: Bearer s3cr3t-bearer")
        log.error("failed for " .. TOKEN)
      end, json)
      assert.not_matches(TOKEN_SECRET, out, 1, true)
      assert.not_matches("PRIVATE KEY-----", out, 1, true)
      assert.not_matches("s3cr3t-bearer", out, 1, true)
      assert.matches("Using token: abcdef.<redacted>", out, 1, true)
    end
  end)
end)

describe("upload-certs", function()
  local certsupload = require "cluster.certs_upload"
  local tokens = require "cluster.tokens"

  local function run(flags)
    local dir = h.tmpdir()
    h.write(dir .. "/pki/ca.key", "the CA key")
    local sent = {}
    local fake = {
      get = function() return nil, { code = 404 } end,
      list = function() return { items = {} } end,
      create = function(_, obj)
        sent[#sent + 1] = obj
        local live = { apiVersion = obj.apiVersion, kind = obj.kind, data = obj.data, type = obj.type,
          metadata = { name = obj.metadata.name, namespace = obj.metadata.namespace, uid = "uid-of-" .. obj.metadata.name } }
        return live
      end,
      create_or_update = function(_, obj)
        sent[#sent + 1] = obj
        return obj, "created"
      end,
    }
    local ctx = { data = { client = fake }, flags = flags, cfg = { init = { certificateKey = CERT_KEY },
      cluster = { certificatesDir = dir .. "/pki" } } }
    local ok, out = pcall(logged, function() certsupload.run(ctx) end)
    h.rmrf(dir)
    assert(ok, out)
    return sent, out
  end

  it("seals the keys into kubeadm-certs, owned by a 2-hour token with no usages; prints the key unless told not to", function()
    local t0 = os.time()
    local sent, out = run { ["upload-certs"] = true }
    local owner, certs
    for _, o in ipairs(sent) do
      if o.type == tokens.TYPE then owner = o elseif o.metadata.name == "kubeadm-certs" then certs = o end
    end
    local t = assert(tokens.from_secret(owner))
    assert.same({}, t.usages) -- no authentication, no signing: it only bounds the Secret's life
    assert.is_true(math.abs(t.expires - (t0 + 7200)) <= 5, "expires in " .. (t.expires - t0) .. " s")
    local ref = certs.metadata.ownerReferences[1]
    assert.same({ "Secret", owner.metadata.name, "uid-of-" .. owner.metadata.name },
      { ref.kind, ref.name, ref.uid })
    local sealed = encoding.base64_decode(certs.data["ca.key"])
    assert.is_nil(sealed:find("the CA key", 1, true))
    assert.equal("the CA key", pki.open(CERT_KEY, sealed)) -- AES-256-GCM under the certificate key
    assert.matches("\n" .. CERT_KEY .. "\n", out, 1, true)
    local _, quiet = run { ["upload-certs"] = true, ["skip-certificate-key-print"] = true }
    assert.not_matches(CERT_KEY, quiet, 1, true)
  end)
end)

describe("credentials", function()
  it("super-admin.conf is the first control plane's: a joining control plane writes admin.conf, not it", function()
    local kubeconfigs = require "pki.kubeconfigs"
    local control_plane = require "flows.join.control_plane"
    local prepared, written = {}, {}
    stubbed(kubeconfigs, "prepare", function(_, names) prepared = names end, function()
      stubbed(kubeconfigs, "write", function(_, name) written[#written + 1] = name end, function()
        control_plane.kubeconfigs({})
      end)
    end)
    assert.same({ "admin", "controller-manager", "scheduler" }, prepared)
    assert.same(prepared, written)
  end)

  it("admin.conf's group is bound to cluster-admin by a binding of its own (deleting it revokes admin.conf)", function()
    local b = require("cluster.admin").binding()
    assert.equal("ClusterRoleBinding", b.kind)
    assert.equal("kubeadm:cluster-admins", b.metadata.name)
    assert.equal("cluster-admin", b.roleRef.name)
    assert.same({ { apiGroup = "rbac.authorization.k8s.io", kind = "Group", name = "kubeadm:cluster-admins" } }, b.subjects)
  end)

  it("the journal records digests of a config carrying a token and a certificate key, never them", function()
    local dir = h.tmpdir()
    h.write(dir .. "/c.yaml", ([[
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: %s
certificateKey: %s
nodeRegistration:
  name: node1
localAPIEndpoint:
  advertiseAddress: 192.0.2.131
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
encryptionAlgorithm: ECDSA-P256
]]):format(TOKEN, CERT_KEY))
    for _, phase in ipairs { "certs", "kubeconfig" } do
      local code, out, err = h.moonadm { "init", "phase", phase, "all", "--config", dir .. "/c.yaml", "--root", dir .. "/root" }
      assert.equal(0, code, out .. err)
    end
    local p = io.popen("find " .. h.q(dir .. "/root/var/lib/moonadm") .. " -type f")
    local n = 0
    for path in p:lines() do
      local text = h.read(path)
      n = n + 1
      for _, secret in ipairs { TOKEN_SECRET, encoding.base64_encode(TOKEN_SECRET), CERT_KEY } do
        assert.is_nil(text:find(secret, 1, true), path .. " holds a secret")
      end
    end
    p:close()
    h.rmrf(dir)
    assert.is_true(n >= 1, "no journal written")
  end)
end)

describe("body caps", function()
  -- a canned plain-HTTP server answering every request with one body of n bytes
  local function serving(n, f)
    h.canned_http(("{ { status = 200, body = ('x'):rep(%d) } }"):format(n), f)
  end

  it("the API client stops at 64 MiB by default, naming the cap", function()
    local client = require "kube.client"
    serving(64 * MiB + 1, function(url)
      local c = assert(client.new { server = url, timeout = 30 })
      local obj, err = c:get { apiVersion = "v1", kind = "ConfigMap", namespace = "x", name = "y" }
      c:close()
      assert.is_nil(obj)
      assert.equal("ResponseTooLarge", err.reason)
      assert.matches("larger than the limit of 67108864 bytes", tostring(err), 1, true)
    end)
  end)

  it("an etcd client stops at 4 MiB by default, naming the cap", function()
    local members = require "etcd.members"
    serving(4 * MiB + 1, function(url)
      local m = assert(members.new { endpoints = { url }, timeout = 2 })
      local list, err = m:list()
      m:close()
      assert.is_nil(list)
      assert.matches("larger than the limit of 4194304 bytes", tostring(err), 1, true)
    end)
  end)
end)

describe("SECURITY.md", function()
  local text = h.read(h.top .. "/SECURITY.md")

  it("every fuzz target it names is a libFuzzer harness in tests/fuzz", function()
    local fuzz = text:match("%*%*Fuzzing%*%*(.-)\n\n")
    local n = 0
    for name in fuzz:gmatch("`(fuzz_[%w_]+)`") do
      local src = h.read(h.top .. "/tests/fuzz/" .. name .. ".c")
      assert.truthy(src, name)
      -- a C harness, or fuzz_lua.h's harness running tests/fuzz/lua/<FUZZ_LUA>.lua
      local lua = src:match('#define FUZZ_LUA "([%w_]+)"')
      assert.truthy(src:find("LLVMFuzzerTestOneInput", 1, true) or
        (lua and src:find('#include "fuzz_lua.h"', 1, true) and h.read(h.top .. "/tests/fuzz/lua/" .. lua .. ".lua")), name)
      n = n + 1
    end
    assert.is_true(n >= 10, n)
  end)

  it("its table of which test holds each promise names files that exist and tests they hold", function()
    local section = assert(text:match("\n## Which test holds each promise\n(.*)$"), "no such section")
    local rows = 0
    for row in section:gmatch("\n(|[^\n]+|)") do
      local promise, where = row:match("^| ([^|]-) | (.-) |$")
      if promise and promise ~= "promise" and not promise:match("^%-") then
        rows = rows + 1
        local files = {}
        for path in where:gmatch("`(tests/[%w_/%.%-]+)`") do
          local f = h.read(h.top .. "/" .. path)
          assert.truthy(f, row .. ": no file " .. path)
          files[#files + 1] = f
        end
        assert.is_true(#files > 0, "a row without a test file: " .. row)
        for name in where:gmatch('"([^"]+)"') do
          local found = false
          for _, f in ipairs(files) do found = found or f:find(name, 1, true) ~= nil end
          assert.is_true(found, row .. ": no test named " .. name)
        end
      end
    end
    assert.is_true(rows >= 40, rows)
  end)
end)
