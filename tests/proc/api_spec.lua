-- kube.client against a real kube-apiserver + etcd (the lab's binaries, tests/fixtures/apiserver.sh).
local helpers = require "helpers"
local core = require "moonadm.core"
local api = require "moonadm.api"
local client = require "kube.client"
local kubeconfig = require "kube.kubeconfig"
local json = require "kube.json"
local log = require "framework.log"
local results = require "framework.results"

local fixture = helpers.top .. "/tests/fixtures/apiserver.sh"
local labbin = helpers.lab_bin .. "/kube-apiserver"

local sh = helpers.sh

local CM = { apiVersion = "v1", kind = "ConfigMap" }
local function cm(name, data, labels)
  return { apiVersion = "v1", kind = "ConfigMap",
           metadata = { name = name, namespace = "default", labels = labels }, data = data or { k = "v" } }
end

helpers.when_built(labbin, "make lab-bins", describe, pending)("kube.client on a real kube-apiserver", function()
  local dir, c, server

  setup(function()
    local f = io.open(labbin, "rb")
    assert(f, "the lab's kube-apiserver is missing at " .. labbin ..
      ": build it with `make lab-bins` (these specs need a real API server, not a mock)")
    f:close()
    dir = helpers.tmpdir()
    local rc, out = sh(helpers.q(fixture) .. " start " .. helpers.q(dir))
    assert(rc == 0, "starting the API server fixture failed:\n" .. out)
    server = out:match("SERVER=(%S+)")
    c = assert(client.from_kubeconfig(dir .. "/admin.conf", { timeout = 20 }))
  end)

  teardown(function()
    if c then c:close() end
    if dir then
      sh(helpers.q(fixture) .. " stop " .. helpers.q(dir))
      helpers.rmrf(dir)
    end
  end)

  it("reads the kubeconfig's embedded data", function()
    local o = assert(kubeconfig.load(dir .. "/admin.conf"))
    assert.equal(server, o.server)
    assert.truthy(o.ca_pem:find("BEGIN CERTIFICATE", 1, true))
    assert.truthy(o.cert_pem:find("BEGIN CERTIFICATE", 1, true))
    assert.truthy(o.key_pem:find("PRIVATE KEY", 1, true))
    assert.equal("kubernetes-admin@fixture", o.context)
  end)

  it("reads certificate files relative to the kubeconfig", function()
    local text = ([[
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "%s", certificate-authority: pki/ca.crt}}]
users: [{name: u, user: {client-certificate: pki/admin.crt, client-key: %s/pki/admin.key}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: kube-system}}]
current-context: x
]]):format(server, dir)
    helpers.write(dir .. "/files.conf", text)
    local c2 = assert(client.from_kubeconfig(dir .. "/files.conf"))
    assert.equal("default", c2:must_get({ version = "v1", resource = "namespaces", name = "default" }).metadata.name)
    c2:close()
    local bad, err = kubeconfig.parse(text:gsub("current%-context: x", "current-context: nope"), { filename = "k.conf" })
    assert.is_nil(bad)
    assert.matches('k.conf: context "nope" not found', err, 1, true)
  end)

  it("gets a namespace, reusing the connection", function()
    local ns = assert(c:get { version = "v1", resource = "namespaces", name = "kube-system" })
    assert.equal("Namespace", ns.kind)
    assert.equal("kube-system", ns.metadata.name)
    local t0 = core.monotonic()
    for _ = 1, 20 do assert(c:get { apiVersion = "v1", kind = "Namespace", name = "default" }) end
    local ms = (core.monotonic() - t0) / 20 * 1000
    print(("\n# GET namespace: %.2f ms per request (reused connection)"):format(ms))
    local r = assert(c.conn:request { path = "/api/v1/namespaces/default" })
    assert.is_true(r.reused)
  end)

  it("returns nil, {code=404, reason=NotFound} for a missing object; must_get raises it", function()
    local v, err = c:get { version = "v1", resource = "namespaces", name = "does-not-exist" }
    assert.is_nil(v)
    assert.equal(404, err.code)
    assert.equal("NotFound", err.reason)
    assert.matches('namespaces "does-not-exist" not found', err.message, 1, true)
    local ok, raised = pcall(c.must_get, c, { version = "v1", resource = "namespaces", name = "does-not-exist" })
    assert.is_false(ok)
    assert.equal(404, raised.code)
    assert.matches("NotFound", tostring(raised), 1, true)
  end)

  it("creates a ConfigMap; 409 AlreadyExists on re-create; create_or_update converges", function()
    local got = assert(c:create(cm("conv", { a = "1" })))
    assert.equal("1", got.data.a)
    local v, err = c:create(cm("conv", { a = "1" }))
    assert.is_nil(v)
    assert.equal(409, err.code)
    assert.equal("AlreadyExists", err.reason)
    local upd, how = c:create_or_update(cm("conv", { a = "2" }))
    assert.equal("updated", how)
    assert.equal("2", upd.data.a)
    local new, how2 = c:create_or_update(cm("conv-new", { a = "3" }))
    assert.equal("created", how2)
    assert.equal("3", new.data.a)
    assert.equal("2", c:must_get(cm("conv")).data.a)
    local live, how3 = c:get_or_create(cm("conv", { a = "ignored" }))
    assert.equal("existing", how3)
    assert.equal("2", live.data.a)
    local _, how4 = c:get_or_create(cm("conv-goc"))
    assert.equal("created", how4)
  end)

  it("decodes 422 Invalid for a bad object", function()
    local v, err = c:create(cm("Not_A_Valid_Name"))
    assert.is_nil(v)
    assert.equal(422, err.code)
    assert.equal("Invalid", err.reason)
    assert.matches("metadata.name", err.message, 1, true)
  end)

  it("refuses an update with a stale resourceVersion: 409 Conflict", function()
    local a = assert(c:create(cm("stale", { v = "1" })))
    local b = json.decode(json.encode(a))
    a.data.v = "2"
    assert(c:update(a))
    b.data.v = "3"
    local v, err = c:update(b)
    assert.is_nil(v)
    assert.equal(409, err.code)
    assert.equal("Conflict", err.reason)
  end)

  it("patches with merge, strategic-merge and JSON patch", function()
    assert(c:create(cm("patched", { a = "1" }, { app = "x" })))
    local m = assert(c:patch(cm("patched"), { data = { b = "2" } }, { type = "merge" }))
    assert.same({ a = "1", b = "2" }, m.data)
    local s = assert(c:patch(cm("patched"), { metadata = { labels = { tier = "t" } } }))
    assert.same({ app = "x", tier = "t" }, s.metadata.labels)
    local j = assert(c:patch(cm("patched"), {
      { op = "remove", path = "/data/a" }, { op = "add", path = "/data/c", value = "3" },
    }, { type = "json" }))
    assert.same({ b = "2", c = "3" }, j.data)
    local _, err = c:patch(cm("patched"), { { op = "test", path = "/data/b", value = "nope" } }, { type = "json" })
    assert.equal(422, err.code)
  end)

  it("applies server-side with a field manager, and reports conflicts between managers", function()
    local obj = cm("applied", { owned = "mine" })
    local a = assert(c:apply(obj, { field_manager = "moonadm-spec" }))
    assert.equal("mine", a.data.owned)
    local managers = {}
    for _, mf in ipairs(a.metadata.managedFields) do managers[mf.manager] = mf.operation end
    assert.equal("Apply", managers["moonadm-spec"])
    local _, err = c:apply(cm("applied", { owned = "theirs" }), { field_manager = "other" })
    assert.equal(409, err.code)
    local b = assert(c:apply(cm("applied", { owned = "theirs" }), { field_manager = "other", force = true }))
    assert.equal("theirs", b.data.owned)
  end)

  it("deletes, and a second delete is a 404 unless ignored", function()
    assert(c:create(cm("doomed")))
    assert(c:delete(cm("doomed")))
    local _, err = c:get(cm("doomed"))
    assert.equal(404, err.code)
    local _, err2 = c:delete(cm("doomed"))
    assert.equal(404, err2.code)
    assert.is_true(c:delete(cm("doomed"), { ignore_not_found = true }))
  end)

  it("dryRun=All create does not persist", function()
    local v = assert(c:create(cm("dry"), { dry_run = true }))
    assert.equal("dry", v.metadata.name)
    local _, err = c:get(cm("dry"))
    assert.equal(404, err.code)
  end)

  it("lists with a label selector and a field selector", function()
    for i = 1, 3 do assert(c:create(cm("sel-" .. i, nil, { group = i == 2 and "b" or "a" }))) end
    local l = assert(c:list({ apiVersion = "v1", kind = "ConfigMap", namespace = "default" }, { label_selector = "group=a" }))
    assert.equal(2, #l.items)
    local f = assert(c:list(CM, { field_selector = "metadata.name=sel-2", query = {} }))
    assert.equal(1, #f.items)
    assert.equal("sel-2", f.items[1].metadata.name)
    -- a list's items come without managedFields (most of a big list's tables); a get keeps them,
    -- and so does a list that asks
    assert.is_nil(f.items[1].metadata.managedFields)
    assert.equal("sel-2", f.items[1].metadata.name)
    assert.truthy(f.items[1].metadata.uid)
    local got = assert(c:get { apiVersion = "v1", kind = "ConfigMap", namespace = "default", name = "sel-2" })
    assert.equal("Update", got.metadata.managedFields[1].operation)
    local kept = assert(c:list(CM, { field_selector = "metadata.name=sel-2", managed_fields = true }))
    assert.same(got.metadata.managedFields, kept.items[1].metadata.managedFields)
  end)

  it("paginates over 600 ConfigMaps with limit=100", function()
    assert(c:create { apiVersion = "v1", kind = "Namespace", metadata = { name = "many" } })
    local t0 = core.monotonic()
    for i = 1, 600 do
      assert(c:create { apiVersion = "v1", kind = "ConfigMap", metadata = { name = ("cm-%03d"):format(i), namespace = "many",
        labels = { bulk = "yes" } }, data = { i = tostring(i) } })
    end
    local created = core.monotonic() - t0
    t0 = core.monotonic()
    local l = assert(c:list({ version = "v1", resource = "configmaps", namespace = "many" }, { limit = 100, label_selector = "bulk=yes" }))
    local listed = core.monotonic() - t0
    assert.equal(600, #l.items)
    assert.is_true(l.pages >= 6)
    local seen = {}
    for _, it in ipairs(l.items) do seen[it.metadata.name] = true end
    for i = 1, 600 do assert.is_true(seen[("cm-%03d"):format(i)]) end
    local one = assert(c:list({ version = "v1", resource = "configmaps", namespace = "many" }, { limit = 100, all = false }))
    assert.equal(100, #one.items)
    assert.truthy(one.metadata.continue)
    print(("\n# 600 ConfigMaps: created sequentially in %.2fs (%.1f ms each); listed in %d pages of 100 in %.0f ms")
      :format(created, created / 600 * 1000, l.pages, listed * 1000))
  end)

  it("watches from a resourceVersion, and resumes from the last one after closing", function()
    local ref = { version = "v1", resource = "configmaps", namespace = "default" }
    local start_rv = assert(c:list(ref, { label_selector = "watched=yes" })).metadata.resourceVersion
    assert(c:create(cm("w1", { n = "1" }, { watched = "yes" })))
    local o = assert(c:get(cm("w1")))
    o.data.n = "2"
    assert(c:update(o))
    local events = {}
    local rv, how = c:watch(ref, function(ev)
      events[#events + 1] = ev.type .. " " .. ev.object.metadata.name .. " " .. ev.object.data.n
      if #events == 2 then return false end
    end, { resource_version = start_rv, label_selector = "watched=yes", timeout = 10 })
    assert.equal("stopped", how)
    assert.same({ "ADDED w1 1", "MODIFIED w1 2" }, events)
    -- changes while no watch is open are delivered when resuming from the last resourceVersion
    o = assert(c:get(cm("w1")))
    o.data.n = "3"
    assert(c:update(o))
    assert(c:delete(cm("w1")))
    local later = {}
    local rv2, how2 = c:watch(ref, function(ev)
      later[#later + 1] = ev.type .. " " .. ev.object.data.n
      return #later < 2
    end, { resource_version = rv, label_selector = "watched=yes", timeout = 10 })
    assert.equal("stopped", how2)
    assert.same({ "MODIFIED 3", "DELETED 3" }, later)
    assert.truthy(tonumber(rv2) > tonumber(rv))
    -- with nothing to deliver, the watch ends at its timeout
    local t0 = core.monotonic()
    local rv3, how3 = c:watch(ref, function() return true end, { resource_version = rv2, label_selector = "watched=yes", timeout = 1 })
    assert.equal("timeout", how3)
    assert.equal(rv2, rv3)
    assert.is_true(core.monotonic() - t0 < 5)
    -- a handler may call the API itself (a second connection serves it)
    local inner
    c:watch({ version = "v1", resource = "namespaces", name = "default" }, function(ev)
      inner = c:must_get(cm("conv")).data.a
      return false
    end, { timeout = 5 })
    assert.equal("2", inner)
  end)

  it("retries connection errors until its timeout and says so", function()
    local dead = assert(client.new { server = "https://127.0.0.1:1", insecure = true, timeout = 1.2, backoff = 0.05 })
    local t0 = core.monotonic()
    local v, err = dead:get { version = "v1", resource = "namespaces" }
    local took = core.monotonic() - t0
    assert.is_nil(v)
    assert.equal("ConnectionError", err.reason)
    assert.is_true(err.attempts >= 3, "attempts: " .. tostring(err.attempts))
    assert.matches("gave up after %d+ attempts in [%d.]+s %(timeout 1.2s%)", err.message)
    assert.matches("127.0.0.1:1", tostring(err), 1, true)
    assert.is_true(took >= 0.8 and took < 3, "took " .. took)
    local ok, raised = pcall(dead.must_get, dead, { version = "v1", resource = "namespaces" })
    assert.is_false(ok)
    assert.matches("gave up after", tostring(raised), 1, true)
  end)

  it("retries 5xx answers (then returns the decoded status)", function()
    local n = 0
    local fake = setmetatable({ conn = { request = function()
      n = n + 1
      if n < 3 then return { status = 503, headers = {}, body = '{"kind":"Status","code":503,"reason":"ServiceUnavailable","message":"busy"}' } end
      return { status = 200, headers = {}, body = '{"kind":"Namespace","metadata":{"name":"x"}}' }
    end }, server = "https://fake", timeout = 5, request_timeout = 5, backoff = 0.01, max_backoff = 0.05, sleep = core.sleep }, client.Client)
    local v = assert(fake:get { version = "v1", resource = "namespaces", name = "x" })
    assert.equal("x", v.metadata.name)
    assert.equal(3, n)
  end)

  it("verifies the server: a wrong CA fails with a TLS error, not a retry loop", function()
    local _, other = sh("openssl req -x509 -newkey rsa:2048 -nodes -keyout /dev/null -subj /CN=other -days 1 2>/dev/null")
    local wrong = assert(client.new { server = server, ca_pem = other:gsub("rc=%d+%s*$", ""), timeout = 5 })
    local v, err = wrong:get { version = "v1", resource = "namespaces" }
    assert.is_nil(v)
    assert.equal("TLSError", err.reason)
  end)

  it("authenticates with a bearer token from the TokenRequest API and never prints it", function()
    assert(c:create { apiVersion = "v1", kind = "ServiceAccount", metadata = { name = "spec-sa", namespace = "default" } })
    local tr = assert(c:create({ apiVersion = "authentication.k8s.io/v1", kind = "TokenRequest", spec = { expirationSeconds = 600 } },
      { ref = { version = "v1", resource = "serviceaccounts", namespace = "default", name = "spec-sa", subresource = "token" } }))
    local token = tr.status.token
    assert.truthy(#token > 100)
    local ca = assert(kubeconfig.load(dir .. "/admin.conf")).ca_pem

    -- capture everything the client logs at the highest verbosity
    local captured = {}
    local sink = { write = function(self, ...) for _, s in ipairs { ... } do captured[#captured + 1] = tostring(s) end return self end,
                   flush = function() end }
    local saved = { log.verbosity, log.out, log.err, log.json }
    log.verbosity, log.out, log.err, log.json = 10, sink, sink, false
    local ok, perr = pcall(function()
      local tc = assert(client.new { server = server, ca_pem = ca, token = token })
      local rev = assert(tc:create { apiVersion = "authentication.k8s.io/v1", kind = "SelfSubjectReview" })
      assert.equal("system:serviceaccount:default:spec-sa", rev.status.userInfo.username)
      local _, err = tc:get { version = "v1", resource = "secrets", namespace = "kube-system" }
      assert.equal(403, err.code) -- authenticated, but RBAC gives a fresh service account nothing
      assert.is_nil(tostring(err):find(token, 1, true))
      -- a Secret's data and the TokenRequest answer are logged scrubbed
      assert(c:create { apiVersion = "v1", kind = "Secret", metadata = { name = "s1", namespace = "default" },
        stringData = { password = "hunter2-very-secret" } })
      assert(c:get { apiVersion = "v1", kind = "Secret", namespace = "default", name = "s1" })
      assert(c:create({ apiVersion = "authentication.k8s.io/v1", kind = "TokenRequest", spec = {} },
        { ref = { version = "v1", resource = "serviceaccounts", namespace = "default", name = "spec-sa", subresource = "token" } }))
      local bad = assert(client.new { server = "https://127.0.0.1:1", token = token, ca_pem = ca, timeout = 0.3 })
      assert.is_nil((bad:get { version = "v1", resource = "namespaces" }))
    end)
    log.verbosity, log.out, log.err, log.json = table.unpack(saved)
    assert(ok, perr)
    local all = table.concat(captured)
    assert.truthy(all:find("GET " .. server, 1, true), "the client logged its requests at -v 10")
    assert.truthy(all:find("Request body", 1, true))
    assert.is_nil(all:find(token, 1, true), "the bearer token was printed")
    assert.is_nil(all:find(token:sub(1, 40), 1, true), "part of the bearer token was printed")
    assert.is_nil(all:find("hunter2", 1, true), "Secret data was printed")
    assert.is_nil(all:find("aHVudGVyMi", 1, true), "Secret data (base64) was printed")
    assert.is_nil(all:find("PRIVATE KEY", 1, true))
  end)

  it("refuses bad options as errors and misuse by raising", function()
    local v, err = client.new { server = "ftp://x" }
    assert.is_nil(v)
    assert.matches("want https://HOST", tostring(err), 1, true)
    local _, err2 = client.new { server = server, cert_pem = "not a pem", key_pem = "nope" }
    assert.matches("not a PEM certificate", tostring(err2), 1, true)
    assert.has_error(function() api.new { server = 42 } end)
    assert.has_error(function() c:get { resource = "x" } end)
    assert.has_error(function() c:patch(cm("x"), {}, { type = "bogus" }) end)
    local conn = assert(api.new { server = server, insecure = true })
    conn:close()
    assert.has_error(function() conn:request { path = "/" } end, "attempt to use a closed API client")
  end)

  describe("a failure nobody reads", function()
    local runner = require "framework.runner"
    local NODE = { apiVersion = "v1", kind = "Node", name = "no-such-node-192-0-2-1" }
    local function capture(f)
      local lines = {}
      local sink = { write = function(self, ...) for _, x in ipairs { ... } do lines[#lines + 1] = x end return self end,
                     flush = function() end }
      local saved = { log.out, log.err, log.json, results.strict }
      log.out, log.err, log.json = sink, sink, false
      local ok, a, b = pcall(f)
      log.out, log.err, log.json, results.strict = table.unpack(saved)
      assert(ok, a)
      return table.concat(lines), a, b
    end
    local function phase(run)
      return { { path = "upload-config/kubelet", status = "run", phase = { name = "kubelet", run = run } } }
    end

    before_each(function() client.unchecked() end)

    it("is listed with the line that dropped it; a failure read (its code, tostring, must_) is not", function()
      local _ = c:get(NODE); local line = debug.getinfo(1, "l").currentline
      local list = client.unchecked()
      assert.equal(1, #list)
      assert.matches("api_spec.lua:" .. line .. "$", list[1].site)
      assert.matches("GET /api/v1/nodes/no%-such%-node%-192%-0%-2%-1: .*%(NotFound, 404%)", list[1].message)
      local _, err = c:get(NODE)
      assert.equal(404, err.code)
      local _, err2 = c:get(NODE)
      assert.truthy(tostring(err2))
      assert.has_error(function() c:must_get(NODE) end)
      assert.same({}, (client.unchecked()))
      local _, err3 = c:get(NODE) -- dropped, then handed over once: unchecked() forgets
      assert.equal(1, #client.unchecked())
      assert.equal(0, #client.unchecked())
      assert.equal(404, err3.code)
    end)

    it("is logged as an error at the end of the phase, which still succeeds outside the tests", function()
      local out, ok = capture(function()
        results.strict = false
        return runner.execute(phase(function() c:patch(NODE, { metadata = { labels = { a = "b" } } }) end), {}, {})
      end)
      assert.is_true(ok)
      assert.matches("[upload-config/kubelet] an API call failed and nothing checked its result (", out, 1, true)
      assert.matches("PATCH /api/v1/nodes/no-such-node-192-0-2-1: ", out, 1, true)
    end)

    it("fails the phase under MOONADM_STRICT_RESULTS (every test suite), naming the call", function()
      local out, ok, err = capture(function()
        results.strict = true
        return runner.execute(phase(function() local _ = c:get(NODE) end), {}, {})
      end)
      assert.is_nil(ok)
      assert.matches("error execution phase upload-config/kubelet: 1 API failure was never checked (first at ", tostring(err), 1, true)
      assert.matches("api_spec.lua:%d+: GET /api/v1/nodes/no%-such%-node", tostring(err))
      assert.matches("nothing checked its result", out, 1, true)
      -- a phase that reads its failures is fine
      local _, ok2 = capture(function()
        results.strict = true
        return runner.execute(phase(function()
          local _, e = c:get(NODE)
          if e.code ~= 404 then error(e, 0) end
        end), {}, {})
      end)
      assert.is_true(ok2)
    end)
  end)

  it("decodes [] as an empty array and {} as an object, in any string context, and drops named members", function()
    local v = assert(json.decode('{"a":[],"b":{},"c":[ ],"s":"[]","l":[[],{"managedFields":[1],"x":[]}]}', { drop = { "managedFields" } }))
    assert.equal(json.array_mt, getmetatable(v.a))
    assert.equal(json.array_mt, getmetatable(v.c))
    assert.is_nil(getmetatable(v.b))
    assert.equal("[]", v.s)
    assert.equal(json.array_mt, getmetatable(v.l[1]))
    assert.same({ x = {} }, v.l[2])
    assert.equal('{"a":[],"b":{},"c":[],"l":[[],{"x":[]}],"s":"[]"}', json.encode(v))
    -- without drop, every member stays
    assert.same({ 1 }, assert(json.decode('{"managedFields":[1]}')).managedFields)
    local bad, err = json.decode('{"a":[],"b":')
    assert.is_nil(bad)
    assert.matches("^invalid JSON", err)
  end)

  it("builds paths from group/version/resource/namespace/name", function()
    local function p(ref) return client.path(assert(client.resolve(ref))) end
    assert.equal("/api/v1/namespaces/kube-system/configmaps/x", p { version = "v1", resource = "configmaps", namespace = "kube-system", name = "x" })
    assert.equal("/apis/apps/v1/namespaces/kube-system/deployments", p { apiVersion = "apps/v1", kind = "Deployment", namespace = "kube-system" })
    assert.equal("/apis/rbac.authorization.k8s.io/v1/clusterroles/r", p { apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRole", name = "r", namespace = "ignored" })
    assert.equal("/api/v1/nodes/n1/status", p { version = "v1", kind = "Node", name = "n1", subresource = "status" })
    assert.equal("/apis/networking.k8s.io/v1/namespaces/a/networkpolicies", p { apiVersion = "networking.k8s.io/v1", kind = "NetworkPolicy", namespace = "a" })
    assert.equal("a=1&b=x%20y&b=z&c=true", api.query { c = true, a = 1, b = { "x y", "z" } })
    assert.has_error(function() p { version = "v1", resource = "configmaps", name = "../x" } end)
  end)
end)
