-- etcd member operations (moonadm.etcd + etcd.members + etcd.endpoints) against REAL etcd 3.6
-- members started by tests/fixtures/etcd.sh (TLS with client-cert-auth, peer TLS, 127.0.0.1).
local helpers = require "helpers"
local core = require "moonadm.core"
local etcd = require "moonadm.etcd"
local members = require "etcd.members"
local endpoints = require "etcd.endpoints"

local fixture = helpers.top .. "/tests/fixtures/etcd.sh"
local labbin = helpers.lab_bin .. "/etcd"

local sh = helpers.sh

local function readf(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function figure(fmt, ...) io.stderr:write("figure: ", fmt:format(...), "\n") end

-- a port on 127.0.0.1 nothing listens on
local function dead_endpoint()
  local rc, out = sh("python3 -c 'import socket;s=socket.socket();s.bind((\"127.0.0.1\",0));print(s.getsockname()[1])'")
  assert(rc == 0, out)
  return "https://127.0.0.1:" .. out:match("(%d+)")
end

helpers.when_built(labbin, "make lab-bins", describe, pending)("etcd member operations on real etcd", function()
  local dir, env, creds

  local function fx(args)
    local rc, out = sh(helpers.q(fixture) .. " " .. args)
    assert(rc == 0, "etcd fixture `" .. args .. "` failed:\n" .. out)
    return out
  end

  local function client(eps, extra)
    local o = { endpoints = eps, ca_pem = creds.ca, cert_pem = creds.cert, key_pem = creds.key,
                timeout = 20, dial_timeout = 1 }
    for k, v in pairs(extra or {}) do o[k] = v end
    return assert(members.new(o))
  end

  setup(function()
    local f = io.open(labbin, "rb")
    assert(f, "etcd is missing at " .. labbin ..
      ": build the lab's binaries with `make lab-bins` (these specs need a real etcd 3.6.6, not a mock)")
    f:close()
    dir = helpers.tmpdir()
    local out = fx("start " .. helpers.q(dir))
    env = {}
    for k, v in out:gmatch("(%u+%d*)=(%S+)") do env[k] = v end
    creds = { ca = readf(env.CA), cert = readf(env.CERT), key = readf(env.KEY) }
  end)

  teardown(function()
    if dir then
      sh(helpers.q(fixture) .. " stop " .. helpers.q(dir))
      helpers.rmrf(dir)
    end
  end)

  it("lists the single member with uint64 IDs as decimal strings", function()
    local c <close> = assert(etcd.new { endpoints = { env.CLIENT0 }, ca_pem = creds.ca, cert_pem = creds.cert, key_pem = creds.key })
    local r = assert(c:member_list())
    assert.equal(1, #r.members)
    local m = r.members[1]
    assert.equal("etcd0", m.name)
    assert.same({ env.PEER0 }, m.peer_urls)
    assert.same({ env.CLIENT0 }, m.client_urls)
    assert.is_false(m.is_learner)
    assert.truthy(m.id:match("^%d+$"))
    assert.equal(m.id, etcd.id_from_hex(m.id_hex))
    assert.equal(env.CLIENT0, r.endpoint)
    assert.equal(m.id, r.member_id)
    -- through the Lua layer (with the retry policy)
    local m2 <close> = client({ env.CLIENT0 })
    local list = assert(m2:list())
    assert.equal(1, #list)
    assert.equal(m.id, list[1].id)
  end)

  it("converts member IDs beyond 2^63 exactly", function()
    assert.equal("abf95dd412d74700", etcd.id_hex("12392039015117178624"))
    assert.equal("12392039015117178624", etcd.id_from_hex("abf95dd412d74700"))
    assert.equal("18446744073709551615", etcd.id_from_hex("ffffffffffffffff"))
    assert.is_nil((etcd.id_from_hex("1ffffffffffffffff")))
    assert.has_error(function() etcd.id_hex("18446744073709551616") end)
    assert.has_error(function() etcd.id_hex(-1) end)
    assert.has_error(function() etcd.id_hex("12ab") end)
  end)

  it("reports health and status of each endpoint", function()
    local c <close> = assert(etcd.new { endpoints = { env.CLIENT0 }, ca_pem = creds.ca, cert_pem = creds.cert, key_pem = creds.key })
    local h = assert(c:health(1))
    assert.is_true(h.healthy)
    assert.equal(200, h.status)
    local st = assert(c:status(env.CLIENT0))
    assert.equal("3.6.6", st.version)
    assert.equal(st.member_id, st.leader)
    assert.is_false(st.is_learner)
    assert.is_true(math.type(st.raft_index) == "integer" and st.raft_index > 0)
    assert.same({}, st.errors)
    local m <close> = client({ env.CLIENT0 })
    local ok, err, report = m:check_health()
    assert.is_true(ok, err)
    assert.equal(1, #report)
    assert.is_true(report[1].healthy)
  end)

  it("fails over to the next endpoint when the first is dead, and names every endpoint when none answers", function()
    local dead1, dead2 = dead_endpoint(), dead_endpoint()
    local c <close> = assert(etcd.new { endpoints = { dead1, env.CLIENT0 }, ca_pem = creds.ca, cert_pem = creds.cert, key_pem = creds.key })
    local r = assert(c:member_list())
    assert.equal(env.CLIENT0, r.endpoint)
    assert.equal(1, #r.members)
    local c2 <close> = assert(etcd.new { endpoints = { dead1, dead2 }, ca_pem = creds.ca, cert_pem = creds.cert, key_pem = creds.key })
    local r2, err, kind = c2:member_list()
    assert.is_nil(r2)
    assert.equal("unreachable", kind)
    assert.truthy(err:find("member list: none of 2 endpoints could serve it", 1, true), err)
    assert.truthy(err:find(dead1, 1, true) and err:find(dead2, 1, true), err)
    -- per-endpoint calls do not fail over
    local st, serr = c:status(1)
    assert.is_nil(st)
    assert.truthy(serr:find(dead1, 1, true), serr)
    -- the retrying layer gives up at its timeout with the last error
    local m <close> = client({ dead1 }, { timeout = 1.2 })
    local t0 = core.monotonic()
    local list, lerr, lkind = m:list()
    assert.is_nil(list)
    assert.equal("timeout", lkind)
    assert.truthy(lerr:find("^etcd member list: gave up after %d+ attempts"), lerr)
    assert.truthy(lerr:find("Couldn't connect", 1, true), lerr)
    assert.is_true(core.monotonic() - t0 < 3)
  end)

  it("gives clear errors: etcd's own message, the endpoint, a kind", function()
    local c <close> = assert(etcd.new { endpoints = { env.CLIENT0 }, ca_pem = creds.ca, cert_pem = creds.cert, key_pem = creds.key })
    local id = assert(c:member_list()).members[1].id
    local r, err, kind = c:member_promote(id)
    assert.is_nil(r)
    assert.equal("failed_precondition", kind)
    assert.equal("etcd: " .. env.CLIENT0 .. ": member promote " .. etcd.id_hex(id) ..
      ": etcdserver: can only promote a learner member (FailedPrecondition)", err)
    r, err, kind = c:member_remove("12345")
    assert.is_nil(r)
    assert.equal("not_found", kind)
    assert.truthy(err:find("member remove 3039: etcdserver: member not found (NotFound)", 1, true), err)
    -- a client certificate from another CA is refused by etcd's TLS
    local bad <close> = assert(etcd.new { endpoints = { env.CLIENT0 }, ca_pem = creds.ca,
      cert_pem = readf(env.DIR .. "/pki/other-client.crt"), key_pem = readf(env.DIR .. "/pki/other-client.key") })
    r, err, kind = bad:member_list()
    assert.is_nil(r)
    assert.truthy(kind == "tls" or kind == "unreachable", kind)
    assert.truthy(err:find(env.CLIENT0, 1, true), err)
    -- a server certificate not from our CA: TLS verification fails
    local wrongca <close> = assert(etcd.new { endpoints = { env.CLIENT0 }, ca_pem = readf(env.DIR .. "/pki/other-ca.crt"),
      cert_pem = creds.cert, key_pem = creds.key })
    r, err, kind = wrongca:member_list()
    assert.is_nil(r)
    assert.equal("tls", kind)
    -- options and misuse
    local n, nerr, nkind = etcd.new { endpoints = { "ftp://x" }, ca_pem = creds.ca }
    assert.is_nil(n)
    assert.equal("options", nkind)
    assert.truthy(nerr:find("ftp://x", 1, true), nerr)
    n, nerr = etcd.new { endpoints = { env.CLIENT0 }, ca_pem = creds.ca, cert_pem = creds.cert, key_pem = "not a key" }
    assert.is_nil(n)
    assert.truthy(nerr:find("PEM", 1, true), nerr)
    assert.has_error(function() etcd.new { endpoints = {} } end)
    assert.has_error(function() c:member_promote("0x12") end)
    assert.has_error(function() c:member_promote({}) end)
    c:close()
    assert.has_error(function() c:member_list() end, "attempt to use a closed etcd client")
  end)

  it("retries a promote until its timeout while the learner never starts, then removes it", function()
    local out = fx("ports " .. helpers.q(dir) .. " ghost")
    local peer = out:match("PEER=(%S+)")
    local m = client({ env.CLIENT0 }, { timeout = 1.6 })
    finally(function() m:remove(peer); m:close() end)
    local cluster, member, how = m:add_learner(peer, "ghost")
    assert.equal("added", how, member)
    assert.is_true(member.is_learner)
    assert.equal("", member.name)
    assert.equal(2, #cluster)
    -- in etcd's order (by member ID, not by age)
    local want = {}
    for _, e in ipairs(cluster) do
      want[#want + 1] = (e.peer_url == peer and "ghost" or "etcd0") .. "=" .. (e.peer_url == peer and peer or env.PEER0)
    end
    assert.equal(table.concat(want, ","), members.initial_cluster(cluster))
    -- raw list: the learner has no name yet, so kubeadm's list uses its hex ID
    local raw = assert(m:list())
    local ic = members.initial_cluster(raw)
    assert.truthy(ic:find("etcd0=" .. env.PEER0, 1, true), ic)
    assert.truthy(ic:find(member.id_hex .. "=" .. peer, 1, true), ic)
    assert.equal(2, select(2, ic:gsub(",", "")) + 1)
    local t0 = core.monotonic()
    local p, err, kind = m:promote(peer)
    local dt = core.monotonic() - t0
    assert.is_nil(p)
    assert.equal("timeout", kind)
    assert.truthy(err:find("gave up after %d+ attempts"), err)
    assert.truthy(err:find("can only promote a learner member which is in sync with leader", 1, true), err)
    local attempts = tonumber(err:match("after (%d+) attempts"))
    assert.is_true(attempts >= 3 and attempts <= 5, err)
    assert.is_true(dt >= 1.0 and dt < 2.5, tostring(dt))
    -- still a learner
    assert.is_true(members.find(assert(m:list()), peer).is_learner)
    assert.equal("removed", (m:remove(peer)))
    assert.is_nil(members.find(assert(m:list()), peer))
    assert.equal("not_found", (m:remove(peer)))
    local np, nerr, nkind = m:promote(peer)
    assert.is_nil(np)
    assert.equal("no_member", nkind)
    assert.truthy(nerr:find("no member with peer URL " .. peer, 1, true), nerr)
  end)

  it("adds a learner once, starts it with the initial-cluster string, promotes it when in sync, removes it", function()
    local out = fx("ports " .. helpers.q(dir) .. " etcd1")
    local peer1, client1 = out:match("PEER=(%S+)"), out:match("CLIENT=(%S+)")
    local raw <close> = assert(etcd.new { endpoints = { env.CLIENT0 }, ca_pem = creds.ca, cert_pem = creds.cert, key_pem = creds.key })
    local m = client({ env.CLIENT0 }, { timeout = 60 })
    finally(function()
      m:remove(peer1)
      m:close()
      sh(helpers.q(fixture) .. " stop " .. helpers.q(dir) .. " etcd1")
    end)

    -- the raw add, then a promote right away: etcd refuses (the learner has not even started)
    local t_add = core.monotonic()
    local a = assert(raw:member_add({ peer1 }, { learner = true }))
    assert.is_true(a.member.is_learner)
    assert.same({ peer1 }, a.member.peer_urls)
    assert.equal(2, #a.members)
    local p, perr, pkind = raw:member_promote(a.member.id)
    assert.is_nil(p)
    assert.equal("failed_precondition", pkind)
    assert.truthy(perr:find("etcdserver: can only promote a learner member which is in sync with leader", 1, true), perr)
    assert.truthy(perr:find(env.CLIENT0, 1, true), perr)

    -- adding the same peer URL again: etcd says so; the helper reuses the member
    local again, aerr = raw:member_add({ peer1 }, { learner = true })
    assert.is_nil(again)
    assert.truthy(aerr:find("Peer URLs already exists", 1, true) or aerr:find("member ID already exist", 1, true), aerr)
    local cluster, member, how = m:add_learner(peer1, "etcd1", { client_url = client1 })
    assert.equal("existing", how)
    assert.equal(a.member.id, member.id)
    cluster, member, how = m:add_learner(peer1, "etcd1")
    assert.equal("existing", how)
    assert.equal(2, #assert(m:list()))
    assert.same({ env.CLIENT0, client1 }, m:endpoints())
    local ic = members.initial_cluster(cluster)
    local want = {}
    for _, e in ipairs(cluster) do
      want[#want + 1] = e.peer_url == peer1 and ("etcd1=" .. peer1) or ("etcd0=" .. env.PEER0)
    end
    assert.equal(table.concat(want, ","), ic)

    -- start the second etcd with that string and --initial-cluster-state existing
    fx("add " .. helpers.q(dir) .. " etcd1 " .. helpers.q(ic))
    local t_start = core.monotonic()
    local pm, how2 = m:promote(peer1)
    assert.equal("promoted", how2, pm)
    local t_done = core.monotonic()
    assert.is_false(pm.is_learner)
    figure("learner started -> promoted: %.2fs; member add -> promoted: %.2fs", t_done - t_start, t_done - t_add)
    local pm2, how3 = m:promote(peer1)
    assert.equal("already", how3, pm2)

    -- both members started and voting; both endpoints answer
    local report = assert(m:wait_for_member(peer1, { retries = 20, interval = 0.5 }))
    assert.equal(2, #report)
    local list = assert(m:list())
    assert.equal(2, #list)
    for _, x in ipairs(list) do assert.is_false(x.is_learner) end
    assert.equal("etcd1", members.find(list, peer1).name)
    local ok, herr, hrep = m:check_health()
    assert.is_true(ok, herr)
    assert.equal(2, #hrep)
    local st1 = assert(m:client():status(client1))
    local st0 = assert(m:client():status(env.CLIENT0))
    assert.equal(st0.leader, st1.leader)
    assert.is_false(st1.is_learner)

    -- failover with a real second member: the first endpoint dead, the second answers
    local fo <close> = assert(etcd.new { endpoints = { dead_endpoint(), client1 }, ca_pem = creds.ca, cert_pem = creds.cert, key_pem = creds.key })
    assert.equal(client1, assert(fo:member_list()).endpoint)

    -- remove it (through the member itself: the answer comes from a live member), then again
    local t_rm = core.monotonic()
    assert.equal("removed", (m:remove(peer1)))
    figure("member remove: %.3fs", core.monotonic() - t_rm)
    assert.is_nil(members.find(assert(m:list()), peer1))
    assert.equal("not_found", (m:remove(peer1)))
    fx("stop " .. helpers.q(dir) .. " etcd1")
  end)

  it("refuses to remove the last member", function()
    local m <close> = client({ env.CLIENT0 }, { timeout = 5 })
    local how, err, kind = m:remove(env.PEER0)
    assert.is_nil(how)
    assert.equal("last_member", kind)
    assert.truthy(err:find("last member of the cluster", 1, true), err)
    assert.equal(1, #assert(m:list()))
  end)

  it("waits for a member that never starts within its retries", function()
    local m <close> = client({ env.CLIENT0 }, { timeout = 5 })
    local r, err, kind = m:wait_for_member("https://127.0.0.1:1", { retries = 2, interval = 0.1 })
    assert.is_nil(r)
    assert.equal("timeout", kind)
    assert.truthy(err:find("no member with peer URL https://127.0.0.1:1", 1, true), err)
  end)
end)

describe("etcd endpoints from the etcd pods' annotations (KEP-2506)", function()
  local KEY = "kubeadm.kubernetes.io/etcd.advertise-client-urls"
  local function pod(name, ann)
    return { metadata = { name = name, annotations = ann and { [KEY] = ann } or nil } }
  end
  -- a kube.client stand-in that answers the pod list from a script of answers
  local function fake(answers)
    local c = { calls = {} }
    function c:list(ref, opts)
      self.calls[#self.calls + 1] = { ref = ref, opts = opts }
      local a = answers[math.min(#self.calls, #answers)]
      if type(a) == "string" then return nil, a end
      return { items = a }
    end
    return c
  end
  local nosleep = { sleep = function() end, timeout = 5 }

  it("retries until every etcd pod has the annotation", function()
    local c = fake {
      "connection refused",
      {},
      { pod("etcd-a", "https://192.0.2.131:2379"), pod("etcd-b", nil) },
      { pod("etcd-a", "https://192.0.2.131:2379"), pod("etcd-b", "https://192.0.2.132:2379,https://192.0.2.131:2379") },
    }
    local urls = assert(endpoints.endpoints_from_pods(c, nosleep))
    assert.same({ "https://192.0.2.131:2379", "https://192.0.2.132:2379" }, urls)
    assert.equal(4, #c.calls)
    assert.equal("kube-system", c.calls[1].ref.namespace)
    assert.equal("Pod", c.calls[1].ref.kind)
    assert.equal("component=etcd,tier=control-plane", c.calls[1].opts.label_selector)
  end)

  it("gives up at the timeout naming the pods without the annotation", function()
    local t = 0
    local c = fake { { pod("etcd-a", "https://192.0.2.131:2379"), pod("etcd-b", nil) } }
    local urls, err = endpoints.endpoints_from_pods(c, { timeout = 2, interval = 0.5,
      sleep = function(s) t = t + s end, clock = function() return t end })
    assert.is_nil(urls)
    assert.truthy(err:find("etcd pods without the " .. KEY .. " annotation: etcd-b", 1, true), err)
    assert.truthy(err:find("gave up after 5 attempts in 2.0s", 1, true), err) -- at 0, 0.5, 1, 1.5, 2 s
  end)
end)
