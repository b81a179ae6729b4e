-- `moonadm init phase certs`: every certificate field by field against kubeadm's tables
-- (../shared/reference/kubeadm-pki.md §1), openssl chains, re-run rules, bad input.
local pki = require "moonadm.pki"
local helpers = require "helpers"

local q, sh, snapshot = helpers.q, helpers.sh, helpers.snapshot
-- The reference kubeadm (lab/build-bins.sh), for the tests that hand it moonadm's PKI.
local KUBEADM = helpers.lab_bin .. "/kubeadm"
local with_kubeadm = helpers.when_built(KUBEADM, "make lab-bins", it, pending)

local CFG = [[
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.0.2.135
nodeRegistration:
  name: cp1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
controlPlaneEndpoint: lb.example.com:6443
apiServer:
  certSANs: ["192.0.2.135", "api.example.com", "*.apps.example.com", "fd00::0001"]
etcd:
  local:
    serverCertSANs: ["etcd.example.com"]
    peerCertSANs: ["192.0.2.109"]
%s
]]

local function cfgfile(dir, extra, addr)
  local p = dir .. "/kubeadm.yaml"
  local text = CFG:format(extra or "")
  if addr then text = text:gsub("advertiseAddress: 192.0.2.135", "advertiseAddress: " .. addr) end
  helpers.write(p, text)
  return p
end

local function certs(root, cfg, ...)
  return helpers.moonadm({ "init", "phase", "certs", ..., "--root", root, "--config", cfg })
end

local function pkipath(root, f) return root .. "/etc/kubernetes/pki/" .. f end
local function info(root, f) return assert(pki.read_cert(assert(helpers.read(pkipath(root, f))))):info() end


