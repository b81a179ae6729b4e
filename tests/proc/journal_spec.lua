-- The journal under group commit (framework/journal.lua, bindings/commit.c): its newest state lands
-- ahead of the files it names, written once per commit by the pre-commit hook; and the canonical
-- text its digests are taken of (encoding.canon).
local h = require "helpers"
local cjson = require "cjson"
local fs = require "moonadm.fs"
local encoding = require "moonadm.encoding"
local journal = require "framework.journal"
local config = require "config"

-- The canon as it was written in Lua before it moved to C: the digests of existing journals.
local function lua_canon(v)
  local t = type(v)
  if t == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) < type(b)
    end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = lua_canon(k) .. ":" .. lua_canon(v[k]) end
    return "{" .. table.concat(parts, ",") .. "}"
  elseif t == "string" then
    return ("%q"):format(v)
  elseif t == "function" or t == "userdata" or t == "thread" then
    return t
  end
  return tostring(v)
end

local ECDSA = [[
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.0.2.10
nodeRegistration:
  name: journal-node
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
encryptionAlgorithm: ECDSA-P256
]]

describe("encoding.canon", function()
  it("writes what the Lua canon wrote, for the whole default configuration and odd values", function()
    local cfg = assert(config.load { text = ECDSA, kind = "init" })
    local samples = {
      cfg, {}, { 1, 2, 3 }, { a = 1, [1] = "x", [true] = 2 }, { "a\n\0\"b\r\1272\0019\255", x = { y = { z = 1.5, w = -0.0 } } },
      { [1.5] = 1, [2] = 2, [-3] = 0, [math.huge] = 4 }, { f = print, u = io.stdout, c = coroutine.create(print) },
      3, 2 ^ 63, -0.0, "s", true, false, { [1] = { [1] = { [1] = {} } } }, { ["b"] = 1, ["a\0b"] = 2, ["a"] = 3 },
    }
    for i, v in ipairs(samples) do
      assert.equal(lua_canon(v), encoding.canon(v), "sample " .. i)
    end
    assert.equal("nil", encoding.canon(nil))
    local many = {}
    for i = 1, 1000 do many["k" .. i] = { i, tostring(i) } end
    assert.equal(lua_canon(many), encoding.canon(many))
  end)

  it("refuses keys it cannot order and tables that contain themselves", function()
    assert.has_error(function() encoding.canon { [{}] = 1 } end, "canon: a table key of type table cannot be ordered")
    local loop = {}
    loop.self = loop
    assert.has_error(function() encoding.canon(loop) end)
  end)
end)

