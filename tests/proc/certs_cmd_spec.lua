-- `moonadm certs check-expiration|renew|certificate-key|generate-csr`.
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local cjson = require "cjson"
local encoding = require "moonadm.encoding"
local expiration = require "pki.expiration"
local helpers = require "helpers"

local q = helpers.q
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
%s
]]

local function M(args) return helpers.moonadm(args) end

describe("moonadm certs", function()
  local dir, root, cfg
  setup(function()
    dir = helpers.tmpdir()
    root = dir .. "/root"
    cfg = dir .. "/k.yaml"
    helpers.write(cfg, CFG:format(""))
    for _, p in ipairs { "certs", "kubeconfig" } do
      local code, _, err = M { "init", "phase", p, "all", "--root", root, "--config", cfg }
      assert.equal(0, code, err)
    end
  end)
  teardown(function() helpers.rmrf(dir) end)

  it("reads the residual time as kubeadm: a fraction of a second past issuance is less than a year", function()
    local duration = require "kube.duration"
    local made = 1796300000 -- a certificate's whole-second start
    local year = 365 * 86400
    assert.equal(year - 1, expiration.residual(made + year, made + 0.3))
    assert.equal("364d", duration.human(expiration.residual(made + year, made + 0.3)))
    assert.equal(0, expiration.residual(made, made + 0.5))
    assert.equal(-1, expiration.residual(made, made + 1.5))
  end)

  it("check-expiration prints kubeadm's two tables", function()
    local code, out, err = M { "certs", "check-expiration", "--root", root, "--config", cfg }
    assert.equal(0, code, err)
    local lines = {}
    for l in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.equal("CERTIFICATE                EXPIRES                  RESIDUAL TIME   CERTIFICATE AUTHORITY   EXTERNALLY MANAGED", lines[1])
    -- a one-year certificate made a moment ago: 364d (HumanDuration of a residual read with a fraction
    -- of a second, as kubeadm's), or 365d when the machine's clock stepped back meanwhile
    -- (kube_text_spec.lua pins HumanDuration itself)
    local residual = lines[2]:match("^admin%.conf                 %a%a%a %d%d, %d%d%d%d %d%d:%d%d UTC   (%S+) +ca                      no      $")
    assert.truthy(residual == "364d" or residual == "365d", lines[2])
    local names = {}
    for i = 2, 12 do names[#names + 1] = lines[i]:match("^(%S+)") end
    assert.same({ "admin.conf", "apiserver", "apiserver-etcd-client", "apiserver-kubelet-client", "controller-manager.conf",
      "etcd-healthcheck-client", "etcd-peer", "etcd-server", "front-proxy-client", "scheduler.conf", "super-admin.conf" }, names)
    assert.equal("", lines[13])
    assert.equal("CERTIFICATE AUTHORITY   EXPIRES                  RESIDUAL TIME   EXTERNALLY MANAGED", lines[14])
    -- a ten-year CA made a moment ago: 9y, or 10y when the clock stepped back meanwhile (as above)
    local ca_residual = lines[15]:match("^ca                      %a%a%a %d%d, %d+ %d%d:%d%d UTC   (%S+) +no      $")
    assert.truthy(ca_residual == "9y" or ca_residual == "10y", lines[15])
    assert.matches("^etcd%-ca ", lines[16]); assert.matches("^front%-proxy%-ca ", lines[17])
  end)

  with_kubeadm("check-expiration matches the reference kubeadm's text for the same PKI", function()
    local c = dir .. "/ref.yaml"
    helpers.write(c, CFG:format("certificatesDir: " .. root .. "/etc/kubernetes/pki"))
    local p = io.popen(q(KUBEADM) .. " certs check-expiration --config " .. q(c) .. " 2>/dev/null")
    local ref = p:read("a")
    p:close()
    -- kubeadm reads kubeconfigs from the host's /etc/kubernetes: compare with moonadm's view of an empty dir
    local code, out = M { "certs", "check-expiration", "--root", root, "--config", cfg, "--kubeconfig-dir", "/nonexistent" }
    assert.equal(0, code)
    if ref:match("\nadmin%.conf ") then pending("the host has an /etc/kubernetes/admin.conf") return end
    assert.equal(ref, out)
  end)

  it("check-expiration -o json and -o yaml", function()
    local code, out = M { "certs", "check-expiration", "--root", root, "-o", "json" }
    assert.equal(0, code)
    assert.matches('^{\n    "kind": "CertificateExpirationInfo",\n    "apiVersion": "output.kubeadm.k8s.io/v1alpha3",', out)
    local doc = cjson.decode(out)
    assert.equal(11, #doc.certificates)
    assert.equal(3, #doc.certificateAuthorities)
    local a = doc.certificates[2]
    assert.equal("apiserver", a.name)
    assert.equal("ca", a.caName)
    assert.is_false(a.missing)
    assert.is_true(math.abs(a.residualTime - 8760 * 3600) < 600)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$", a.expirationDate)
    code, out = M { "certs", "check-expiration", "--root", root, "-o", "yaml" }
    assert.equal(0, code)
    local y = assert(yaml.decode(out))[1]
    assert.equal("output.kubeadm.k8s.io/v1alpha3", y.apiVersion)
    assert.equal("etcd-ca", y.certificateAuthorities[2].name)
  end)

  it("check-expiration marks missing items and externally managed CAs", function()
    local d = helpers.tmpdir()
    os.execute("cp -a " .. q(root) .. " " .. q(d .. "/r") .. " && rm " .. q(d .. "/r/etc/kubernetes/pki/front-proxy-ca.key")
      .. " " .. q(d .. "/r/etc/kubernetes/scheduler.conf"))
    local code, out = M { "certs", "check-expiration", "--root", d .. "/r" }
    assert.equal(0, code)
    assert.matches("\n!MISSING! scheduler%.conf +\n", out)
    assert.matches("\nfront%-proxy%-client .- front%-proxy%-ca +yes +\n", out)
    assert.matches("\nfront%-proxy%-ca .- 9y +yes +\n", out)
    helpers.rmrf(d)
  end)

  it("renew keeps subject and SANs, changes the key, never touches CAs, renews kubeconfigs in place", function()
    local d = helpers.tmpdir()
    local r = d .. "/r"
    os.execute("cp -a " .. q(root) .. " " .. q(r))
    local P = function(f) return r .. "/etc/kubernetes/" .. f end
    local old = assert(pki.read_cert(helpers.read(P("pki/apiserver.crt")))):info()
    local oldkey = helpers.read(P("pki/apiserver.key"))
    local ca = helpers.read(P("pki/ca.crt"))
    local oldconf = assert(yaml.decode(helpers.read(P("admin.conf"))))[1]
    os.execute("sleep 1")
    local code, out, err = M { "certs", "renew", "all", "--root", r, "--config", cfg }
    assert.equal(0, code, err)
    assert.matches("certificate for serving the Kubernetes API renewed\n", out, 1, true)
    assert.matches("Done renewing certificates. You must restart the kube-apiserver", out, 1, true)
    local new = assert(pki.read_cert(helpers.read(P("pki/apiserver.crt")))):info()
    assert.same(old.subject, new.subject)
    assert.same(old.dns, new.dns)
    assert.same(old.ips, new.ips)
    assert.same(old.ext_usages, new.ext_usages)
    assert.are_not.equal(old.serial, new.serial)
    assert.are_not.equal(oldkey, helpers.read(P("pki/apiserver.key")))
    assert.equal(8760 * 3600 + 300, new.not_after - new.not_before)
    assert.equal(ca, helpers.read(P("pki/ca.crt")))
    local conf = assert(yaml.decode(helpers.read(P("admin.conf"))))[1]
    assert.same(oldconf.clusters, conf.clusters)
    assert.same(oldconf.contexts, conf.contexts)
    assert.are_not.equal(oldconf.users[1].user["client-key-data"], conf.users[1].user["client-key-data"])
    local cc = assert(pki.read_cert(encoding.base64_decode(conf.users[1].user["client-certificate-data"])))
    assert.is_true(cc:matches(assert(pki.read_key(encoding.base64_decode(conf.users[1].user["client-key-data"])))))
    assert.same({ cn = "kubernetes-admin", o = { "kubeadm:cluster-admins" } }, cc:info().subject)
    local p = io.popen("stat -c %a " .. q(P("admin.conf"))); assert.equal("600", p:read("l")); p:close()
    -- one certificate; missing ones are reported
    os.remove(P("scheduler.conf"))
    code, out = M { "certs", "renew", "scheduler.conf", "--root", r }
    assert.equal(0, code)
    assert.equal("MISSING! certificate embedded in the kubeconfig file for the scheduler manager to use\n", out)
    code, _, err = M { "certs", "renew", "ca", "--root", r }
    assert.equal(1, code)
    assert.matches('unknown certificate "ca"', err)
    helpers.rmrf(d)
  end)

  it("certificate-key prints 64 hex characters", function()
    local code, out = M { "certs", "certificate-key" }
    assert.equal(0, code)
    assert.matches("^" .. ("%x"):rep(64) .. "\n$", out)
  end)

  it("generate-csr writes keys and CSRs with the certificates' subjects and SANs", function()
    local d = helpers.tmpdir()
    local code, out, err = M { "certs", "generate-csr", "--root", d .. "/r", "--config", cfg,
      "--cert-dir", "/etc/kubernetes/pki", "--kubeconfig-dir", "/etc/kubernetes" }
    assert.equal(0, code, err)
    assert.matches("generating keys and CSRs in /etc/kubernetes/pki\n", out, 1, true)
    local csr = helpers.read(d .. "/r/etc/kubernetes/pki/apiserver.csr")
    local info, pub = assert(pki.parse_csr(csr))
    assert.equal("kube-apiserver", info.subject.cn)
    assert.same({ "10.96.0.1", "192.0.2.135" }, info.ips)
    assert.is_true(pub:equals(assert(pki.read_key(helpers.read(d .. "/r/etc/kubernetes/pki/apiserver.key")))))
    local ki = assert(pki.parse_csr(helpers.read(d .. "/r/etc/kubernetes/kubelet.conf.csr")))
    assert.same({ cn = "system:node:cp1", o = { "system:nodes" } }, ki.subject)
    local conf = assert(yaml.decode(helpers.read(d .. "/r/etc/kubernetes/kubelet.conf")))[1]
    assert.is_string(conf.users[1].user["client-key-data"])
    local p = io.popen("cd " .. q(d .. "/r/etc/kubernetes") .. " && find . -type f -printf '%m\\n' | sort -u")
    assert.equal("600\n", p:read("a")); p:close()
    helpers.rmrf(d)
  end)

  it("says what exists", function()
    local code, out = M { "certs", "--help" }
    assert.equal(0, code)
    assert.matches("check%-expiration", out)
    code = M { "certs", "nope" }
    assert.equal(1, code)
  end)
end)
