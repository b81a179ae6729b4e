-- The CA rotation's pieces that need no cluster (scripts/rotation/): which CAs --ca names, and the
-- rotation's Secret written and read back (the new CA key sealed, the stages, who is behind).
local cas = require "rotation.cas"
local state = require "rotation.state"
local pki = require "moonadm.pki"
local encoding = require "moonadm.encoding"

describe("rotation", function()
  it("reads --ca: front-proxy, etcd, all; refuses the CA not built yet and unknown names, saying which", function()
    assert.same({ "front-proxy" }, (cas.parse("front-proxy")))
    assert.same({ "front-proxy", "etcd" }, (cas.parse("etcd,front-proxy")))
    assert.same({ "front-proxy", "etcd" }, (cas.parse("all,etcd")))
    assert.same({ "etcd", "kube-apiserver" }, cas.restarts { "front-proxy", "etcd" })
    assert.same({}, cas.restarts { "front-proxy" })
    local none, err = cas.parse("ca")
    assert.is_nil(none)
    assert.truthy(err:find("front-proxy and etcd CAs so far", 1, true), err)
    none, err = cas.parse("front-proxy,bogus")
    assert.is_nil(none)
    assert.truthy(err:find('unknown CA "bogus"', 1, true), err)
    assert.is_nil((cas.parse("")))
  end)

  it("writes the rotation's Secret and reads it back: the key opens only with the certificate key", function()
    local k = assert(pki.generate_key("ECDSA-P256"))
    local now = os.time()
    local ca = assert(pki.create_ca(k, { cn = "front-proxy-ca", is_ca = true, not_before = now, not_after = now + 3600 }))
    local old = assert(pki.create_ca(assert(pki.generate_key("ECDSA-P256")),
      { cn = "front-proxy-ca", is_ca = true, not_before = now, not_after = now + 3600 }))
    local key = pki.certificate_key()
    local obj = state.object({ id = "x", cas = { "front-proxy" }, started = "2026-12-08T00:00:00Z", by = "cp1",
      control_planes = { "cp1", "cp2" }, old_key_kept = true },
      { ["front-proxy"] = { old_crt = assert(old:pem()), new_crt = assert(ca:pem()), new_key_pem = assert(k:pem()) } }, key)
    obj.data["node.cp2"] = encoding.base64_encode("issued")
    assert.is_nil(tostring(obj.data["front-proxy.new.key"]):find("PRIVATE", 1, true))
    local fake = { get = function() return obj end }
    local r = state.read(fake)
    assert.same({ cp1 = "none", cp2 = "issued" }, r.stages)
    assert.same({ "cp1" }, state.behind(r, "trust-both"))
    assert.same({}, state.behind(r, "none"))
    assert.truthy(state.new_key(r, "front-proxy", key):matches(ca))
    local ok, err = pcall(state.new_key, r, "front-proxy", pki.certificate_key())
    assert.is_false(ok)
    assert.truthy(tostring(err):find("does not open", 1, true), err)
    ok, err = pcall(state.new_key, r, "front-proxy", nil)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("pass --certificate-key", 1, true), err)
    local good = obj.data["front-proxy.old.crt"]
    obj.data["front-proxy.old.crt"] = encoding.base64_encode("not a certificate")
    ok, err = pcall(state.read, fake)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("data.front-proxy.old.crt is not one CA certificate", 1, true), err)
    obj.data["front-proxy.old.crt"] = good
    obj.data["node.cp1"] = encoding.base64_encode("sideways")
    ok, err = pcall(state.read, fake)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('unknown stage "sideways"', 1, true), err)
  end)
end)