describe("the journal in a group commit", function()
  local dir, saved_root
  before_each(function()
    dir = h.tmpdir()
    saved_root = fs.root()
    fs.set_root(dir)
  end)
  after_each(function()
    fs.set_root(saved_root)
    h.rmrf(dir)
  end)

  it("lands once per commit, ahead of the files it names, with every record", function()
    fs.group_begin()
    local j = journal.open("spec")
    local files = { "/etc/spec/a", "/etc/spec/b", "/etc/spec/c" }
    for i, p in ipairs(files) do
      local data = "content " .. i
      assert(j:artifact(p, encoding.sha256_hex(data)))
      assert(fs.write(p, data, "0600"))
      assert.is_true(fs.pending(p))
    end
    assert(j:record("phase-a", "d1", {}))
    assert.is_true(fs.pending(j.path))
    assert(fs.group_end())
    local again = journal.open("spec")
    for i, p in ipairs(files) do
      assert.equal("content " .. i, h.read(dir .. p))
      assert.is_true(again:owns(p, "content " .. i), p)
    end
    assert.truthy(again.data.phases["phase-a"])
  end)

  it("a later commit in the same run carries the changes made since the first", function()
    fs.group_begin()
    local j = journal.open("spec")
    assert(j:artifact("/etc/spec/a", encoding.sha256_hex("1")))
    assert(fs.write("/etc/spec/a", "1", "0600"))
    assert(fs.commit())
    assert.is_false(fs.pending(j.path))
    assert(j:artifact("/etc/spec/b", encoding.sha256_hex("2")))
    assert.is_true(fs.pending(j.path)) -- saved at once: the first file of the next commit
    assert(fs.write("/etc/spec/b", "2", "0600"))
    assert(j:artifact("/etc/spec/c", encoding.sha256_hex("3")))
    assert(fs.write("/etc/spec/c", "3", "0600"))
    assert(fs.group_end())
    local again = journal.open("spec")
    for name, data in pairs { a = "1", b = "2", c = "3" } do
      assert.is_true(again:owns("/etc/spec/" .. name, data), name)
    end
  end)

  it("a pre-commit hook that fails keeps the files pending, and the group's end drops them", function()
    fs.group_begin()
    assert(fs.write("/etc/spec/a", "1", "0600"))
    local fail = true
    assert(fs.on_commit(function() if fail then error("hook refused", 0) end end))
    local ok, err = fs.commit()
    assert.is_nil(ok)
    assert.matches("hook refused", err, 1, true)
    assert.is_true(fs.pending("/etc/spec/a"))
    ok, err = fs.group_end()
    assert.is_nil(ok)
    assert.matches("hook refused", err, 1, true)
    assert.is_false(fs.pending("/etc/spec/a"))
    local left = io.popen("ls -A " .. h.q(dir .. "/etc/spec")):read("a")
    assert.equal("", left, "no file and no temp file left")
    fail = false
    assert(fs.write("/etc/spec/b", "2", "0600")) -- the group is over: this one lands at once
    assert.equal("2", h.read(dir .. "/etc/spec/b"))
    assert(fs.on_commit(nil))
  end)

  it("a journal that cannot be saved fails the commit, stays unsaved, and is saved by the next", function()
    fs.group_begin()
    local j = journal.open("spec")
    assert(j:artifact("/etc/spec/a", encoding.sha256_hex("1")))
    assert(fs.write("/etc/spec/a", "1", "0600"))
    assert(j:artifact("/etc/spec/b", encoding.sha256_hex("2"))) -- deferred: the journal waits in the group
    assert(fs.write("/etc/spec/b", "2", "0600"))
    j.data.unencodable = print -- its save now fails
    local ok, err = fs.commit()
    assert.is_nil(ok)
    assert.matches("serialise", err, 1, true)
    assert.is_true(fs.pending("/etc/spec/b"))
    j.data.unencodable = nil
    assert(fs.group_end()) -- the hook saves the journal it could not save before
    local again = journal.open("spec")
    assert.is_true(again:owns("/etc/spec/a", "1"))
    assert.is_true(again:owns("/etc/spec/b", "2"))
  end)
end)