describe("init phase certs", function()
  local dir, root, cfg, out
  setup(function()
    dir = helpers.tmpdir()
    root = dir .. "/root"
    cfg = cfgfile(dir)
    local code, err
    code, out, err = certs(root, cfg, "all")
    assert.equal(0, code, err)
  end)
  teardown(function() helpers.rmrf(dir) end)

  it("prints kubeadm's lines, serving SANs included", function()
    assert.matches('%[certs%] Using certificateDir folder "/etc/kubernetes/pki"', out)
    assert.matches('%[certs%] Generating "etcd/ca" certificate and key', out)
    assert.matches("%[certs%] apiserver serving cert is signed for DNS names %[%*%.apps%.example%.com api%.example%.com " ..
      "cp1 kubernetes kubernetes%.default kubernetes%.default%.svc kubernetes%.default%.svc%.cluster%.local " ..
      "lb%.example%.com%] and IPs %[10%.96%.0%.1 192%.0%.2%.135 fd00::1%]", out)
    assert.matches("%[certs%] etcd/server serving cert is signed for DNS names %[cp1 etcd%.example%.com localhost%] " ..
      "and IPs %[192%.0%.2%.135 127%.0%.0%.1 ::1%]", out)
    assert.matches("%[certs%] etcd/peer serving cert is signed for DNS names %[cp1 localhost%] " ..
      "and IPs %[192%.0%.2%.135 127%.0%.0%.1 ::1 192%.0%.2%.109%]", out)
    assert.matches('%[certs%] Generating "sa" key and public key', out)
  end)

  it("makes every certificate of the reference table, field by field", function()
    local want = {
      ["ca.crt"] = { cn = "kubernetes", o = {}, ca = true, issuer = "kubernetes" },
      ["apiserver.crt"] = { cn = "kube-apiserver", o = {}, eku = { "server_auth" }, issuer = "kubernetes" },
      ["apiserver-kubelet-client.crt"] = { cn = "kube-apiserver-kubelet-client", o = { "kubeadm:cluster-admins" },
        eku = { "client_auth" }, issuer = "kubernetes", dns = {}, ips = {} },
      ["front-proxy-ca.crt"] = { cn = "front-proxy-ca", o = {}, ca = true, issuer = "front-proxy-ca" },
      ["front-proxy-client.crt"] = { cn = "front-proxy-client", o = {}, eku = { "client_auth" },
        issuer = "front-proxy-ca", dns = {}, ips = {} },
      ["etcd/ca.crt"] = { cn = "etcd-ca", o = {}, ca = true, issuer = "etcd-ca" },
      ["etcd/server.crt"] = { cn = "cp1", o = {}, eku = { "server_auth", "client_auth" }, issuer = "etcd-ca",
        dns = { "cp1", "etcd.example.com", "localhost" }, ips = { "192.0.2.135", "127.0.0.1", "::1" } },
      ["etcd/peer.crt"] = { cn = "cp1", o = {}, eku = { "server_auth", "client_auth" }, issuer = "etcd-ca",
        dns = { "cp1", "localhost" }, ips = { "192.0.2.135", "127.0.0.1", "::1", "192.0.2.109" } },
      ["etcd/healthcheck-client.crt"] = { cn = "kube-etcd-healthcheck-client", o = {}, eku = { "client_auth" },
        issuer = "etcd-ca", dns = {}, ips = {} },
      ["apiserver-etcd-client.crt"] = { cn = "kube-apiserver-etcd-client", o = {}, eku = { "client_auth" },
        issuer = "etcd-ca", dns = {}, ips = {} },
    }
    local nb
    for file, w in pairs(want) do
      local i = info(root, file)
      assert.same({ cn = w.cn, o = w.o }, i.subject, file)
      assert.equal(w.issuer, i.issuer.cn, file)
      assert.equal(w.ca or false, i.is_ca, file)
      nb = nb or i.not_before
      assert.equal(nb, i.not_before, file) -- one start time for the whole run
      if w.ca then
        assert.same({ "digital_signature", "key_encipherment", "cert_sign" }, i.usages, file)
        assert.same({}, i.ext_usages, file)
        assert.same({ w.cn }, i.dns, file)
        assert.same({}, i.ips, file)
        assert.equal(87600 * 3600 + 300, i.not_after - i.not_before, file)
        assert.equal(40, #i.ski, file)
      else
        assert.same({ "digital_signature", "key_encipherment" }, i.usages, file)
        assert.same(w.eku, i.ext_usages, file)
        if w.dns then assert.same(w.dns, i.dns, file) end
        if w.ips then assert.same(w.ips, i.ips, file) end
        assert.equal(8760 * 3600 + 300, i.not_after - i.not_before, file)
        assert.equal("", i.ski, file) -- Go sets no SubjectKeyId on leaves
      end
      assert.equal("RSA", i.key_type, file)
      assert.equal(2048, i.key_bits, file)
      assert.is_true(tonumber(i.serial, 16) ~= nil and #i.serial <= 16, file)
    end
    assert.is_true(math.abs(os.time() - 300 - nb) < 120)
    local a = info(root, "apiserver.crt")
    assert.same({ "*.apps.example.com", "api.example.com", "cp1", "kubernetes", "kubernetes.default",
      "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "lb.example.com" }, a.dns)
    assert.same({ "10.96.0.1", "192.0.2.135", "fd00::1" }, a.ips)
  end)

  it("writes keys 0600 before certs 0644, PKCS#1 keys and a PKIX sa.pub 0600", function()
    local code, modes = sh("cd " .. q(root .. "/etc/kubernetes/pki") .. " && find . -type f -printf '%P %m\\n' | sort")
    assert.equal(0, code)
    local n = 0
    for path, mode in modes:gmatch("(%S+) (%d+)\n") do
      n = n + 1
      if path:match("%.crt$") then assert.equal("644", mode, path) else assert.equal("600", mode, path) end
      if path:match("%.key$") then
        assert.equal("-----BEGIN RSA PRIVATE KEY-----", helpers.read(pkipath(root, path)):match("^[^\n]+"), path)
      end
    end
    assert.equal(22, n)
    assert.equal("-----BEGIN PUBLIC KEY-----", helpers.read(pkipath(root, "sa.pub")):match("^[^\n]+"))
    local k = assert(pki.read_key(helpers.read(pkipath(root, "sa.key"))))
    assert.is_true(assert(pki.read_public_key(helpers.read(pkipath(root, "sa.pub")))):equals(k))
    local code2, dirs = sh("stat -c %a " .. q(root .. "/etc/kubernetes/pki") .. " " .. q(root .. "/etc/kubernetes/pki/etcd"))
    assert.equal(0, code2)
    assert.matches("^755\n755\n", dirs)
  end)

  it("chains verify with openssl and every key matches its certificate", function()
    local P = function(f) return q(pkipath(root, f)) end
    for leaf, ca in pairs { ["apiserver.crt"] = "ca.crt", ["apiserver-kubelet-client.crt"] = "ca.crt",
      ["front-proxy-client.crt"] = "front-proxy-ca.crt", ["etcd/server.crt"] = "etcd/ca.crt",
      ["etcd/peer.crt"] = "etcd/ca.crt", ["etcd/healthcheck-client.crt"] = "etcd/ca.crt",
      ["apiserver-etcd-client.crt"] = "etcd/ca.crt" } do
      local code, o = sh("openssl verify -CAfile " .. P(ca) .. " " .. P(leaf))
      assert.equal(0, code, o)
      local c = assert(pki.read_cert(helpers.read(pkipath(root, leaf))))
      assert.is_true(c:matches(assert(pki.read_key(helpers.read(pkipath(root, leaf:gsub("crt$", "key")))))))
    end
    local code, o = sh("openssl verify -purpose sslserver -CAfile " .. P("ca.crt") .. " " .. P("apiserver.crt"))
    assert.equal(0, code, o)
  end)

  it("keeps everything on a re-run (same fingerprints) and says so", function()
    local before = snapshot(root .. "/etc/kubernetes/pki")
    local code, o, err = certs(root, cfg, "all")
    assert.equal(0, code, err)
    assert.matches("%[certs%] Using existing ca certificate authority", o)
    assert.matches("%[certs%] Using existing apiserver certificate and key on disk", o)
    assert.matches('%[certs%] Using the existing "sa" key', o)
    assert.not_matches("Generating", o)
    assert.equal(before, snapshot(root .. "/etc/kubernetes/pki"))
  end)

  it("reuses the CA and creates a missing leaf signed by it", function()
    local ca_before = helpers.read(pkipath(root, "ca.crt"))
    os.remove(pkipath(root, "apiserver.crt")); os.remove(pkipath(root, "apiserver.key"))
    local code, o, err = certs(root, cfg, "apiserver")
    assert.equal(0, code, err)
    assert.matches('Generating "apiserver" certificate and key', o)
    assert.equal(ca_before, helpers.read(pkipath(root, "ca.crt")))
    assert.equal(0, (sh("openssl verify -CAfile " .. q(pkipath(root, "ca.crt")) .. " " .. q(pkipath(root, "apiserver.crt")))))
  end)

  describe("refuses bad trees and leaves the root unchanged", function()
    local function refused(prepare, args, pattern, extra, addr)
      local d = helpers.tmpdir()
      local r = d .. "/root"
      os.execute("mkdir -p " .. q(r .. "/etc/kubernetes") .. " && cp -a " .. q(root .. "/etc/kubernetes/pki") .. " "
        .. q(r .. "/etc/kubernetes/pki"))
      prepare(r .. "/etc/kubernetes/pki")
      local before = snapshot(r)
      local code, o, err = certs(r, cfgfile(d, extra, addr), table.unpack(args))
      assert.is_not.equal(0, code, o)
      assert.matches(pattern, err)
      assert.equal(before, snapshot(r))
      helpers.rmrf(d)
    end

    it("a wrong-SAN leaf (not covering the advertise address)", function()
      refused(function() end, { "all" }, "certificate /etc/kubernetes/pki/apiserver%.crt is invalid: it does not " ..
        "cover the expected SAN \"192%.0%.2%.136\"", "", "192.0.2.136")
    end)
    it("a truncated PEM", function()
      refused(function(p)
        local s = helpers.read(p .. "/front-proxy-client.crt")
        helpers.write(p .. "/front-proxy-client.crt", s:sub(1, #s // 2))
        os.remove(p .. "/apiserver.crt"); os.remove(p .. "/apiserver.key")
      end, { "all" }, "front%-proxy%-client%.crt: truncated PEM")
    end)
    it("a cert whose key does not match", function()
      refused(function(p)
        helpers.write(p .. "/etcd/peer.key", helpers.read(p .. "/etcd/server.key"))
        os.remove(p .. "/apiserver.crt"); os.remove(p .. "/apiserver.key")
      end, { "all" }, "the key /etc/kubernetes/pki/etcd/peer%.key does not match the certificate")
    end)
    it("a CA that is not a CA", function()
      refused(function(p)
        helpers.write(p .. "/front-proxy-ca.crt", helpers.read(p .. "/front-proxy-client.crt"))
        helpers.write(p .. "/front-proxy-ca.key", helpers.read(p .. "/front-proxy-client.key"))
      end, { "all" }, "certificate /etc/kubernetes/pki/front%-proxy%-ca%.crt is not a CA")
    end)
    it("an orphan ca.key", function()
      refused(function(p)
        os.execute("cd " .. q(p) .. " && find . -type f ! -path ./ca.key -delete")
      end, { "all" }, "found the CA key /etc/kubernetes/pki/ca%.key without its certificate")
    end)
    it("a leaf of a CA about to be generated", function()
      refused(function(p) os.execute("rm -f " .. q(p) .. "/etcd/ca.*") end, { "all" },
        "etcd/server%.crt is not signed by corresponding CA")
    end)
    it("a leaf signed by another CA", function()
      refused(function(p)
        helpers.write(p .. "/apiserver-kubelet-client.crt", helpers.read(p .. "/apiserver-etcd-client.crt"))
        helpers.write(p .. "/apiserver-kubelet-client.key", helpers.read(p .. "/apiserver-etcd-client.key"))
      end, { "apiserver-kubelet-client" }, "apiserver%-kubelet%-client%.crt is not signed by corresponding CA")
    end)
    it("a non-IP advertise address", function()
      local d = helpers.tmpdir()
      os.execute("mkdir " .. q(d .. "/r"))
      local code, _, err = helpers.moonadm({ "init", "phase", "certs", "all", "--root", d .. "/r",
        "--apiserver-advertise-address", "node.example.com", "--node-name", "cp1" })
      assert.is_not.equal(0, code)
      assert.matches("node%.example%.com", err)
      assert.equal(" 755 d", snapshot(d .. "/r")) -- the empty root, nothing inside
      helpers.rmrf(d)
    end)
    it("an unsupported algorithm", function()
      local d = helpers.tmpdir()
      local code, _, err = certs(d .. "/r", cfgfile(d, "encryptionAlgorithm: ECDSA-P521"), "all")
      assert.is_not.equal(0, code)
      assert.matches("ECDSA%-P521", err)
      assert.is_nil(helpers.read(d .. "/r/etc/kubernetes/pki/ca.crt"))
      helpers.rmrf(d)
    end)
  end)

  it("external CA mode: keyless CA with existing leaves passes, a missing leaf is an error", function()
    local d = helpers.tmpdir()
    local r = d .. "/root"
    os.execute("mkdir -p " .. q(r .. "/etc/kubernetes") .. " && cp -a " .. q(root .. "/etc/kubernetes/pki") .. " "
      .. q(r .. "/etc/kubernetes/pki") .. " && rm " .. q(r .. "/etc/kubernetes/pki/ca.key"))
    local code, o, err = certs(r, cfg, "all")
    assert.equal(0, code, err)
    assert.matches("Using existing ca keyless certificate authority", o)
    os.remove(r .. "/etc/kubernetes/pki/apiserver.crt"); os.remove(r .. "/etc/kubernetes/pki/apiserver.key")
    local before = snapshot(r)
    code, _, err = certs(r, cfg, "all")
    assert.equal(1, code)
    assert.matches("external CA mode: /etc/kubernetes/pki/apiserver%.crt is missing", err)
    assert.equal(before, snapshot(r))
    helpers.rmrf(d)
  end)

  it("external etcd drops the etcd set", function()
    local d = helpers.tmpdir()
    local c = d .. "/k.yaml"
    helpers.write(c, (CFG:format(""):gsub("etcd:\n  local:\n    serverCertSANs: %b[]\n    peerCertSANs: %b[]\n",
      "etcd:\n  external:\n    endpoints: [\"https://192.0.2.139:2379\"]\n    caFile: /e/ca.crt\n    certFile: /e/c.crt\n    keyFile: /e/c.key\n")))
    local code, o, err = certs(d .. "/r", c, "all")
    assert.equal(0, code, err)
    assert.matches("External etcd mode: Skipping etcd/ca certificate authority generation", o)
    assert.matches("External etcd mode: Skipping apiserver%-etcd%-client certificate generation", o)
    assert.is_nil(helpers.read(d .. "/r/etc/kubernetes/pki/etcd/ca.crt"))
    assert.is_nil(helpers.read(d .. "/r/etc/kubernetes/pki/apiserver-etcd-client.crt"))
    assert.is_not_nil(helpers.read(d .. "/r/etc/kubernetes/pki/front-proxy-client.crt"))
    helpers.rmrf(d)
  end)

  for _, alg in ipairs { { "ECDSA-P256", 256, "prime256v1" }, { "ECDSA-P384", 384, "secp384r1" } } do
    it(alg[1] .. " gives EC keys in every file, validity periods honoured", function()
      local d = helpers.tmpdir()
      local r = d .. "/r"
      local code, _, err = certs(r, cfgfile(d, "encryptionAlgorithm: " .. alg[1] ..
        "\ncertificateValidityPeriod: 48h0m0s\ncaCertificateValidityPeriod: 96h0m0s"), "all")
      assert.equal(0, code, err)
      local p = io.popen("cd " .. q(r .. "/etc/kubernetes/pki") .. " && find . -type f -name '*.key' -printf '%P\\n'")
      local n = 0
      for f in p:lines() do
        n = n + 1
        local pem = helpers.read(pkipath(r, f))
        assert.equal("-----BEGIN EC PRIVATE KEY-----", pem:match("^[^\n]+"), f)
        local c2, o = sh("openssl pkey -noout -text -in " .. q(pkipath(r, f)))
        assert.equal(0, c2, o)
        assert.matches(alg[3], o, 1, true)
        if f ~= "sa.key" then
          local i = info(r, f:gsub("key$", "crt"))
          assert.equal("ECDSA", i.key_type)
          assert.equal(alg[2], i.key_bits)
          assert.equal((i.is_ca and 96 or 48) * 3600 + 300, i.not_after - i.not_before, f)
        end
      end
      p:close()
      assert.equal(11, n)
      local c3, o3 = sh("openssl pkey -pubin -noout -text -in " .. q(pkipath(r, "sa.pub")))
      assert.equal(0, c3)
      assert.matches(alg[3], o3, 1, true)
      helpers.rmrf(d)
    end)
  end

  with_kubeadm("is read by the reference kubeadm's check-expiration", function()
    local d = helpers.tmpdir()
    helpers.write(d .. "/k.yaml", CFG:format("certificatesDir: " .. root .. "/etc/kubernetes/pki"))
    local code, o = sh(q(KUBEADM) .. " certs check-expiration --config " .. q(d .. "/k.yaml") .. " 2>/dev/null")
    assert.equal(0, code, o)
    for _, name in ipairs { "apiserver", "etcd-peer", "front-proxy-client" } do
      assert.matches("\n" .. name:gsub("%-", "%%-") .. " +%a%a%a %d%d, %d+ %d%d:%d%d UTC +364d", o)
    end
    assert.matches("\nca +%a%a%a %d%d, %d+ %d%d:%d%d UTC +9y +no", o)
    helpers.rmrf(d)
  end)

  -- The RSA keys come from moonadm's own prime search (engine/pki_rsa.c): Go's parser, which
  -- validates a PKCS#1 key's primes and CRT values, must take moonadm's CA key and sign with it.
  with_kubeadm("gives the reference kubeadm a CA key it signs with (moonadm's RSA generator)", function()
    local d = helpers.tmpdir()
    local dir = d .. "/pki"
    assert.equal(0, (sh("mkdir -p " .. q(dir) .. " && cp " .. q(pkipath(root, "ca.crt")) .. " " ..
      q(pkipath(root, "ca.key")) .. " " .. q(dir))))
    helpers.write(d .. "/k.yaml", CFG:format("certificatesDir: " .. dir))
    local code, o = sh(q(KUBEADM) .. " init phase certs apiserver --config " .. q(d .. "/k.yaml") .. " 2>&1")
    assert.equal(0, code, o)
    assert.matches('[certs] Generating "apiserver" certificate and key', o, 1, true)
    local c2, o2 = sh("openssl verify -CAfile " .. q(dir .. "/ca.crt") .. " " .. q(dir .. "/apiserver.crt") .. " 2>&1")
    assert.equal(0, c2, o2)
    helpers.rmrf(d)
  end)
end)
