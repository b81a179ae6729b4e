-- The lab itself: a real control plane from moonadm's own files, on one machine.
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"

describe("lab (1 node)", function()
  local st
  setup(function() st = fixture.get("one") end)

  it("serves /readyz from the real kube-apiserver with moonadm's PKI and manifests", function()
    local rc, out = fixture.kubectl(st, { "get", "--raw", "/readyz" })
    assert.equal(0, rc, out)
    assert.equal("ok", out)
  end)

  it("runs each static pod as a process in the node's namespace, reported by lab status", function()
    local code, out = h.moonadm { "lab", "status", "--name", st.name, "-o", "json" }
    assert.equal(0, code, out)
    local status = cjson.decode(out)
    local pods = {}
    for _, p in ipairs(status.nodes[1].pods) do pods[p.pod] = p end
    for _, name in ipairs { "etcd-cp1", "kube-apiserver-cp1", "kube-controller-manager-cp1", "kube-scheduler-cp1" } do
      assert.is_truthy(pods[name], name)
      assert.is_number(pods[name].pid, name)
    end
    assert.matches("^https://" .. st.nodes[1].ip:gsub("%.", "%%.") .. ":6443$", status.nodes[1].kubelet_server)
  end)

  it("accepts every static pod manifest moonadm wrote as a Pod (dryRun=All)", function()
    -- admission needs kube-system's default ServiceAccount, made by the real controller-manager
    local deadline = os.time() + 90
    while fixture.kubectl(st, { "-n", "kube-system", "get", "serviceaccount", "default" }) ~= 0 and os.time() < deadline do
      os.execute("sleep 0.5")
    end
    for _, m in ipairs { "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler" } do
      local file = st.nodes[1].root .. "/etc/kubernetes/manifests/" .. m .. ".yaml"
      local rc, out = fixture.kubectl(st, { "create", "--dry-run=server", "-f", file, "-o", "name" })
      assert.equal(0, rc, out)
      assert.equal("pod/" .. m, (out:gsub("%s+$", "")))
    end
  end)

  it("lets `lab exec` run a command as if on the node (its address, its /etc/kubernetes)", function()
    local code, out = fixture.exec(st, "cp1", { "sh", "-c", "ls /etc/kubernetes/pki/ca.crt && ip -4 -o addr show eth0" })
    assert.equal(0, code, out)
    assert.matches(st.nodes[1].ip, out, 1, true)
  end)

  it("has the reference kubeadm read moonadm's PKI (certs check-expiration)", function()
    local code, out = fixture.exec(st, "cp1", { fixture.bin_dir .. "/kubeadm", "certs", "check-expiration",
      "--kubeconfig", "/etc/kubernetes/admin.conf" })
    assert.equal(0, code, out)
    assert.matches("apiserver%-etcd%-client%s", out)
    assert.matches("front%-proxy%-ca%s", out)
  end)
end)

describe("lab kubelet stand-in (1 node)", function()
  local st
  setup(function() st = fixture.get("one") end)

  local function wait_until(what, fn)
    local deadline = os.time() + 60
    local last
    while os.time() < deadline do
      local ok, v = pcall(fn)
      if ok and v then return v end
      last = v
      os.execute("sleep 0.5")
    end
    error("timed out waiting for " .. what .. ": " .. tostring(last))
  end

  it("registers its Node and keeps it Ready with a Lease", function()
    wait_until("node Ready", function()
      local rc, out = fixture.kubectl(st, { "get", "node", "cp1", "-o",
        "jsonpath={.status.conditions[?(@.type==\"Ready\")].status} {.status.addresses[0].address}" })
      return rc == 0 and out == "True " .. st.nodes[1].ip
    end)
    local rc, out = fixture.kubectl(st, { "-n", "kube-node-lease", "get", "lease", "cp1", "-o", "jsonpath={.spec.holderIdentity}" })
    assert.equal(0, rc, out)
    assert.equal("cp1", out)
  end)

  it("writes kubelet-client-current.pem from kubelet.conf's embedded certificate, as a kubelet's first start does", function()
    local pem = h.read(st.nodes[1].root .. "/var/lib/kubelet/pki/kubelet-client-current.pem")
    assert.truthy(pem and pem:find("BEGIN CERTIFICATE", 1, true) and pem:find("PRIVATE KEY", 1, true))
    local info = require("moonadm.pki").read_cert(pem):info()
    assert.equal("system:node:cp1", info.subject.cn)
  end)

  it("keeps a mirror pod per static pod, re-created after a delete, with the manifest's hash", function()
    local function mirror()
      local rc, out = fixture.kubectl(st, { "-n", "kube-system", "get", "pod", "kube-scheduler-cp1", "-o",
        "jsonpath={.metadata.uid} {.metadata.annotations.kubernetes\\.io/config\\.mirror} {.status.phase}" })
      if rc ~= 0 then return nil end
      local uid, hash, phase = out:match("^(%S+) (%S+) (%S+)$")
      return uid and phase == "Running" and { uid = uid, hash = hash }
    end
    local before = wait_until("mirror pod", mirror)
    assert.equal(32, #before.hash)
    local rc, out = fixture.kubectl(st, { "-n", "kube-system", "delete", "pod", "kube-scheduler-cp1", "--wait=false" })
    assert.equal(0, rc, out)
    local after = wait_until("re-created mirror pod", function()
      local m = mirror()
      return m and m.uid ~= before.uid and m
    end)
    assert.equal(before.hash, after.hash)
    -- the etcd mirror pod carries the KEP-2506 annotation kubeadm discovers endpoints from
    rc, out = fixture.kubectl(st, { "-n", "kube-system", "get", "pods", "-l", "component=etcd", "-o",
      "jsonpath={.items[0].metadata.annotations.kubeadm\\.kubernetes\\.io/etcd\\.advertise-client-urls}" })
    assert.equal(0, rc, out)
    assert.equal("https://" .. st.nodes[1].ip .. ":2379", out)
  end)
end)

describe("lab kubelet stand-in certificate rotation (1 node)", function()
  local st
  setup(function() st = fixture.get("one") end)

  it("renews its client certificate through a CSR the real controller-manager approves", function()
    local pem_path = st.nodes[1].root .. "/var/lib/kubelet/pki/kubelet-client-current.pem"
    local pki = require "moonadm.pki"
    local before = pki.read_cert(h.read(pem_path)):info()
    local code, out = h.moonadm { "lab", "status", "--name", st.name, "-o", "json" }
    assert.equal(0, code, out)
    local pid = math.tointeger(cjson.decode(out).nodes[1].kubelet_pid)
    os.execute("kill -USR1 " .. pid)
    local after
    local deadline = os.time() + 60
    while os.time() < deadline do
      local text = h.read(pem_path)
      local c = text and pki.read_cert(text)
      after = c and c:info()
      if after and after.serial ~= before.serial then break end
      os.execute("sleep 0.5")
    end
    assert.are_not.equal(before.serial, after.serial)
    assert.equal("system:node:cp1", after.subject.cn)
    assert.same({ "system:nodes" }, after.subject.o)
    -- the node keeps talking with the new certificate
    local rc, ready = fixture.kubectl(st, { "get", "node", "cp1", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}" })
    assert.equal(0, rc, ready)
    assert.equal("True", ready)
  end)
end)
