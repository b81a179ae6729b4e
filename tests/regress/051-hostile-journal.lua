-- Issue 46, defect 6: the --resume journal (/var/lib/moonadm/journal/CMD.json) was read whole and
-- decoded with lua-cjson's defaults: a 400 MB one killed moonadm with SIGSEGV, and fields of the wrong
-- type gave raw Lua errors ("journal.lua:54: attempt to index a number value (field 'phases')") after
-- which the run advised --resume, which failed the same way. framework/journal.lua now caps it at
-- journal.MAX_BYTES before reading (a regular file only), decodes it with its own lua-cjson instance
-- (nesting capped at journal.MAX_DEPTH) and checks every field before use; a bad one is refused with
-- the file, what is wrong and the fix (remove it, run without --resume, or reset), never "--resume".
local h = require "helpers"
local cjson = require "cjson"
local core = require "moonadm.core"
local journal = require "framework.journal"

local CFG = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: ECDSA-P256\n"

describe("regress 051: hostile --resume journals", function()
  local dir, root, cfg, jhost, real
  setup(function()
    dir = h.tmpdir()
    root, cfg = dir .. "/root", dir .. "/c.yaml"
    h.write(cfg, CFG)
    local code, _, err = h.moonadm { "init", "phase", "certs", "all", "--root", root, "--config", cfg }
    assert.equal(0, code, err)
    jhost = root .. journal.DIR .. "/init.json"
    real = assert(h.read(jhost))
  end)
  teardown(function() h.rmrf(dir) end)
  after_each(function()
    os.execute("rm -rf " .. h.q(jhost))
    h.write(jhost, real)
    os.execute("chmod 0600 " .. h.q(jhost))
  end)

  local function plant(text)
    os.execute("rm -rf " .. h.q(jhost))
    h.write(jhost, text)
    os.execute("chmod 0600 " .. h.q(jhost))
  end

  -- the real journal with one change: edit(data)
  local function edited(edit)
    local data = cjson.decode(real)
    edit(data)
    return cjson.encode(data)
  end

  local function resume(...)
    return h.moonadm { "init", "phase", "certs", "all", "--root", root, "--config", cfg, ... }
  end

  local function refused(what, code, out, err)
    local text = out .. err
    assert.equal(1, code, text)
    assert.truthy(text:find("journal " .. jhost .. " cannot be used: " .. what, 1, true), text)
    assert.truthy(text:find("rm " .. jhost, 1, true), text)
    assert.truthy(text:find("without --resume", 1, true), text)
    assert.truthy(text:find("moonadm reset", 1, true), text)
    assert.is_nil(text:find("with --resume", 1, true), text)
    assert.is_nil(text:find("run the same command", 1, true), text)
    assert.is_nil(text:find("%.lua:%d+: "), text) -- no raw Lua error
    assert.is_nil(text:find("[certs]", 1, true), "refused before any phase ran")
  end

  it("a 400 MB journal (sparse) is refused at once, before it is read", function()
    plant("")
    assert(os.execute("truncate -s 400M " .. h.q(jhost)))
    local t0 = core.monotonic()
    local code, out, err = resume("--resume")
    assert.is_true(core.monotonic() - t0 < 2, "refused in under 2 s")
    refused("it is 419430400 bytes, larger than the " .. journal.MAX_BYTES .. " bytes allowed", code, out, err)
  end)

  it("a journal one byte over the cap is refused, though it is JSON", function()
    plant(real .. (" "):rep(journal.MAX_BYTES - #real + 1))
    refused(("it is %d bytes, larger than the %d bytes allowed"):format(journal.MAX_BYTES + 1, journal.MAX_BYTES),
      resume("--resume"))
  end)

  it("fields of the wrong type are refused, naming the field, with or without --resume", function()
    local cases = {
      { "phases is a number, not an object", function(d) d.phases = 5 end },
      { 'phases["certs/ca"] is a number, not an object', function(d) d.phases["certs/ca"] = 7 end },
      { 'phases["certs/ca"].digest is a number, not a string', function(d) d.phases["certs/ca"].digest = 1 end },
      { 'phases["certs/ca"].done is a string, not a time', function(d) d.phases["certs/ca"].done = "yesterday" end },
      { 'phases["certs/ca"].artifacts is a boolean, not an object', function(d) d.phases["certs/ca"].artifacts = true end },
      { 'written["/etc/kubernetes/pki/ca.crt"] is a number, not a SHA-256', function(d) d.written["/etc/kubernetes/pki/ca.crt"] = 0 end },
      { "written is an array, not an object", function(d) d.written = { 1, 2 } end },
      { "version is 2, and this moonadm reads version 1", function(d) d.version = 2 end },
      { 'command is "join", not "init"', function(d) d.command = "join" end },
      { 'it has an unknown field "extra"', function(d) d.extra = {} end },
    }
    for i, c in ipairs(cases) do
      plant(edited(c[2]))
      refused(c[1], resume(i % 2 == 0 and "--resume" or nil))
    end
    plant("[1, 2]")
    refused("the journal is an array, not an object", resume("--resume")) -- a table whose keys give it away
  end)

  it("deep nesting, not JSON, empty, a FIFO or a directory: refused, nothing hangs or crashes", function()
    local cases = {
      { "it is not JSON: Found too many nested data structures", ("["):rep(200000) },
      { "it is not JSON: Found too many nested data structures", edited(function(d)
        d.phases["certs/ca"].artifacts = { x = { y = { z = { w = { v = {} } } } } }
      end) },
      { "it is not JSON", real:sub(1, #real // 2) },
      { "it is empty", "" },
    }
    for _, c in ipairs(cases) do
      plant(c[2])
      refused(c[1], resume("--resume"))
    end
    plant("")
    os.remove(jhost)
    assert(os.execute("mkfifo " .. h.q(jhost)))
    refused("it is a FIFO, not a regular file", resume("--resume"))
    os.remove(jhost)
    assert(os.execute("mkdir -m 0700 " .. h.q(jhost)))
    refused("it is a directory, not a regular file", resume("--resume"))
  end)

  it("a refused journal is left as it was; removing it, as the message says, lets the run go on", function()
    local bad = edited(function(d) d.phases = 5 end)
    plant(bad)
    refused("phases is a number", resume("--resume"))
    assert.equal(bad, h.read(jhost))
    os.remove(jhost)
    local code, out, err = resume()
    assert.equal(0, code, out .. err)
    assert.truthy(h.read(jhost), "a new journal")
  end)
end)
