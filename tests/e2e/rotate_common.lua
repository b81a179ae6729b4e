-- The body of the CA rotation e2e specs (rotate_ca_spec: the stand-in kubelet, make test;
-- long_real_kubelet_rotate_ca_spec: containerd, the real kubelet and a worker, make test-long).
-- `moonadm certs rotate-ca` (issue 42) on a 3-control-plane lab behind its balancer, a poller reading
-- /readyz through the endpoint all along: the front-proxy and etcd CAs are replaced (etcd and the
-- apiservers restarted one at a time after each stage), each control plane run in turn until the
-- rotation ends, cp2's run killed at each of its writes (the hooked build) until a kill leaves its
-- kube-apiserver set aside while its etcd restarts, then run again with --resume. Afterwards a
-- front-proxy client certificate of the new CA authenticates through every API server and one of the
-- old CA is refused, the old CA is gone from extension-apiserver-authentication (where aggregated API
-- servers read it), etcd serves with three voting members and refuses a client of the old etcd CA,
-- the reference kubeadm reads the PKI, and (real kubelet) every Node is Ready.
--   require("rotate_common")(opts, _ENV) opts: name, subnet, real (bool); _ENV: the spec's (busted's
--   describe, it, setup, teardown, assert)
local h = require "helpers"
local fixture = require "lab_fixture"
local common = require "crash_common"
local pki = require "moonadm.pki"

local LAB, OPTS
local describe, it, setup, teardown, assert -- busted's, from the spec's environment
local CPS = { "cp1", "cp2", "cp3" }
local PKI = "/etc/kubernetes/pki/"

local st, key, stop_poller, tmp
local UPLOAD -- init phase upload-certs, as an operator runs it before a control-plane join