describe("the journal's reader (journal.decode, journal.open)", function()
  local SUM = ("a"):rep(64)
  local function text(t) return cjson.encode(t) end
  local function base(extra)
    local t = { version = 1, command = "init", phases = { ["certs/ca"] = { digest = SUM, done = 1796609198,
      artifacts = { ["/etc/kubernetes/pki/ca.crt"] = SUM } } }, written = { ["/etc/kubernetes/pki/ca.crt"] = SUM } }
    for k, v in pairs(extra or {}) do t[k] = v end
    return t
  end

  it("accepts a journal as it is written, and refuses each wrong field by its name", function()
    local data = assert(journal.decode(text(base()), "init"))
    assert.equal(SUM, data.phases["certs/ca"].digest)
    local cases = {
      { {}, "it has no version or no phases" },
      { base { phases = "x" }, "phases is a string, not an object" },
      { base { phases = { ["certs/ca"] = { digest = cjson.null } } }, 'phases["certs/ca"].digest is null, not a string' },
      { base { phases = { ["certs/ca"] = { done = 1 } } }, 'phases["certs/ca"] has no digest' },
      { base { phases = { ["certs/ca"] = { digest = ("x"):rep(129) } } }, "not a string of at most 128 bytes" },
      { base { phases = { ["certs/ca"] = { digest = "d", done = -1 } } }, ".done is a number, not a time in seconds" },
      { base { phases = { ["certs/ca"] = { digest = "d", done = 1e15 } } }, ".done is a number, not a time in seconds" },
      { base { phases = { ["certs/ca"] = { digest = "d", x = 1 } } }, 'phases["certs/ca"] has an unknown field "x"' },
      { base { phases = { [("p"):rep(1025)] = { digest = "d" } } }, "phases has a name that is not a phase path: \"ppp" },
      { base { phases = { [""] = { digest = "d" } } }, 'phases has a name that is not a phase path: ""' },
      { base { written = { [""] = SUM } }, 'written has a file name that is not a path: ""' },
      { base { written = { ["/x\ny\0z"] = SUM } }, 'written has a file name that is not a path: "/x\\ny\\0z"' },
      { base { written = { ["/x"] = SUM:upper() } }, 'written["/x"] is a string, not a SHA-256 in hex' },
      { base { version = "1" }, "version is a string, and this moonadm reads version 1" },
      { base { command = 3 }, 'command is a number, not "init"' },
      { "[]", nil }, -- an empty array is an empty table: no version
    }
    for i, c in ipairs(cases) do
      local ok, err = journal.decode(type(c[1]) == "string" and c[1] or text(c[1]), "init")
      assert.is_nil(ok, "case " .. i)
      assert.truthy(err:find(c[2] or "it has no version or no phases", 1, true), ("case %d: %s"):format(i, err))
    end
    assert.equal("it is a string, not an object", select(2, journal.decode('"x"', "init")))
    assert.equal("it is empty", select(2, journal.decode("", "init")))
  end)

  it("caps the bytes, the entries of each map and the nesting", function()
    local ok, err = journal.decode((" "):rep(journal.MAX_BYTES + 1), "init")
    assert.is_nil(ok)
    assert.equal(("it is %d bytes, more than the %d a journal can be"):format(journal.MAX_BYTES + 1, journal.MAX_BYTES), err)
    local phases, written = {}, {}
    for i = 1, journal.MAX_PHASES + 1 do phases["p" .. i] = { digest = "d" } end
    for i = 1, journal.MAX_FILES + 1 do written["/f" .. i] = SUM end
    assert.equal(("phases has more than %d entries"):format(journal.MAX_PHASES),
      select(2, journal.decode(text(base { phases = phases }), "init")))
    assert.equal(("written has more than %d entries"):format(journal.MAX_FILES),
      select(2, journal.decode(text(base { written = written }), "init")))
    phases["p1"] = nil
    assert(journal.decode(text(base { phases = phases }), "init"))
    local deep = ("["):rep(journal.MAX_DEPTH + 1) .. ("]"):rep(journal.MAX_DEPTH + 1)
    assert.matches("^it is not JSON: Found too many nested data structures", select(2, journal.decode(deep, "init")))
    assert.matches("^it is not JSON: Found too many nested", select(2, journal.decode(("{\"a\":"):rep(1000), "init")))
    assert.equal(1000, cjson.decode_max_depth(), "the journal's lua-cjson settings are its own")
  end)

  it("open refuses a bad journal with the fix, and leaves it as it was", function()
    local dir, saved_root = h.tmpdir(), fs.root()
    fs.set_root(dir)
    h.write(dir .. journal.DIR .. "/init.json", text(base { phases = 5 }))
    local ok, err = pcall(journal.open, "init")
    fs.set_root(saved_root)
    local host = dir .. journal.DIR .. "/init.json"
    assert.is_false(ok)
    assert.equal("journal " .. host .. " cannot be used: phases is a number, not an object.", err:match("^[^\n]*"))
    assert.truthy(err:find("rm " .. host, 1, true))
    assert.is_nil(err:find("with --resume", 1, true))
    assert.equal(text(base { phases = 5 }), h.read(host))
    h.rmrf(dir)
  end)
end)

