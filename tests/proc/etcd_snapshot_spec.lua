-- `moonadm etcd snapshot` against a REAL etcd 3.6 member (tests/fixtures/etcd.sh: TLS, client-cert
-- auth, 127.0.0.1): the saved file is etcd's database with its checksum, whole or absent, checked on
-- disk; status, list and prune as a user runs them. The restore of such a file is the lab's.
local h = require "helpers"
local etcd = require "moonadm.etcd"
local fs = require "moonadm.fs"
local snapshot = require "etcd.snapshot"
local cmd = require "commands.etcd"
local etcdutl = require "etcd.etcdutl"

local fixture = h.top .. "/tests/fixtures/etcd.sh"
local labbin = h.lab_bin .. "/etcd"

local function readf(p) return assert(h.read(p), "no " .. p) end
local writef = h.write

local function listing(dir)
  local p = io.popen("ls -A " .. h.q(dir))
  local t = {}
  for l in p:lines() do t[#t + 1] = l end
  p:close()
  return t
end

h.when_built(labbin, "make lab-bins", describe, pending)("etcd snapshots of a real etcd member", function()
  local dir, env, certdir

  local function etcdctl(args)
    return h.sh(("%s/etcdctl --endpoints %s --cacert %s --cert %s --key %s %s"):format(h.lab_bin, env.CLIENT0,
      h.q(env.CA), h.q(env.CERT), h.q(env.KEY), args))
  end

  -- moonadm on the host (root /): a snapshot command's exit code and output
  local function moonadm(args) return h.moonadm(args) end

  setup(function()
    dir = h.tmpdir()
    local rc, out = h.sh(h.q(fixture) .. " start " .. h.q(dir))
    assert(rc == 0, "etcd fixture: " .. out)
    env = {}
    for k, v in out:gmatch("(%u+%d*)=(%S+)") do env[k] = v end
    -- the layout `snapshot save` reads: CERT_DIR/etcd/ca.crt and etcd/healthcheck-client.{crt,key}
    certdir = dir .. "/certdir"
    h.sh_ok(("mkdir -p %s/etcd && cp %s %s/etcd/ca.crt && cp %s %s/etcd/healthcheck-client.crt && cp %s %s/etcd/healthcheck-client.key")
      :format(h.q(certdir), h.q(env.CA), h.q(certdir), h.q(env.CERT), h.q(certdir), h.q(env.KEY), h.q(certdir)))
    for i = 1, 300 do
      local prc, pout = etcdctl(("put /registry/configmaps/default/snap-%03d value-%03d-%s"):format(i, i, ("x"):rep(200)))
      assert(prc == 0, pout)
    end
  end)

  teardown(function()
    if dir then
      h.sh(h.q(fixture) .. " stop " .. h.q(dir))
      h.rmrf(dir)
    end
  end)

  it("saves the member's database with etcd's checksum, checked on disk, as etcdctl would", function()
    local file = dir .. "/one.db"
    local code, out, err = moonadm { "etcd", "snapshot", "save", file, "--endpoint", env.CLIENT0, "--cert-dir", certdir,
      "-o", "json" }
    assert.equal(0, code, out .. err)
    local info = require("cjson").decode(out)
    local data = readf(file)
    assert.equal(#data, info.size)
    assert.equal(info.db_size + 32, info.size)
    assert.equal(0, (info.size - 32) % 4096) -- whole bbolt pages, then the 32-byte checksum
    assert.equal(info.sha256, (select(2, h.sh("sha256sum " .. h.q(file)))):match("^(%x+)"))
    assert.is_true(info.checksum_ok and info.bbolt_ok)
    assert.equal("3.6.6", info.version)
    assert.equal("3.6.0", info.storage_version)
    assert.is_true(info.revision >= 301, "revision " .. tostring(info.revision))
    -- every key put is in the database, and the file is private
    assert.truthy(data:find("/registry/configmaps/default/snap-300", 1, true))
    assert.truthy(data:find("value-001-xxxx", 1, true))
    assert.equal(tonumber("600", 8), fs.stat(file).mode)
    -- etcd's own member answers the same size for its database (the snapshot is the whole of it)
    local c <close> = assert(etcd.new { endpoints = { env.CLIENT0 }, ca_pem = readf(env.CA), cert_pem = readf(env.CERT),
      key_pem = readf(env.KEY) })
    local st = assert(c:status(1))
    assert.is_true(math.abs(st.db_size - info.db_size) <= 4096 * 4, ("%d vs %d"):format(st.db_size, info.db_size))
    -- status agrees, in text and in its exit code
    local scode, sout = moonadm { "etcd", "snapshot", "status", file }
    assert.equal(0, scode, sout)
    assert.truthy(sout:find("ETCD CHECKSUM  valid", 1, true), sout)
    assert.truthy(sout:find(info.sha256, 1, true), sout)
  end)

  h.when_built(h.lab_bin .. "/etcdutl", "make lab-bins-for-test", it, pending)(
    "hands etcdutl a file it restores, at the revision the member reports", function()
    local c <close> = assert(etcd.new { endpoints = { env.CLIENT0 }, ca_pem = readf(env.CA), cert_pem = readf(env.CERT),
      key_pem = readf(env.KEY) })
    local live = assert(c:status(1))
    assert.is_true(math.type(live.revision) == "integer" and live.revision >= 301, tostring(live.revision))
    local file = dir .. "/for-etcdutl.db"
    local code, out, err = moonadm { "etcd", "snapshot", "save", file, "--endpoint", env.CLIENT0, "--cert-dir", certdir }
    assert.equal(0, code, out .. err)
    local tool = assert(etcdutl.find { explicit = h.lab_bin .. "/etcdutl" })
    local st = assert(etcdutl.status(tool, file))
    assert.equal(live.revision, st.revision) -- nothing written in between
    assert.is_true(st.total_key >= 300, tostring(st.total_key))
    local ddir = dir .. "/restored"
    assert(etcdutl.restore(tool, { file = file, data_dir = ddir, name = "solo", peer_url = "https://127.0.0.1:2380",
      token = "t" }))
    assert.truthy(fs.stat(ddir .. "/member/snap/db"), "no database in the restored data dir")
    assert.truthy(fs.stat(ddir .. "/member/wal"), "no WAL in the restored data dir")
    -- a damaged file is etcdutl's error, named
    writef(dir .. "/bad.db", ("x"):rep(8192))
    local bad, berr = etcdutl.status(tool, dir .. "/bad.db")
    assert.is_nil(bad)
    assert.truthy(berr:find("snapshot status", 1, true), berr)
    local none, nerr = etcdutl.find { explicit = dir .. "/no-such-etcdutl" }
    assert.is_nil(none)
    assert.truthy(nerr:find("not an executable file", 1, true), nerr)
  end)

  it("never replaces an existing file, and leaves nothing when etcd cannot be reached", function()
    local file = dir .. "/kept.db"
    writef(file, "mine")
    local code, out, err = moonadm { "etcd", "snapshot", "save", file, "--endpoint", env.CLIENT0, "--cert-dir", certdir }
    assert.equal(1, code, out .. err)
    assert.truthy(err:find("already exists: it is not replaced", 1, true), err)
    assert.equal("mine", readf(file))
    -- a dead endpoint: a clear error naming it, no file, no temp file
    local sub = dir .. "/dead"
    h.sh_ok("mkdir " .. h.q(sub))
    code, out, err = moonadm { "etcd", "snapshot", "save", sub .. "/x.db", "--endpoint", "https://127.0.0.1:9", "--cert-dir", certdir }
    assert.equal(1, code, out .. err)
    assert.truthy(err:find("The snapshot was not saved", 1, true) and err:find("127.0.0.1:9", 1, true), err)
    assert.same({}, listing(sub))
    -- a certificate directory without the client certificate
    code, out, err = moonadm { "etcd", "snapshot", "save", sub .. "/y.db", "--endpoint", env.CLIENT0, "--cert-dir", sub }
    assert.equal(1, code, out .. err)
    assert.truthy(err:find(sub .. "/etcd/ca.crt", 1, true), err)
    assert.same({}, listing(sub))
  end)

  it("keeps the newest N in --dir with their sha256sum files, and says which are damaged", function()
    local sdir = dir .. "/sched"
    local names = {}
    for i = 1, 3 do
      local code, out, err = moonadm { "etcd", "snapshot", "save", "--dir", sdir, "--endpoint", env.CLIENT0,
        "--cert-dir", certdir, "--keep", "2" }
      assert.equal(0, code, out .. err)
      names[i] = out:match("to " .. sdir:gsub("%p", "%%%0") .. "/(etcd%-snapshot%-%S+%.db)")
      assert.truthy(names[i], out)
      if i < 3 then h.sh_ok("sleep 1.1") end -- names carry the second
    end
    assert.same({ names[2], names[2] .. ".sha256", names[3], names[3] .. ".sha256" }, listing(sdir))
    local rc, out = h.sh("cd " .. h.q(sdir) .. " && sha256sum -c " .. h.q(names[3] .. ".sha256"))
    assert.equal(0, rc, out)
    assert.equal(tonumber("700", 8), fs.stat(sdir).mode)
    -- list: newest first, in text and json
    local code, lout = moonadm { "etcd", "snapshot", "list", "--dir", sdir }
    assert.equal(0, code, lout)
    local i3, i2 = lout:find(names[3], 1, true), lout:find(names[2], 1, true)
    assert.truthy(i3 and i2 and i3 < i2, lout)
    local list = assert(snapshot.list(sdir))
    assert.equal(2, #list)
    assert.equal(names[3], list[1].name)
    -- one byte changed in the database: status says so with its own exit code
    local path = sdir .. "/" .. names[2]
    local data = readf(path)
    writef(path, data:sub(1, 5000) .. string.char((data:byte(5001) + 1) % 256) .. data:sub(5002))
    local scode, sout, serr = moonadm { "etcd", "snapshot", "status", path }
    assert.equal(cmd.EXIT_DAMAGED, scode, sout .. serr)
    assert.truthy(sout:find("ETCD CHECKSUM  INVALID", 1, true), sout)
    assert.truthy(sout:find("HASH FILE      DIFFERS", 1, true), sout)
    -- cut short: no checksum, the database's pages missing
    writef(path, data:sub(1, 8192 + 100))
    local f = assert(snapshot.status(path))
    assert.is_false(f.ok)
    assert.is_false(f.has_checksum)
    -- not a file at all
    scode, sout, serr = moonadm { "etcd", "snapshot", "status", dir .. "/nothing.db" }
    assert.equal(1, scode)
    assert.truthy(serr:find(dir .. "/nothing.db", 1, true), serr)
    -- prune to one: the damaged older one goes with its hash file; an orphan hash file goes too
    writef(sdir .. "/etcd-snapshot-gone-20200101T000000Z.db.sha256", "x")
    code, out = moonadm { "etcd", "snapshot", "prune", "--dir", sdir, "--keep", "1" }
    assert.equal(0, code, out)
    assert.same({ names[3], names[3] .. ".sha256" }, listing(sdir))
    code, out, err = moonadm { "etcd", "snapshot", "prune", "--dir", sdir, "--keep", "0" }
    assert.equal(1, code)
    assert.truthy(err:find("--keep must be at least 1", 1, true), err)
    assert.same({ names[3], names[3] .. ".sha256" }, listing(sdir))
  end)

  it("leaves no file at the name when killed in the middle of the transfer; the next save clears its temp file", function()
    if not h.read(h.hooks) then pending("bin/moonadm-hooks is missing (make test-hooks)") return end
    local sdir = dir .. "/killed"
    h.sh_ok("mkdir -p " .. h.q(sdir) .. " && chmod 700 " .. h.q(sdir))
    -- SIGKILL at the 5th piece written (etcd sends 32 KiB pieces: the database here has dozens)
    local code, out, err = h.moonadm({ "etcd", "snapshot", "save", "--dir", sdir, "--endpoint", env.CLIENT0,
      "--cert-dir", certdir }, { MOONADM_CRASH_AFTER = "write:5" }, h.hooks)
    assert.is_true(code ~= 0, out .. err)
    local left = listing(sdir)
    assert.equal(1, #left, table.concat(left, " "))
    assert.truthy(left[1]:find("^%.etcd%-snapshot%-.+%.db%.tmp%-"), "only the temp file: " .. left[1])
    h.sh_ok("sleep 1.1") -- the next save's name carries another second; the temp file is older than it
    code, out, err = moonadm { "etcd", "snapshot", "save", "--dir", sdir, "--endpoint", env.CLIENT0, "--cert-dir", certdir }
    assert.equal(0, code, out .. err)
    left = listing(sdir)
    assert.equal(2, #left, table.concat(left, " "))
    for _, name in ipairs(left) do assert.falsy(name:find("^%."), "a temp file left after the next save: " .. name) end
    assert.is_true(assert(snapshot.status(sdir .. "/" .. left[1])).ok)
  end)
end)
