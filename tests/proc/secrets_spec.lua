-- Secrets never reach output or logs; key files are 0600 from their first byte; temp dirs are 0700.
-- Offline commands (phases on a temp root, init --dry-run, token/certs helpers) at -v 10 and with
-- --output json; the lab's runs are checked in tests/e2e/crash_spec.lua.
local h = require "helpers"
local api = require "moonadm.api"
local encoding = require "moonadm.encoding"

local TOKEN_ID, TOKEN_SECRET = "abcdef", "0123456789abcdef"
local CERT_KEY = ("fedcba9876543210"):rep(4)

-- Every secret form to look for: the PEM, base64 of the PEM (kubeconfig *-data), each base64
-- body line of the PEM (the DER), and for a token/key the raw string and its base64.
local function forms_of_pem(pem)
  local f = { pem, encoding.base64_encode(pem) }
  for line in pem:gmatch("[^\n]+") do
    if not line:match("^%-%-%-%-%-") and #line >= 40 then f[#f + 1] = line end
  end
  return f
end

local function private_keys(root)
  local out = {}
  local p = io.popen("find " .. h.q(root) .. " -type f \\( -name '*.key' -o -name '*.conf' \\)")
  for path in p:lines() do
    local text = h.read(path)
    if path:match("%.key$") then
      out[path] = forms_of_pem(text)
    else
      local b64 = text:match("client%-key%-data: (%S+)")
      if b64 then out[path] = { b64, encoding.base64_decode(b64) } end
    end
  end
  p:close()
  return out
end

local function assert_no(text, needle, what)
  local at = text:find(needle, 1, true)
  assert(not at, ("%s leaked: %q"):format(what, text:sub(math.max(1, (at or 1) - 60), (at or 1) + 80)))
end

local function assert_no_keys(text, keys)
  for path, forms in pairs(keys) do
    for _, f in ipairs(forms) do assert_no(text, f, "private key of " .. path) end
  end
end

local function assert_no_token(text)
  assert_no(text, TOKEN_SECRET, "the token secret")
  assert_no(text, encoding.base64_encode(TOKEN_SECRET), "the token secret (base64, Secret data)")
  assert_no(text, CERT_KEY, "the certificate key")
end

local CONFIG = ([[
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: %s.%s
certificateKey: %s
nodeRegistration:
  name: node1
localAPIEndpoint:
  advertiseAddress: 192.0.2.131
]]):format(TOKEN_ID, TOKEN_SECRET, CERT_KEY)