-- The crash sweeps below run bin/moonadm-hooks (engine/testhooks.h): once with a hook log, to learn
-- every file write (its rename), then killed right after each one in turn.
local HOOKS = h.hooks
local have_hooks = io.open(HOOKS, "r")
if have_hooks then have_hooks:close() end

-- run(env) -> exit code, output. Returns the hook log's write lines ({n, path}) of the clean run.
local function writes_of(dir, run)
  local code, out = run("MOONADM_HOOK_LOG=" .. h.q(dir .. "/hook.log"))
  assert.equal(0, code, out)
  local writes = {}
  for line in io.lines(dir .. "/hook.log") do
    local n, path = line:match("^write (%d+) (.+)$")
    if n then writes[#writes + 1] = { n = tonumber(n), path = path } end
  end
  return writes
end

-- Kills the run after each of its n writes and checks that every file left under etc/ is one the
-- journal on disk records with that content. Returns the count of files found after each kill.
local function sweep(dir, run, command, n)
  local found, saved_root = {}, fs.root()
  for k = 1, n do
    os.execute("rm -rf " .. h.q(dir .. "/root"))
    assert.equal(137, (run("MOONADM_CRASH_AFTER=write:" .. k)))
    fs.set_root(dir .. "/root")
    local j = journal.open(command)
    local p = io.popen("cd " .. h.q(dir .. "/root") .. " && find etc -type f ! -name '.*'")
    found[k] = 0
    for file in p:lines() do
      local path = "/" .. file
      found[k] = found[k] + 1
      if not j:owns(path, h.read(dir .. "/root" .. path)) then
        p:close()
        fs.set_root(saved_root)
        error(("crash after write %d: %s is not in the journal with its content"):format(k, path))
      end
    end
    p:close()
    fs.set_root(saved_root)
  end
  return found
end

describe("a run of more files than one commit holds, killed after any file write", function()
  -- tests/spec/fixtures/journal_writer.lua: 150 files through the journal (the group commits when
  -- it holds 128), then the file that opened the second commit rewritten, then the group's end.
  it("leaves only files the journal on disk records with their content", function()
    if not have_hooks then pending("bin/moonadm-hooks is missing (make test-hooks)") return end
    local dir = h.tmpdir()
    local function run(env)
      local _, _, code = os.execute(("env %s %s lua %s %s >%s/out 2>&1"):format(env, h.q(HOOKS),
        h.q(h.top .. "/tests/spec/fixtures/journal_writer.lua"), h.q(dir .. "/root"), h.q(dir)))
      return code, h.read(dir .. "/out")
    end
    local writes = writes_of(dir, run)
    assert.is_true(#writes > 150)
    sweep(dir, run, "writer", #writes)
    h.rmrf(dir)
  end)
end)

describe("certs all killed after any file write", function()
  it("leaves only files the journal on disk records as its own, and writes the journal once", function()
    if not have_hooks then pending("bin/moonadm-hooks is missing (make test-hooks)") return end
    local dir = h.tmpdir()
    h.write(dir .. "/c.yaml", ECDSA)
    local function run(env)
      local _, _, code = os.execute(("env %s %s init phase certs all --root %s --config %s >%s/out 2>&1"):format(env,
        h.q(HOOKS), h.q(dir .. "/root"), h.q(dir .. "/c.yaml"), h.q(dir)))
      return code, h.read(dir .. "/out")
    end
    local writes = writes_of(dir, run)
    local journal_writes = 0
    for _, w in ipairs(writes) do
      if w.path:match("/var/lib/moonadm/journal/init%.json$") then
        journal_writes = journal_writes + 1
        assert.equal(1, w.n, "the journal is renamed first")
      end
    end
    assert.equal(1, journal_writes, "one journal write for the run's one commit")
    assert.is_true(#writes > 20)
    local found = sweep(dir, run, "init", #writes)
    for k = 1, #writes do assert.equal(k - 1, found[k], "files left by a kill after write " .. k) end
    h.rmrf(dir)
  end)
end)