local function run(node, argv, env, bin)
  local a = { bin or h.bin }
  for _, x in ipairs(argv) do a[#a + 1] = x end
  return common.exec(st, node, a, env)
end

local function rotate(node, more, env, bin)
  local argv = { "certs", "rotate-ca" }
  for _, x in ipairs(more or { "--certificate-key", key }) do argv[#argv + 1] = x end
  return run(node, argv, env, bin)
end

local function file(node, name) return h.read(st.dir .. "/" .. node .. PKI .. name) end

local function certs(pem) return assert(pki.read_certs(pem)) end

-- A front-proxy client certificate (CN front-proxy-client, the apiservers' requestheader-allowed-names)
-- signed by ca_key under ca_pem's name; written as tmp/<name>.{crt,key}.
local function proxy_cert(name, ca_pem, ca_key_pem)
  local ca, cakey = certs(ca_pem)[1], assert(pki.read_key(ca_key_pem))
  local k = assert(pki.generate_key("ECDSA-P256"))
  local c = assert(pki.sign_cert(k, { cn = "front-proxy-client", ext_usages = { "client_auth" },
    not_before = os.time() - 60, not_after = os.time() + 3600 }, ca, cakey))
  h.write(tmp .. "/" .. name .. ".key", assert(k:pem()))
  h.write(tmp .. "/" .. name .. ".crt", assert(c:pem()))
end

-- The HTTP status of a request through node's API server as the user the front proxy names.
local function as_proxy(name, node)
  local ip = LAB.subnet .. "." .. (10 + tonumber(node:match("%d+$")))
  local _, out = h.sh(("curl -s -o /dev/null -w '%%{http_code}' --max-time 10 --cacert %s --cert %s --key %s " ..
    "-H 'X-Remote-User: rotate-e2e' -H 'X-Remote-Group: system:masters' https://%s:6443/api/v1/namespaces/default")
    :format(h.q(st.dir .. "/cp1" .. PKI .. "ca.crt"), h.q(tmp .. "/" .. name .. ".crt"), h.q(tmp .. "/" .. name .. ".key"), ip))
  return out
end

local function stages()
  local code, out = run("cp1", { "certs", "rotate-ca", "status", "-o", "json" })
  assert.equal(0, code, out)
  local s = require("cjson").decode(out)
  local by = {}
  for _, n in ipairs(s.nodes or {}) do by[n.name] = n.stage end
  return by, s
end

return function(opts, env)
OPTS, LAB = opts, { name = opts.name, subnet = opts.subnet }
describe, it, setup, teardown, assert = env.describe, env.it, env.setup, env.teardown, env.assert
describe("certs rotate-ca on a 3-control-plane lab (" .. LAB.name .. (OPTS.real and ", real kubelet" or "") .. ")", function()
  setup(function()
    tmp = h.tmpdir()
    local args = { "--control-planes", "3" }
    if OPTS.real then
      for _, a in ipairs { "--kubelet", "real", "--workers", "1", "--ready-timeout", "300" } do args[#args + 1] = a end
    end
    st = common.up(LAB.name, LAB.subnet, args)
    UPLOAD = { "init", "phase", "upload-certs", "--upload-certs", "--config", st.dir .. "/cp1-init.yaml" }
  end)
  teardown(function()
    if stop_poller then stop_poller() end
    common.down(LAB.name)
    h.rmrf(tmp)
  end)

  it("starts a rotation with --ca on one control plane, which waits for the others", function()
    local code, out = run("cp1", { "certs", "rotate-ca", "status" })
    assert.equal(0, code, out)
    assert.truthy(out:find("No CA rotation is under way", 1, true), out)
    -- the old CA's proxy certificate works before: the check below can fail
    proxy_cert("old", file("cp1", "front-proxy-ca.crt"), file("cp1", "front-proxy-ca.key"))
    assert.equal("200", as_proxy("old", "cp1"))
    stop_poller = fixture.readyz_poller(st)
    code, out = rotate("cp1", { "--ca", "ca" })
    assert.are_not.equal(0, code, out)
    assert.truthy(out:find("front-proxy and etcd CAs so far", 1, true), out)
    local before = file("cp1", "front-proxy-ca.crt")
    h.write(tmp .. "/old-etcd-ca.crt", file("cp1", "etcd/ca.crt"))
    h.write(tmp .. "/old-etcd-ca.key", file("cp1", "etcd/ca.key"))
    code, out = rotate("cp1", { "--ca", "front-proxy,etcd" })
    assert.equal(0, code, out)
    key = out:match("\n(%x+)\n")
    assert.equal(64, key and #key or 0, out)
    assert.truthy(out:find('cp2, cp3 are not at "trust-both" yet', 1, true), out)
    local bundle = certs(file("cp1", "front-proxy-ca.crt"))
    assert.equal(2, #bundle)
    assert.equal(certs(before)[1]:pem(), bundle[1]:pem()) -- the old CA first: it still signs
    assert.equal(2, #certs(file("cp1", "etcd/ca.crt")))
    assert.same({ cp1 = "trust-both", cp2 = "none", cp3 = "none" }, (stages()))
  end)

  it("refuses another rotation and a wrong certificate key, changing nothing", function()
    local before = file("cp2", "front-proxy-ca.crt")
    local code, out = rotate("cp2", { "--certificate-key", ("0"):rep(64) })
    assert.are_not.equal(0, code, out)
    assert.truthy(out:find("does not open the rotation's new front-proxy CA key", 1, true), out)
    code, out = rotate("cp2", {})
    assert.are_not.equal(0, code, out)
    assert.truthy(out:find("pass --certificate-key", 1, true), out)
    assert.equal(before, file("cp2", "front-proxy-ca.crt"))
    -- a control plane joining now would not be one of the rotation's: no CAs are uploaded for it
    local rc = fixture.kubectl(st, { "-n", "kube-system", "get", "secret", "kubeadm-certs" })
    assert.are_not.equal(0, rc, "kubeadm-certs (the old CAs) is left during the rotation")
    code, out = run("cp1", UPLOAD)
    assert.are_not.equal(0, code, out)
    assert.truthy(out:find("not uploading the CAs for a control-plane join now", 1, true), out)
  end)

  it("takes every control plane through each stage; a run killed at a write converges with --resume", function()
    for _, n in ipairs { "cp2", "cp3" } do
      local code, out = rotate(n)
      assert.equal(0, code, out)
    end
    -- cp3 came last to trust-both: it went on to sign with the new CA
    assert.same({ cp1 = "trust-both", cp2 = "trust-both", cp3 = "issued" }, (stages()))
    assert.equal("200", as_proxy("old", "cp3")) -- both CAs trusted
    if common.have_hooks() then
      -- killed at its first write, then at the next, ... until a kill leaves cp2's kube-apiserver set aside
      -- while its etcd restarts (the run after it puts it back first)
      local aside = st.dir .. "/cp2/etc/kubernetes/tmp/moonadm-restart-aside/kube-apiserver.yaml"
      local manifest = st.dir .. "/cp2/etc/kubernetes/manifests/kube-apiserver.yaml"
      local seen
      for n = 1, 40 do
        local code, out = rotate("cp2", nil, { "MOONADM_CRASH_AFTER=write:" .. n }, common.hooks)
        assert.are_not.equal(0, code, ("write:%d: the hooked run got through: no kill set the apiserver aside\n%s")
          :format(n, out:sub(-2000)))
        if h.read(aside) and not h.read(manifest) then seen = n break end
      end
      assert.truthy(seen, "no kill left cp2's kube-apiserver set aside while its etcd restarted")
    end
    local code, out = rotate("cp2", { "--certificate-key", key, "--resume" })
    assert.equal(0, code, out)
    assert.truthy(h.read(st.dir .. "/cp2/etc/kubernetes/manifests/kube-apiserver.yaml"), "cp2's apiserver manifest is not back")
    for _, n in ipairs { "cp1", "cp2", "cp3" } do
      code, out = rotate(n)
      assert.equal(0, code, n .. ": " .. out)
    end
    assert.truthy(out:find("CA(s) are rotated: every control plane", 1, true), out)
    local _, s = stages()
    assert.is_nil(s.nodes, "the rotation did not end")
  end)

  it("leaves only the new CA trusted, everywhere, with the API up throughout", function()
    local ok, failed = stop_poller()
    stop_poller = nil
    io.stderr:write(("figure: rotate-ca front-proxy,etcd (%s): /readyz through the balancer meanwhile: %d answered, %d failed\n")
      :format(LAB.name, ok, failed))
    assert.is_true(ok > 0)
    -- each apiserver steps aside while its etcd restarts (nine restarts, three runs killed): at most a poll
    -- now and then that a terminating apiserver took before the balancer's next check dropped it (0 or 1
    -- of ~340 on the lab), as renew_spec allows
    assert.is_true(failed <= 3, ("%d of %d polls failed"):format(failed, ok + failed))
    local new = file("cp1", "front-proxy-ca.crt")
    assert.equal(1, #certs(new))
    assert.are_not.equal(certs(new)[1]:pem(), assert(pki.read_certs(h.read(tmp .. "/old.crt")))[1]:pem())
    for _, n in ipairs(CPS) do
      assert.equal(new, file(n, "front-proxy-ca.crt"), n)
      local ca = certs(file(n, "front-proxy-ca.crt"))[1]
      assert.truthy(assert(pki.read_key(file(n, "front-proxy-ca.key"))):matches(ca), n .. ": the CA key")
      assert.truthy(certs(file(n, "front-proxy-client.crt"))[1]:verify(ca), n .. ": front-proxy-client")
    end
    proxy_cert("new", new, file("cp1", "front-proxy-ca.key"))
    for _, n in ipairs(CPS) do
      -- each API server reads the file again on its own time (fsnotify, else each minute)
      fixture.wait_for(n .. " to refuse the old CA", 70, function()
        local code = as_proxy("old", n)
        return code == "401", code
      end)
      assert.equal("200", as_proxy("new", n), n)
    end
    local cm = fixture.kjson(st, { "-n", "kube-system", "get", "configmap", "extension-apiserver-authentication", "-o", "json" })
    local published = certs(cm.data["requestheader-client-ca-file"])
    assert.equal(1, #published)
    assert.equal(certs(new)[1]:pem(), published[1]:pem())
    local code, out = fixture.kubectl(st, { "-n", "kube-system", "get", "secret", "kubeadm-certs" })
    assert.are_not.equal(0, code, "kubeadm-certs holds the old CAs: " .. out)
    code, out = run("cp1", UPLOAD) -- the rotation ended: a control plane may join again
    assert.equal(0, code, out)
    -- etcd: the new CA alone on every node, its leaves reissued, three voting members; a client of
    -- the old etcd CA refused, one of the new served
    local etcd_ca = file("cp1", "etcd/ca.crt")
    assert.equal(1, #certs(etcd_ca))
    for _, n in ipairs(CPS) do
      assert.equal(etcd_ca, file(n, "etcd/ca.crt"), n)
      local ca = certs(etcd_ca)[1]
      for _, leaf in ipairs { "etcd/server", "etcd/peer", "etcd/healthcheck-client", "apiserver-etcd-client" } do
        assert.truthy(certs(file(n, leaf .. ".crt"))[1]:verify(ca), n .. ": " .. leaf)
      end
    end
    assert.same(CPS, fixture.etcd_voting(st, "cp1"))
    local function etcd_health(prefix)
      local _, got = h.sh(("curl -s -o /dev/null -w '%%{http_code}' --max-time 10 --cacert %s --cert %s --key %s https://%s.11:2379/health")
        :format(h.q(tmp .. "/etcd-ca-now.crt"), h.q(tmp .. "/" .. prefix .. ".crt"), h.q(tmp .. "/" .. prefix .. ".key"), LAB.subnet))
      return got
    end
    h.write(tmp .. "/etcd-ca-now.crt", etcd_ca)
    local function etcd_client(name, ca_pem, ca_key_pem)
      local k = assert(pki.generate_key("ECDSA-P256"))
      local c = assert(pki.sign_cert(k, { cn = "rotate-e2e", ext_usages = { "client_auth" }, not_before = os.time() - 60,
        not_after = os.time() + 3600 }, certs(ca_pem)[1], assert(pki.read_key(ca_key_pem))))
      h.write(tmp .. "/" .. name .. ".key", assert(k:pem()))
      h.write(tmp .. "/" .. name .. ".crt", assert(c:pem()))
    end
    etcd_client("etcd-old", h.read(tmp .. "/old-etcd-ca.crt"), h.read(tmp .. "/old-etcd-ca.key"))
    etcd_client("etcd-new", etcd_ca, file("cp1", "etcd/ca.key"))
    assert.equal("200", etcd_health("etcd-new"))
    assert.equal("000", etcd_health("etcd-old")) -- the handshake fails
    -- the reference kubeadm reads the rotated PKI
    code, out = fixture.exec(st, "cp1", { fixture.bin_dir .. "/kubeadm", "certs", "check-expiration" })
    assert.equal(0, code, out)
    assert.truthy(out:find("front-proxy-ca", 1, true), out)
    if OPTS.real then assert.truthy(fixture.nodes_ready(st, nil, 4), "4 Nodes Ready") end
  end)
end)
end
