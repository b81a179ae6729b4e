-- The bindings' one error convention (bindings/bindings.h): an operational failure returns exactly
-- nil, a message and a code, the errno's symbolic name when a system call failed, else a kind word.
-- Each module below fails for real: a missing file, a refused connection, a bad PEM, broken YAML...
local h = require "helpers"
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local proc = require "moonadm.proc"
local net = require "moonadm.net"
local api = require "moonadm.api"
local etcd = require "moonadm.etcd"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"

-- Checks a failure's results: exactly three values (nil, message, code) unless `extra` more follow;
-- the code equals want when want is given. Returns the message and the code.
local function failure(want, extra, ...)
  assert.equal(3 + extra, select("#", ...), "the number of values returned")
  local v, msg, code = ...
  assert.is_nil(v)
  assert.is_string(msg)
  assert.is_true(#msg > 0, "an empty message")
  assert.is_string(code)
  assert.is_true(#code > 0, "an empty code")
  if want then assert.equal(want, code, msg) end
  return msg, code
end
local function fails(want, ...) return failure(want, 0, ...) end

-- A port on 127.0.0.1 that nothing listens on: one the kernel gave out and that was closed again.
local function closed_port()
  local l = assert(net.listen("127.0.0.1", 0))
  local port = l:port()
  l:close()
  return port
end

describe("bindings' failures: nil, message, code", function()
  local dir, saved_root
  setup(function()
    dir = h.tmpdir()
    saved_root = fs.root()
    fs.set_root(dir)
  end)
  teardown(function()
    fs.set_root(saved_root)
    h.rmrf(dir)
  end)

  it("fs: a system call's failure carries its errno's name", function()
    fails("ENOENT", fs.read("/missing"))
    fails("ENOENT", fs.stat("/missing"))
    fails("ENOENT", fs.list("/missing"))
    fails("ENOENT", fs.readlink("/missing"))
    assert(fs.write("/file", "x", "0600"))
    fails("ENOTDIR", fs.read("/file/below"))
    fails("EISDIR", fs.read_regular(dir, 100))
    fails("error", fs.path("/../../outside"))
  end)

  it("fs.lock: a held lock is code \"locked\", then the holder's pid", function()
    local l1 = assert(fs.lock("/lock"))
    local msg, _ = failure("locked", 1, fs.lock("/lock"))
    assert.matches("is locked by", msg, 1, true)
    assert.equal(core.getpid(), select(4, fs.lock("/lock")))
    l1:release()
    local l2 = assert(fs.lock("/lock"))
    l2:release()
  end)

  it("proc: waiting for a process that is not a child is ECHILD", function()
    fails("ECHILD", proc.wait(core.getpid(), true))
    fails("error", proc.signal(-5, "TERM"))
  end)

  it("net: a port already bound is EADDRINUSE", function()
    local l = assert(net.listen("127.0.0.1", 0))
    fails("EADDRINUSE", net.listen("127.0.0.1", l:port()))
    l:close()
    fails("error", net.port_free("300.1.1.1", 80))
  end)

  it("api: a refused connection is \"connect\", a bad option \"options\"", function()
    local c = assert(api.new { server = "https://127.0.0.1:" .. closed_port(), insecure = true, connect_timeout = 5 })
    fails("connect", c:request { path = "/healthz", timeout = 5 })
    c:close()
    fails("options", api.new { server = "ftp://127.0.0.1" })
  end)

  it("etcd: no endpoint answering is \"unreachable\", a bad option \"options\"", function()
    local c = assert(etcd.new { endpoints = { "https://127.0.0.1:" .. closed_port() }, dial_timeout = 5 })
    fails("unreachable", c:member_list())
    c:close()
    fails("options", etcd.new { endpoints = { "ftp://127.0.0.1" } })
    fails("malformed", etcd.id_from_hex("not hex"))
  end)

  it("pki: bad PEM is \"malformed\", or what OpenSSL said (\"openssl\")", function()
    fails("malformed", pki.read_cert("no pem here"))
    fails("malformed", pki.read_key("-----BEGIN PRIVATE KEY-----\nAAAA\n"))
    fails("openssl", pki.read_cert("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n"))
    fails("malformed", pki.seal("xyz", "plain text"))
  end)

  it("yaml: broken YAML is \"malformed\"", function()
    local msg = fails("malformed", yaml.decode("a: [1, 2\nb: c\n", "broken.yaml"))
    assert.matches("broken.yaml:", msg, 1, true)
    fails("malformed", yaml.decode("a: 1\na: 2\n"))
  end)

  it("encoding: bad base64 is \"malformed\"", function()
    fails("malformed", encoding.base64_decode("@@@@"))
    fails("malformed", encoding.base64_decode("QUJD="))
  end)
end)
