-- moonadm.pki: the Lua view of the crypto primitives, checked against the openssl CLI where it helps.
local pki = require "moonadm.pki"
local helpers = require "helpers"
local encoding = require "moonadm.encoding"

local sh, write = helpers.sh, helpers.write

describe("moonadm.pki", function()
  local dir, cakey, leafkey, ca, leaf
  local now = os.time()

  setup(function()
    dir = helpers.tmpdir()
    local keys = assert(pki.generate_keys({ "RSA-2048", "ECDSA-P256" }))
    cakey, leafkey = keys[1], keys[2]
    ca = assert(pki.create_ca(cakey, { cn = "kubernetes", dns = { "kubernetes" },
      not_before = now - 300, not_after = now + 87600 * 3600 }))
    leaf = assert(pki.sign_cert(leafkey, {
      cn = "kube-apiserver", ext_usages = { "server_auth" },
      dns = { "cp1", "kubernetes", "kubernetes.default" }, ips = { "10.96.0.1", "::1" },
      not_before = now - 300, not_after = now + 8760 * 3600,
    }, ca, cakey))
    write(dir .. "/ca.crt", ca:pem())
    write(dir .. "/leaf.crt", leaf:pem())
  end)

  teardown(function() helpers.rmrf(dir) end)

  describe("keys", function()
    it("generates every kubeadm algorithm", function()
      assert.same({ "RSA-2048", "RSA-3072", "RSA-4096", "ECDSA-P256", "ECDSA-P384" }, pki.algorithms)
      for alg, want in pairs { ["RSA-2048"] = { "RSA", 2048 }, ["ECDSA-P256"] = { "ECDSA", 256 },
                               ["ECDSA-P384"] = { "ECDSA", 384 } } do
        local k = assert(pki.generate_key(alg))
        assert.same(want, { k:type(), k:bits() })
        assert.is_true(k:is_private())
      end
    end)

    it("rejects an unknown algorithm with the valid names", function()
      local k, err = pki.generate_key("ECDSA-P521")
      assert.is_nil(k)
      assert.matches("ECDSA%-P521", err)
      assert.matches("RSA%-2048, RSA%-3072, RSA%-4096, ECDSA%-P256, ECDSA%-P384", err)
      local ks, err2 = pki.generate_keys({ "RSA-2048", "bogus" })
      assert.is_nil(ks)
      assert.matches("bogus", err2)
    end)

    it("generates a batch in parallel, all different", function()
      local ks = assert(pki.generate_keys({ "RSA-2048", "RSA-2048", "RSA-2048", "ECDSA-P256" }))
      assert.equal(4, #ks)
      for i = 1, 4 do for j = 1, i - 1 do assert.is_false(ks[i]:equals(ks[j])) end end
      assert.same({}, assert(pki.generate_keys({})))
    end)

    it("writes PKCS#1 / SEC1 / PKIX PEM that openssl accepts and reads it back", function()
      for _, c in ipairs { { "RSA-2048", "RSA PRIVATE KEY", "rsa" }, { "ECDSA-P384", "EC PRIVATE KEY", "ec" } } do
        local k = assert(pki.generate_key(c[1]))
        local pem = k:pem()
        assert.equal("-----BEGIN " .. c[2] .. "-----", pem:match("^[^\n]+"))
        write(dir .. "/k.pem", pem)
        assert.equal(0, (sh("openssl " .. c[3] .. " -check -noout -in " .. dir .. "/k.pem")))
        assert.is_true(assert(pki.read_key(pem)):equals(k))
        local pub = k:public_pem()
        assert.equal("-----BEGIN PUBLIC KEY-----", pub:match("^[^\n]+"))
        local pk = assert(pki.read_public_key(pub))
        assert.is_false(pk:is_private())
        assert.is_true(pk:equals(k))
        local none, err = pk:pem()
        assert.is_nil(none)
        assert.matches("no private part", err)
      end
    end)

    it("says what is wrong with bad PEM", function()
      local pem = cakey:pem()
      local _, err = pki.read_key(pem:sub(1, #pem // 2))
      assert.matches("truncated PEM", err)
      _, err = pki.read_key(ca:pem())
      assert.matches("no private key found in PEM data %(found CERTIFICATE%)", err)
      _, err = pki.read_key("")
      assert.matches("no PEM data", err)
      _, err = pki.read_cert(pem)
      assert.matches("no certificate found", err)
      _, err = pki.read_key(pem:gsub("\n[A-Za-z0-9+/]", "\n!", 3))
      assert.matches("malformed RSA PRIVATE KEY", err)
    end)

    it("raises on use after close, and closes with <close>", function()
      local k = assert(pki.generate_key("ECDSA-P256"))
      do
        local k2 <close> = k
      end
      assert.equal("pki.key (closed)", tostring(k))
      assert.has_error(function() k:pem() end, "attempt to use a closed key")
      assert.has_error(function() pki.create_ca("nope", {}) end)
    end)
  end)

  -- SECURITY.md, "Key generation": moonadm's generator by default, OpenSSL's on request and in FIPS mode.
  describe("the RSA generator", function()
    -- a command's exit code and all it printed
    local function run(bin, args, env)
      local parts = { "env" }
      for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. helpers.q(v) end
      parts[#parts + 1] = helpers.q(bin)
      for _, a in ipairs(args) do parts[#parts + 1] = helpers.q(a) end
      local p = io.popen(table.concat(parts, " ") .. " 2>&1")
      local out = p:read("a")
      local _, _, code = p:close()
      return code, out
    end
    local function certs_ca(bin, root, more, env)
      local args = { "init", "phase", "certs", "ca", "--root", root, "-v", "1" }
      for _, a in ipairs(more or {}) do args[#args + 1] = a end
      return run(bin, args, env)
    end
    local hooks = helpers.hooks
    local have_hooks = io.open(hooks, "r")
    if have_hooks then have_hooks:close() end

    it("is moonadm's by default, OpenSSL's on request, and says why", function()
      if os.getenv("MOONADM_RSA_GENERATOR") then pending("MOONADM_RSA_GENERATOR is set") return end
      assert.same({ "moonadm", "the default" }, { pki.rsa_generator() })
      assert.same({ "openssl", "--rsa-generator openssl" }, { pki.rsa_generator("openssl", "--rsa-generator") })
      local k = assert(pki.generate_key("RSA-2048"))
      assert.same({ "RSA", 2048 }, { k:type(), k:bits() })
      write(dir .. "/ossl.pem", k:pem())
      assert.equal(0, (sh("openssl pkey -check -noout -in " .. dir .. "/ossl.pem")))
      local none, err = pki.rsa_generator("gmp", "--rsa-generator")
      assert.is_nil(none)
      assert.equal("--rsa-generator gmp: the RSA key generator is moonadm or openssl", err)
      none, err = pki.generate_key("RSA-2048")
      assert.is_nil(none)
      assert.equal("--rsa-generator gmp: the RSA key generator is moonadm or openssl", err)
      assert.same({ "moonadm", "--rsa-generator moonadm" }, { pki.rsa_generator("moonadm", "--rsa-generator") })
    end)

    it("is named at -v 1 and chosen by --rsa-generator or MOONADM_RSA_GENERATOR; a wrong one writes nothing", function()
      local root = helpers.tmpdir()
      local code, out = certs_ca(helpers.bin, root .. "/a", {}, { MOONADM_RSA_GENERATOR = "" })
      assert.equal(0, code, out)
      assert.matches("%[certs%] RSA keys: the moonadm generator %(the default%)", out)
      code, out = certs_ca(helpers.bin, root .. "/b", { "--rsa-generator", "openssl" })
      assert.equal(0, code, out)
      assert.matches("%[certs%] RSA keys: the openssl generator %(%-%-rsa%-generator openssl%)", out)
      assert.equal(0, (sh("openssl pkey -check -noout -in " .. root .. "/b/etc/kubernetes/pki/ca.key")))
      code, out = certs_ca(helpers.bin, root .. "/c", {}, { MOONADM_RSA_GENERATOR = "openssl" })
      assert.equal(0, code, out)
      assert.matches("the openssl generator %(MOONADM_RSA_GENERATOR=openssl%)", out)
      code, out = certs_ca(helpers.bin, root .. "/d", {}, { MOONADM_RSA_GENERATOR = "fast" })
      assert.equal(1, code, out)
      assert.matches("MOONADM_RSA_GENERATOR=fast: the RSA key generator is moonadm or openssl", out)
      assert.is_nil(io.open(root .. "/d/etc/kubernetes/pki/ca.key"))
      code, out = certs_ca(helpers.bin, root .. "/e", { "--rsa-generator", "fast" })
      assert.equal(1, code, out)
      assert.matches("%-%-rsa%-generator fast: the RSA key generator is moonadm or openssl", out)
      assert.is_nil(io.open(root .. "/e/etc/kubernetes/pki/ca.key"))
      code, out = run(helpers.bin, { "init", "phase", "certs", "all", "--help" })
      assert.equal(0, code, out)
      assert.matches("%-%-rsa%-generator string +Which generator makes RSA keys: moonadm .- or openssl .-%(default: %$MOONADM_RSA_GENERATOR or moonadm%)", out)
      helpers.rmrf(root)
    end)

    it("is OpenSSL's in FIPS mode, where asking for moonadm's is an error (hooked build)", function()
      if not have_hooks then pending(hooks .. " is missing (make test-hooks)") return end
      local root = helpers.tmpdir()
      local code, out = certs_ca(hooks, root .. "/a", {}, { MOONADM_HOOK_FIPS = "1" })
      assert.equal(0, code, out)
      assert.matches("the openssl generator %(FIPS mode: /proc/sys/crypto/fips_enabled is 1%)", out)
      assert.equal(0, (sh("openssl pkey -check -noout -in " .. root .. "/a/etc/kubernetes/pki/ca.key")))
      code, out = certs_ca(hooks, root .. "/b", { "--rsa-generator", "moonadm" }, { MOONADM_HOOK_FIPS = "1" })
      assert.equal(1, code, out)
      assert.matches("%-%-rsa%-generator moonadm: FIPS mode: /proc/sys/crypto/fips_enabled is 1, where RSA keys come from OpenSSL's generator", out)
      code, out = certs_ca(hooks, root .. "/c", {}, { MOONADM_HOOK_FIPS = "1", MOONADM_RSA_GENERATOR = "moonadm" })
      assert.equal(1, code, out)
      assert.matches("MOONADM_RSA_GENERATOR=moonadm: FIPS mode", out)
      assert.is_nil(io.open(root .. "/c/etc/kubernetes/pki/ca.key"))
      helpers.rmrf(root)
    end)

    it("refuses, by its pair-wise test, every key whose parts disagree, from either generator (hooked build)", function()
      if not have_hooks then pending(hooks .. " is missing (make test-hooks)") return end
      local root = helpers.tmpdir()
      for i, c in ipairs { { "d" }, { "dp" }, { "dq" }, { "qinv" }, { "n" }, { "dp", "openssl" } } do
        local dest = root .. "/" .. i
        local code, out = certs_ca(hooks, dest, { "--rsa-generator", c[2] or "moonadm" }, { MOONADM_RSA_FAULT = c[1] })
        assert.equal(1, code, out)
        assert.matches("an RSA%-2048 key made here is refused: it fails the pair%-wise consistency test %(SP 800%-56B, 6%.3%.1%.3 step 6%)", out)
        assert.is_nil(io.open(dest .. "/etc/kubernetes/pki/ca.key"), c[1])
      end
      local code, out = certs_ca(hooks, root .. "/ok", {})
      assert.equal(0, code, out)
      helpers.rmrf(root)
    end)
  end)

  describe("certificates", function()
    it("makes kubeadm's CA and leaf layout", function()
      local ci, li = ca:info(), leaf:info()
      assert.same({ cn = "kubernetes", o = {} }, ci.subject)
      assert.same(ci.subject, ci.issuer)
      assert.is_true(ci.is_ca)
      assert.same({ "digital_signature", "key_encipherment", "cert_sign" }, ci.usages)
      assert.same({}, ci.ext_usages)
      assert.same({ "kubernetes" }, ci.dns)
      assert.equal(now - 300, ci.not_before)
      assert.equal(now + 87600 * 3600, ci.not_after)
      assert.equal("", ci.aki)
      assert.equal(40, #ci.ski)
      assert.equal("RSA", ci.key_type)
      assert.equal(2048, ci.key_bits)
      assert.is_false(li.is_ca)
      assert.same({ "digital_signature", "key_encipherment" }, li.usages)
      assert.same({ "server_auth" }, li.ext_usages)
      assert.same({ "cp1", "kubernetes", "kubernetes.default" }, li.dns)
      assert.same({ "10.96.0.1", "::1" }, li.ips)
      assert.equal(ci.ski, li.aki)
      assert.equal("ECDSA", li.key_type)
      assert.matches("^%x+$", li.serial)
      assert.is_true(#li.serial <= 16) -- < 2^63
    end)

    it("defaults times from the CA and O values to the subject", function()
      local c = assert(pki.sign_cert(leafkey, { cn = "kubernetes-admin", o = { "kubeadm:cluster-admins" },
        ext_usages = { "client_auth" } }, ca, cakey))
      local i = c:info()
      assert.same({ cn = "kubernetes-admin", o = { "kubeadm:cluster-admins" } }, i.subject)
      assert.equal(ca:info().not_before, i.not_before)
      assert.equal(i.not_before + 8760 * 3600, i.not_after)
    end)

    it("is accepted by openssl verify", function()
      assert.equal(0, (sh("openssl verify -CAfile " .. dir .. "/ca.crt " .. dir .. "/leaf.crt")))
    end)

    it("verifies chains, times and CA-ness", function()
      assert.is_true(leaf:verify(ca))
      local ok, err = leaf:verify(ca, { at = now + 2 * 8760 * 3600 })
      assert.is_nil(ok)
      assert.matches("expired", err)
      assert.is_true(leaf:verify(ca, { check_time = false, at = now + 2 * 8760 * 3600 }))
      local other = assert(pki.create_ca(assert(pki.generate_key("ECDSA-P256")), { cn = "kubernetes" }))
      ok, err = leaf:verify(other)
      assert.is_nil(ok)
      assert.matches("does not verify against CA CN=kubernetes", err)
      ok, err = other:verify(leaf)
      assert.is_nil(ok)
      assert.matches("certificate CN=kube%-apiserver is not a CA", err)
      ok, err = pki.sign_cert(leafkey, { cn = "x", ext_usages = { "client_auth" } }, leaf, leafkey)
      assert.is_nil(ok)
      assert.matches("is not a CA", err)
    end)

    it("verifies through intermediates", function()
      local ik = assert(pki.generate_key("ECDSA-P256"))
      local inter = assert(pki.sign_cert(ik, { cn = "inter", is_ca = true }, ca, cakey))
      local c = assert(pki.sign_cert(leafkey, { cn = "x", ext_usages = { "client_auth" } }, inter, ik))
      assert.is_true(c:verify(ca, { intermediates = { inter } }))
      assert.is_nil((c:verify(ca)))
    end)

    it("checks DNS and IP coverage and key matching", function()
      assert.is_true(leaf:covers("cp1"))
      assert.is_true(leaf:covers("10.96.0.1"))
      assert.is_true(leaf:covers("0:0:0:0:0:0:0:1"))
      local ok, err = leaf:covers("kube-apiserver")
      assert.is_false(ok)
      assert.matches("not valid for", err)
      assert.is_true(leaf:matches(leafkey))
      assert.is_true(leafkey:matches(leaf))
      ok, err = leaf:matches(cakey)
      assert.is_false(ok)
      assert.matches("does not match", err)
    end)

    it("pins the SPKI as the openssl pipeline does", function()
      local _, want = sh("openssl x509 -pubkey -noout -in " .. dir .. "/ca.crt | openssl pkey -pubin -outform der"
        .. " | openssl dgst -sha256 -hex | sed 's/^.* //'")
      assert.equal("sha256:" .. want:match("^(%x+)\n$"), ca:pin())
    end)

    it("reads chains", function()
      local certs = assert(pki.read_certs(leaf:pem() .. ca:pem()))
      assert.equal(2, #certs)
      assert.equal("kube-apiserver", certs[1]:info().subject.cn)
      assert.equal("kubernetes", assert(pki.read_cert(leaf:pem() .. ca:pem())):info().issuer.cn)
    end)

    it("rejects bad specs", function()
      local c, err = pki.sign_cert(leafkey, { cn = "x" }, ca, cakey)
      assert.is_nil(c)
      assert.matches("at least one extended key usage", err)
      c, err = pki.sign_cert(leafkey, { cn = "x", ext_usages = { "server_auth" }, ips = { "1.2.3" } }, ca, cakey)
      assert.is_nil(c)
      assert.matches('invalid IP address "1.2.3"', err)
      assert.has_error(function() pki.create_ca(cakey, { cn = "x", usages = { "signing" } }) end)
      assert.has_error(function() pki.create_ca(cakey, { cn = "x", dns = { 1 } }) end)
    end)
  end)

  describe("CSRs", function()
    it("round-trips subject, SANs and key, and can be signed", function()
      local pem = assert(pki.create_csr(leafkey, { cn = "system:node:n1", o = { "system:nodes" },
        dns = { "n1" }, ips = { "192.0.2.135" } }))
      assert.equal("-----BEGIN CERTIFICATE REQUEST-----", pem:match("^[^\n]+"))
      local info, pub = assert(pki.parse_csr(pem))
      assert.same({ cn = "system:node:n1", o = { "system:nodes" } }, info.subject)
      assert.same({ "n1" }, info.dns)
      assert.same({ "192.0.2.135" }, info.ips)
      assert.is_true(pub:equals(leafkey))
      local c = assert(pki.sign_cert(pub, { cn = info.subject.cn, o = info.subject.o,
        ext_usages = { "client_auth" } }, ca, cakey))
      assert.is_true(c:matches(leafkey))
    end)
  end)

  describe("bootstrap token JWS", function()
    local content = "Hello from the other side. I must have called a thousand times."
    it("matches the cluster-bootstrap test vectors", function()
      assert.equal("eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8",
        pki.jws_sign(content, "joshua", "my voice is my passcode"))
      assert.equal("eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk",
        pki.jws_sign("", "joshua", "my voice is my passcode"))
      assert.equal("eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8",
        pki.jws_sign(content, "joshua", ""))
    end)
    it("verifies and rejects", function()
      local jws = pki.jws_sign(content, "abcdef", "0123456789abcdef")
      assert.is_true(pki.jws_verify(content, "abcdef", "0123456789abcdef", jws))
      local ok, err = pki.jws_verify(content .. " ", "abcdef", "0123456789abcdef", jws)
      assert.is_false(ok)
      assert.matches("does not match", err)
      assert.is_false((pki.jws_verify(content, "abcdef", "0123456789abcdee", jws)))
    end)
  end)

  describe("copy-certs AES-GCM", function()
    it("round-trips with nonce(12) || ciphertext || tag(16) and rejects tampering", function()
      local key = pki.certificate_key()
      assert.matches("^" .. ("%x"):rep(64) .. "$", key)
      local blob = assert(pki.seal(key, "secret key material"))
      assert.equal(12 + 19 + 16, #blob)
      assert.equal("secret key material", pki.open(key, blob))
      for _, pos in ipairs { 1, 13, #blob } do
        local bad = blob:sub(1, pos - 1) .. string.char(blob:byte(pos) ~ 1) .. blob:sub(pos + 1)
        local pt, err = pki.open(key, bad)
        assert.is_nil(pt)
        assert.matches("authentication failed", err)
      end
      assert.is_nil((pki.open(pki.certificate_key(), blob)))
      local _, err = pki.seal("xyz", "x")
      assert.matches("certificate key: invalid hex", err)
    end)
  end)

  describe("random and hashes", function()
    it("makes tokens, keys and bytes", function()
      assert.matches("^[a-z0-9]+$", pki.token_id())
      assert.equal(6, #pki.token_id())
      assert.matches("^[a-z0-9]+$", pki.token_secret())
      assert.equal(16, #pki.token_secret())
      assert.equal(16, #pki.random_bytes(16))
      assert.matches("^" .. ("%x"):rep(20) .. "$", pki.random_hex(10))
      assert.are_not.equal(pki.random_hex(16), pki.random_hex(16))
    end)
    it("hashes with SHA-256", function()
      assert.equal("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", encoding.sha256_hex("abc"))
    end)
  end)
end)
