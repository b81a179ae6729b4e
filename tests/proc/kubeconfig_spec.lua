-- `moonadm init phase kubeconfig`: users, groups, contexts, servers, embedded data, re-run rules.
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"
local helpers = require "helpers"

local q = helpers.q

local CFG = [[
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %s
nodeRegistration:
  name: cp1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
controlPlaneEndpoint: lb.example.com
]]

local function run(root, dir, addr, ...)
  local c = dir .. "/k.yaml"
  helpers.write(c, CFG:format(addr or "192.0.2.135"))
  local args = { "init", "phase", ... }
  for _, a in ipairs { "--root", root, "--config", c } do args[#args + 1] = a end
  return helpers.moonadm(args)
end

local function kubectl()
  local lab = helpers.top .. "/.lab/bin/kubectl"
  if io.open(lab) then return lab end
  return "kubectl"
end

describe("init phase kubeconfig", function()
  local dir, root, out
  setup(function()
    dir = helpers.tmpdir()
    root = dir .. "/root"
    assert.equal(0, (run(root, dir, nil, "certs", "all")))
    local code, err
    code, out, err = run(root, dir, nil, "kubeconfig", "all")
    assert.equal(0, code, err)
  end)
  teardown(function() helpers.rmrf(dir) end)

  local want = {
    ["admin.conf"] = { "kubernetes-admin", { "kubeadm:cluster-admins" }, "https://lb.example.com:6443" },
    ["super-admin.conf"] = { "kubernetes-super-admin", { "system:masters" }, "https://lb.example.com:6443" },
    ["kubelet.conf"] = { "system:node:cp1", { "system:nodes" }, "https://192.0.2.135:6443" },
    ["controller-manager.conf"] = { "system:kube-controller-manager", {}, "https://192.0.2.135:6443" },
    ["scheduler.conf"] = { "system:kube-scheduler", {}, "https://192.0.2.135:6443" },
  }

  it("prints kubeadm's lines", function()
    assert.matches('%[kubeconfig%] Using kubeconfig folder "/etc/kubernetes"', out)
    for f in pairs(want) do assert.matches('[kubeconfig] Writing "' .. f .. '" kubeconfig file', out, 1, true) end
  end)

  it("writes client-go's layout with the right user, group, context and server", function()
    local ca = helpers.read(root .. "/etc/kubernetes/pki/ca.crt")
    local cacert = assert(pki.read_cert(ca))
    local cainfo = cacert:info()
    for f, w in pairs(want) do
      local path = root .. "/etc/kubernetes/" .. f
      local text = helpers.read(path)
      local p = io.popen("stat -c %a " .. q(path)); assert.equal("600", p:read("l")); p:close()
      assert.matches("^apiVersion: v1\nclusters:\n%- cluster:\n    certificate%-authority%-data: ", text)
      local doc = assert(yaml.decode(text))[1]
      local user, ctxname = w[1], w[1] .. "@kubernetes"
      assert.same({ "apiVersion", "clusters", "contexts", "current-context", "kind", "users" },
        (function() local k = {} for key in pairs(doc) do k[#k + 1] = key end table.sort(k) return k end)())
      assert.equal("Config", doc.kind)
      assert.equal(ctxname, doc["current-context"])
      assert.equal(ctxname, doc.contexts[1].name)
      assert.same({ cluster = "kubernetes", user = user }, doc.contexts[1].context)
      assert.equal("kubernetes", doc.clusters[1].name)
      assert.equal(w[3], doc.clusters[1].cluster.server)
      assert.equal(ca, encoding.base64_decode(doc.clusters[1].cluster["certificate-authority-data"]))
      assert.equal(user, doc.users[1].name)
      local cert = assert(pki.read_cert(encoding.base64_decode(doc.users[1].user["client-certificate-data"])))
      local key = assert(pki.read_key(encoding.base64_decode(doc.users[1].user["client-key-data"])))
      assert.is_true(cert:matches(key))
      assert.is_true(cert:verify(cacert))
      local i = cert:info()
      assert.same({ cn = user, o = w[2] }, i.subject)
      assert.same({ "client_auth" }, i.ext_usages)
      assert.same({ "digital_signature", "key_encipherment" }, i.usages)
      assert.same({}, i.dns)
      assert.equal(cainfo.not_before, i.not_before) -- kubeadm sets no NotBefore: the CA's
      -- NotAfter = this run's start + certificateValidityPeriod (certs ran in an earlier process)
      local d = i.not_after - (cainfo.not_before + 300 + 8760 * 3600)
      assert.is_true(math.abs(d) < 120, tostring(d)) -- (this machine's clock may step back between two runs)
    end
  end)

  it("loads in kubectl, whose view shows the subject's user", function()
    for f, w in pairs(want) do
      local p = io.popen(q(kubectl()) .. " config view --raw -o jsonpath='{.users[0].name} {.contexts[0].name}' --kubeconfig "
        .. q(root .. "/etc/kubernetes/" .. f) .. " 2>&1")
      local o = p:read("a")
      p:close()
      assert.equal(w[1] .. " " .. w[1] .. "@kubernetes", o)
    end
  end)

  it("keeps existing files, warns about another server, refuses a wrong CA", function()
    local before = helpers.read(root .. "/etc/kubernetes/admin.conf")
    local code, o, err = run(root, dir, "192.0.2.136", "kubeconfig", "all")
    assert.equal(0, code, err)
    assert.matches('Using existing kubeconfig file: "/etc/kubernetes/admin.conf"', o, 1, true)
    assert.matches('a kubeconfig file "/etc/kubernetes/scheduler.conf" exists already but has an unexpected API Server URL: '
      .. "expected: https://192.0.2.136:6443, got: https://192.0.2.135:6443", err, 1, true)
    local _, n = err:gsub("unexpected API Server URL", "")
    assert.equal(3, n) -- kubelet, controller-manager, scheduler; once each
    assert.equal(before, helpers.read(root .. "/etc/kubernetes/admin.conf"))
    -- another CA
    local d2 = helpers.tmpdir()
    assert.equal(0, (run(d2 .. "/r", d2, nil, "certs", "ca")))
    os.execute("cp " .. q(d2 .. "/r/etc/kubernetes/pki/ca.crt") .. " " .. q(d2 .. "/r/etc/kubernetes/pki/ca.key") ..
      " " .. q(root .. "/etc/kubernetes/pki/"))
    code, _, err = run(root, dir, nil, "kubeconfig", "all")
    assert.equal(1, code)
    assert.matches('a kubeconfig file "/etc/kubernetes/admin.conf" exists already but has got the wrong CA cert', err, 1, true)
    assert.equal(before, helpers.read(root .. "/etc/kubernetes/admin.conf"))
    helpers.rmrf(d2)
  end)

  it("kubelet.conf follows the CPE when ControlPlaneKubeletLocalMode is off", function()
    local d = helpers.tmpdir()
    local c = d .. "/k.yaml"
    helpers.write(c, CFG:format("192.0.2.135") .. "featureGates:\n  ControlPlaneKubeletLocalMode: false\n")
    local code, _, err = helpers.moonadm({ "init", "phase", "certs", "ca", "--root", d .. "/r", "--config", c })
    assert.equal(0, code, err)
    code, _, err = helpers.moonadm({ "init", "phase", "kubeconfig", "kubelet", "--root", d .. "/r", "--config", c })
    assert.equal(0, code, err)
    assert.matches("server: https://lb.example.com:6443\n", helpers.read(d .. "/r/etc/kubernetes/kubelet.conf"), 1, true)
    helpers.rmrf(d)
  end)
end)