describe("secrets in output", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmrf(dir) end)

  it("certs and kubeconfig phases at -v 10 (text and JSON logs) print no private key", function()
    local root = dir .. "/root"
    local outs = {}
    for _, fmt in ipairs { "text", "json" } do
      for _, args in ipairs {
        { "init", "phase", "certs", "all" }, { "init", "phase", "kubeconfig", "all" },
        { "init", "phase", "etcd", "local" }, { "init", "phase", "control-plane", "all" },
      } do
        local a = { table.unpack(args) }
        for _, x in ipairs { "--root", root, "-v", "10", "--node-name", "node1", "--apiserver-advertise-address", "192.0.2.131" } do a[#a + 1] = x end
        if fmt == "json" then a[#a + 1] = "--log-format=json" end
        local code, out, err = h.moonadm(a)
        outs[#outs + 1] = out .. err
        if fmt == "text" then assert.equal(0, code, table.concat(a, " ") .. "\n" .. out .. err) end
      end
    end
    local keys = private_keys(root)
    assert.is_true(next(keys) ~= nil)
    local n = 0
    for _ in pairs(keys) do n = n + 1 end
    assert.is_true(n >= 14, "keys and kubeconfigs found: " .. n)
    for _, text in ipairs(outs) do assert_no_keys(text, keys) end
  end)

  it("init --dry-run -v 10 prints no token, certificate key, Secret data or key; with the skip flags, none at all", function()
    h.write(dir .. "/c.yaml", CONFIG)
    local code, out, err = h.moonadm { "init", "--config", dir .. "/c.yaml", "--dry-run", "--upload-certs",
      "--skip-token-print", "--skip-certificate-key-print", "--root", dir .. "/root", "-v", "10" }
    assert.equal(0, code, out .. err)
    assert_no_token(out .. err)
    assert.not_matches("PRIVATE KEY", out .. err)
    assert.not_matches("LS0tLS1CRUdJTi", out .. err) -- base64 of "-----BEGIN"
    local dry = (out .. err):match("Writing files to (%S+)")
    assert.truthy(dry)
    assert_no_keys(out .. err, private_keys(dry))
    -- without the skip flags, the token and the key appear only where kubeadm prints them
    code, out, err = h.moonadm { "init", "--config", dir .. "/c.yaml", "--dry-run", "--upload-certs",
      "--root", dir .. "/root", "-v", "10" }
    assert.equal(0, code, out .. err)
    assert_no_token(err)
    assert.matches("[bootstrap-token] Using token: " .. TOKEN_ID .. ".<redacted>", out, 1, true)
    assert.matches("--token " .. TOKEN_ID .. "." .. TOKEN_SECRET, out, 1, true) -- printed on purpose
    assert.matches("\n" .. CERT_KEY .. "\n", out, 1, true)
    for line in out:gmatch("[^\n]+") do
      if line:find(TOKEN_SECRET, 1, true) then
        assert.matches("%-%-token " .. TOKEN_ID .. "%." .. TOKEN_SECRET, line)
      end
      if line:find(CERT_KEY, 1, true) then
        assert.is_true(line == CERT_KEY or line:match("%-%-certificate%-key " .. CERT_KEY) ~= nil, line)
      end
    end
    os.execute("rm -rf " .. h.q(dry))
  end)

  it("the dry-run dir is 0700 with an unguessable name (regression: it was /tmp/moonadm-dryrun-PID-TIME, 0755)", function()
    h.write(dir .. "/c.yaml", CONFIG)
    local code, out, err = h.moonadm { "init", "phase", "certs", "ca", "--config", dir .. "/c.yaml", "--dry-run",
      "--root", dir .. "/root" }
    assert.equal(0, code, out .. err)
    local dry = (out .. err):match("Writing files to (%S+)")
    assert.matches("/moonadm%-dryrun%-%x%x%x%x%x%x%x%x%x%x%x%x%x%x%x%x$", dry)
    local p = io.popen("stat -c %a " .. h.q(dry))
    assert.equal("700", p:read("l"))
    p:close()
    os.execute("rm -rf " .. h.q(dry))
  end)

  it("token generate and certs certificate-key print their secret once, on stdout only", function()
    for _, cmd in ipairs { { "token", "generate" }, { "certs", "certificate-key" } } do
      local a = { table.unpack(cmd) }
      a[#a + 1] = "-v"; a[#a + 1] = "10"
      local code, out, err = h.moonadm(a)
      assert.equal(0, code, out .. err)
      local secret = out:match("^%s*(%S+)%s*$")
      assert.truthy(secret, out)
      assert_no(err, secret, table.concat(cmd, " ") .. "'s secret in its log")
      if cmd[1] == "token" then assert_no(err, secret:match("%.(%w+)$"), "token secret in the log") end
    end
  end)

  it("certs check-expiration and certs renew at -v 10, -o json and yaml, print no private key", function()
    local root = dir .. "/root"
    assert.equal(0, (h.moonadm { "init", "phase", "certs", "all", "--root", root }))
    assert.equal(0, (h.moonadm { "init", "phase", "kubeconfig", "all", "--root", root, "--apiserver-advertise-address", "192.0.2.131" }))
    local texts = {}
    for _, o in ipairs { "json", "yaml", "text" } do
      local code, out, err = h.moonadm { "certs", "check-expiration", "--root", root, "-o", o, "-v", "10" }
      assert.equal(0, code, out .. err)
      texts[#texts + 1] = out .. err
    end
    local code, out, err = h.moonadm { "certs", "renew", "all", "--root", root, "-v", "10" }
    assert.equal(0, code, out .. err)
    texts[#texts + 1] = out .. err
    local keys = private_keys(root) -- the renewed keys and kubeconfigs
    for _, t in ipairs(texts) do assert_no_keys(t, keys) end
  end)

  it("token list -o json against no cluster names no secret in its error", function()
    h.write(dir .. "/c.yaml", CONFIG)
    local code, out, err = h.moonadm { "token", "create", "abcdef.0123456789abcdef", "--kubeconfig", dir .. "/none.conf",
      "-v", "10", "-o", "json" }
    assert.not_equal(0, code)
    assert_no_token(err)
  end)
end)

describe("key files and temp files", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmrf(dir) end)

  local hooks = h.hooks
  local have_hooks = io.open(hooks, "r")
  if have_hooks then have_hooks:close() end

  it("every key, kubeconfig, journal file and static Pod manifest is 0600 before its first byte (the hooks' write log)", function()
    if not have_hooks then
      pending("bin/moonadm-hooks is missing (make test-hooks)")
      return
    end
    local logf = dir .. "/hook.log"
    for _, args in ipairs { { "certs", "all" }, { "kubeconfig", "all" }, { "etcd", "local" }, { "control-plane", "all" },
        { "kubelet-start" } } do
      local cmd = { "env", "MOONADM_HOOK_LOG=" .. logf, hooks, "init", "phase" }
      for _, a in ipairs(args) do cmd[#cmd + 1] = a end
      for _, x in ipairs { "--root", dir .. "/root", "--node-name", "node1", "--apiserver-advertise-address", "192.0.2.131" } do cmd[#cmd + 1] = x end
      local parts = {}
      for _, a in ipairs(cmd) do parts[#parts + 1] = h.q(a) end
      os.execute(table.concat(parts, " ") .. " >/dev/null 2>&1")
    end
    local modes, checked = {}, 0
    for line in io.lines(logf) do
      local mode, path = line:match("^mode (%d+) (.+)$")
      if mode then modes[path] = mode end
    end
    for path, mode in pairs(modes) do
      -- static Pod manifests carry no secret, but decide what runs as root
      if path:match("%.key$") or path:match("/etc/kubernetes/[^/]+%.conf$") or path:match("/journal/")
        or path:match("/etc/kubernetes/manifests/[^/]+%.yaml$") then
        assert.equal("0600", mode, path)
        checked = checked + 1
      end
      -- the final file has the mode its temp file was created with: never chmod-ed afterwards
      local p = io.popen("stat -c %04a " .. h.q(path) .. " 2>/dev/null")
      local final = p:read("l")
      p:close()
      if final then assert.equal(mode, final, path) end
    end
    assert.is_true(checked >= 20, "keys, kubeconfigs and manifests checked: " .. checked)
  end)

  it("temp files of an atomic write live in the target's own dir, and none is left behind", function()
    local code, out, err = h.moonadm { "init", "phase", "certs", "all", "--root", dir .. "/root" }
    assert.equal(0, code, out .. err)
    local p = io.popen("find " .. h.q(dir .. "/root") .. " -name '.*.tmp-*'")
    assert.equal("", p:read("a"))
    p:close()
    local q = io.popen("stat -c %a " .. h.q(dir .. "/root/etc/kubernetes/pki") .. " " .. h.q(dir .. "/root/var/lib/moonadm/journal"))
    local pki_mode, journal_mode = q:read("l"), q:read("l")
    q:close()
    assert.equal("755", pki_mode) -- kubeadm's; the keys inside are 0600 from the first byte
    assert.equal("700", journal_mode)
  end)
end)

-- Issue 18 #4: `token list -v 10` (and `-o json`) logged every token-secret in base64: the items of
-- a SecretList carry no kind, so client.scrub missed them. The scrubber now covers list items
-- (from the list's kind), every nested Secret (a watch event, Status details, an SSA answer) and
-- any kind-less object of a Secret's shape.
describe("client.scrub", function()
  local client = require "kube.client"
  local json = require "kube.json"
  local B64 = encoding.base64_encode(TOKEN_SECRET)
  local function secret(kind)
    return { apiVersion = kind and "v1" or nil, kind = kind, type = "bootstrap.kubernetes.io/token",
      metadata = { name = "bootstrap-token-abcdef", namespace = "kube-system" },
      data = { ["token-id"] = encoding.base64_encode(TOKEN_ID), ["token-secret"] = B64 },
      stringData = { ["token-secret"] = TOKEN_SECRET } }
  end
  local function text_of(v) return json.encode(client.scrub(v)) end

  for name, body in pairs {
    ["a SecretList's kind-less items"] = { kind = "SecretList", apiVersion = "v1", metadata = {}, items = { secret(), secret() } },
    ["a Secret"] = secret("Secret"),
    ["a watch event's object"] = { type = "ADDED", object = secret("Secret") },
    ["a Secret inside Status details"] = { kind = "Status", details = { causes = { { object = secret("Secret") } } } },
    ["a kind-less object of a Secret's shape"] = { object = secret() },
    ["a generic List's items"] = { kind = "List", items = { secret("Secret") } },
    ["a Secret whose data is not a mapping"] = { kind = "Secret", data = B64, stringData = TOKEN_SECRET },
    ["a token-secret field anywhere"] = { spec = { ["token-secret"] = TOKEN_SECRET } },
    ["a Secret nested 200 deep"] = (function()
      local v = secret("Secret")
      for _ = 1, 200 do v = { x = v } end
      return v
    end)(),
  } do
    it("masks " .. name, function()
      local text = text_of(body)
      assert_no_token(text)
      assert.not_matches(B64, text, 1, true)
    end)
  end

  it("keeps what is not secret: names, types, ConfigMap data", function()
    local text = text_of { kind = "SecretList", items = { secret() } }
    assert.matches("bootstrap-token-abcdef", text, 1, true)
    assert.matches("<redacted>", text, 1, true)
    local cm = client.scrub { kind = "ConfigMap", data = { kubeconfig = "apiVersion: v1" } }
    assert.equal("apiVersion: v1", cm.data.kubeconfig)
    local list = client.scrub { kind = "ConfigMapList", items = { { metadata = { name = "a" }, data = { k = "v" } } } }
    assert.equal("v", list.items[1].data.k)
  end)
end)

local labbin = h.lab_bin .. "/kube-apiserver"
h.when_built(labbin, "make lab-bins", describe, pending)("token list -v 10 against a real kube-apiserver (tests/fixtures/apiserver.sh)", function()
  local fixture = h.top .. "/tests/fixtures/apiserver.sh"
  local dir
  local sh = h.sh
  setup(function()
    local f = io.open(labbin, "rb")
    assert(f, "the lab's kube-apiserver is missing at " .. labbin .. ": build it with `make lab-bins`")
    f:close()
    dir = h.tmpdir()
    local rc, out = sh(h.q(fixture) .. " start " .. h.q(dir))
    assert(rc == 0, "starting the API server fixture failed:\n" .. out)
  end)
  teardown(function()
    if dir then
      sh(h.q(fixture) .. " stop " .. h.q(dir))
      h.rmrf(dir)
    end
  end)

  it("logs no token secret at any verbosity or output format; the secret is only in the result", function()
    local kc = dir .. "/admin.conf"
    local code, out, err = h.moonadm { "token", "create", TOKEN_ID .. "." .. TOKEN_SECRET, "--kubeconfig", kc, "-v", "10" }
    assert.equal(0, code, out .. err)
    assert_no_token(err)
    local seen = 0
    for _, o in ipairs { "text", "json", "yaml" } do
      for _, v in ipairs { "6", "8", "9", "10" } do
        code, out, err = h.moonadm { "token", "list", "--kubeconfig", kc, "-v", v, "-o", o }
        assert.equal(0, code, out .. err)
        assert_no_token(err) -- the log (stderr): no secret, no base64 of it
        if v == "10" then
          assert.matches("Response body:", err, 1, true) -- the list body was logged, scrubbed
          assert.matches("<redacted>", err, 1, true)
        end
        assert.matches(TOKEN_ID .. "." .. TOKEN_SECRET, out, 1, true) -- the result, as kubeadm prints it
        seen = seen + 1
      end
    end
    assert.equal(12, seen)
    code, out, err = h.moonadm { "token", "delete", TOKEN_ID, "--kubeconfig", kc, "-v", "10" }
    assert.equal(0, code, out .. err)
    assert_no_token(out .. err)
  end)
end)
