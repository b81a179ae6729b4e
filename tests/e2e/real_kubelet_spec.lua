-- The real-kubelet lab (issue 17): `lab up --kubelet real` with one control plane and one worker,
-- each node its own containerd v2 and the real kubelet v1.35.4, started from kubeadm's drop-in by
-- moonadm's systemd node runtime. What a user checks: Nodes Ready as the kubelet reports them, every
-- static Pod a container the CRI lists, the addons running, a Pod on the worker with a pod IP that
-- resolves the API's Service through coredns and reaches the apiserver through kube-proxy's rules,
-- the worker's bootstrap CSR approved, `reset` removing its containers through the CRI and the node
-- joining again, no unknown-field warning from the kubelet, an etcd snapshot restored with the etcd
-- image's etcdutl as a one-shot static Pod while the worker's Pod keeps running, and `lab down` leaving nothing.
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"

local NAME, SUBNET = "e2ereal", "10.252.9"

local crictl = fixture.crictl

local kjson = fixture.kjson

local wait = fixture.wait_for

local function node_ready(st, name)
  local rc, out = fixture.kubectl(st, { "get", "node", name, "-o", "json" })
  if rc ~= 0 then return false, out end
  for _, c in ipairs(cjson.decode(out).status.conditions or {}) do
    if c.type == "Ready" then return c.status == "True", c.message end
  end
  return false, "no Ready condition"
end

describe("the real-kubelet lab (own lab " .. NAME .. ", 1 control plane + 1 worker)", function()
  local code, out, err, st, t_up
  setup(function()
    local t0 = os.time()
    code, out, err = h.moonadm { "lab", "up", "--name", NAME, "--subnet", SUBNET, "--kubelet", "real", "--workers", "1" }
    t_up = os.time() - t0
    if code == 0 then st = assert(fixture.state(NAME)) end
  end)
  teardown(function()
    h.moonadm { "lab", "down", "--name", NAME }
  end)

  it("comes up: both Nodes Ready as the real kubelet reports them, on containerd", function()
    assert.equal(0, code, out .. err)
    io.stderr:write(("\n[figure] lab up --kubelet real, 1 control plane + 1 worker: %ds\n"):format(t_up))
    local nodes = kjson(st, { "get", "nodes", "-o", "json" })
    assert.equal(2, #nodes.items)
    for _, n in ipairs(nodes.items) do
      assert.equal("v1.35.4", n.status.nodeInfo.kubeletVersion)
      assert.matches("^containerd://2%.4%.2", n.status.nodeInfo.containerRuntimeVersion)
      assert.is_string(n.spec.podCIDR)
      local ready
      for _, c in ipairs(n.status.conditions) do if c.type == "Ready" then ready = c end end
      assert.equal("True", ready.status, n.metadata.name)
      assert.equal("KubeletReady", ready.reason)
    end
  end)

  it("runs every static Pod as a container the CRI lists, with a Running mirror Pod", function()
    assert.equal(0, code, out .. err)
    local rc, ps = crictl(st, "cp1", { "ps", "-o", "json" })
    assert.equal(0, rc, ps)
    local running = {}
    for _, c in ipairs(cjson.decode(ps).containers) do
      if c.state == "CONTAINER_RUNNING" then running[c.metadata.name] = true end
    end
    for _, comp in ipairs { "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler" } do
      assert.is_true(running[comp], comp .. " is not a running container")
      local pod = kjson(st, { "get", "pod", "-n", "kube-system", comp .. "-cp1", "-o", "json" })
      assert.equal("Running", pod.status.phase)
      assert.is_string(pod.metadata.annotations["kubernetes.io/config.mirror"])
    end
  end)

  it("runs the addons: coredns and kube-proxy ready", function()
    assert.equal(0, code, out .. err)
    local dep = kjson(st, { "get", "deployment", "-n", "kube-system", "coredns", "-o", "json" })
    assert.equal(dep.spec.replicas, dep.status.availableReplicas)
    local ds = kjson(st, { "get", "daemonset", "-n", "kube-system", "kube-proxy", "-o", "json" })
    assert.equal(2, ds.status.numberReady)
  end)

  it("gives a worker Pod an IP that resolves the API's Service through coredns and reaches it through kube-proxy", function()
    assert.equal(0, code, out .. err)
    local manifest = h.tmpdir() .. "/bb.yaml"
    h.write(manifest, [[
apiVersion: v1
kind: Pod
metadata: {name: bb, namespace: default}
spec:
  nodeName: w1
  containers:
  - {name: bb, image: "moonadm.lab/busybox:1.35.0", imagePullPolicy: IfNotPresent, command: [sh, -c, "sleep 3600"]}
]])
    local rc, o = fixture.kubectl(st, { "apply", "-f", manifest })
    assert.equal(0, rc, o)
    rc, o = fixture.kubectl(st, { "wait", "--for=condition=Ready", "pod/bb", "--timeout=90s" })
    assert.equal(0, rc, o)
    local pod = kjson(st, { "get", "pod", "bb", "-o", "json" })
    local w1 = kjson(st, { "get", "node", "w1", "-o", "json" })
    local prefix = w1.spec.podCIDR:match("^(%d+%.%d+%.%d+)%.")
    assert.equal(prefix, pod.status.podIP:match("^(%d+%.%d+%.%d+)%."), "the pod's IP is in w1's pod CIDR")
    rc, o = fixture.kubectl(st, { "exec", "bb", "--", "nslookup", "kubernetes.default.svc.cluster.local" })
    assert.equal(0, rc, o)
    -- the answer, not the resolver's own "Address: 10.96.0.10:53" line
    assert.matches("Name:%s+kubernetes%.default%.svc%.cluster%.local%s+Address:%s+10%.96%.0%.1%f[^%d]", o)
    -- a plain-HTTP request to the Service's port: only the apiserver answers it this way
    rc, o = fixture.kubectl(st, { "exec", "bb", "--", "sh", "-c",
      "printf 'GET /version HTTP/1.0\\r\\n\\r\\n' | nc -w 5 kubernetes.default.svc.cluster.local 443" })
    assert.matches("Client sent an HTTP request to an HTTPS server", o, 1, true)
  end)

  it("bootstrapped the worker's kubelet through a CSR the controller-manager approved", function()
    assert.equal(0, code, out .. err)
    local csrs = kjson(st, { "get", "csr", "-o", "json" })
    local approved
    for _, c in ipairs(csrs.items) do
      if c.spec.username:match("^system:bootstrap:") and c.spec.signerName == "kubernetes.io/kube-apiserver-client-kubelet" then
        for _, cond in ipairs((c.status or {}).conditions or {}) do approved = approved or cond.type == "Approved" end
        assert.is_string(c.status.certificate)
      end
    end
    assert.is_true(approved)
    -- the kubelet writes its rotated client certificate where kubelet.conf points
    local rc, conf = fixture.exec(st, "w1", { "cat", "/etc/kubernetes/kubelet.conf" })
    assert.equal(0, rc, conf)
    assert.matches("/var/lib/kubelet/pki/kubelet%-client%-current%.pem", conf)
    rc = fixture.exec(st, "w1", { "test", "-s", "/var/lib/kubelet/pki/kubelet-client-current.pem" })
    assert.equal(0, rc)
  end)

  it("has no unknown-field warning in any kubelet's log for moonadm's files", function()
    assert.equal(0, code, out .. err)
    for _, n in ipairs(st.nodes) do
      local text = h.read(n.root .. "/var/log/kubelet.log") or ""
      assert.is_true(#text > 0, n.name .. ": no kubelet log")
      assert.is_nil(text:match("unknown field"), n.name)
      assert.is_nil(text:match("strict decoding error"), n.name)
    end
  end)

  it("starts a kubelet that exits again, as the kubelet service's Restart=always does, and the Node stays Ready", function()
    assert.equal(0, code, out .. err)
    local rc, state = fixture.exec(st, "w1", { "cat", "/run/moonadm-lab/kubelet.state" })
    assert.equal(0, rc, state)
    local pid = assert(state:match("^%d+ active (%d+)"), state)
    rc = fixture.exec(st, "w1", { "kill", "-9", pid })
    assert.equal(0, rc)
    wait("a new kubelet on w1", 60, function()
      local _, s2 = fixture.exec(st, "w1", { "cat", "/run/moonadm-lab/kubelet.state" })
      local p2 = s2:match("^%d+ active (%d+)")
      return p2 ~= nil and p2 ~= pid, s2
    end)
    wait("w1 Ready", 60, function() return node_ready(st, "w1") end)
    assert.matches("kubelet: exited with 137; restarting in 10s", h.read(st.nodes[2].root .. "/var/log/moonadm-node.log"), 1, true)
  end)

  it("restores an etcd snapshot with the etcd image's etcdutl as a static Pod; the worker's Pod keeps running", function()
    assert.equal(0, code, out .. err)
    local before = kjson(st, { "get", "pod", "bb", "-o", "json" })
    local rc, o = fixture.kubectl(st, { "create", "configmap", "in-snapshot", "-n", "default" })
    assert.equal(0, rc, o)
    local dir = h.tmpdir()
    rc, o = fixture.exec(st, "cp1", { "moonadm", "etcd", "snapshot", "save", dir .. "/s.db" })
    assert.equal(0, rc, o)
    rc, o = fixture.kubectl(st, { "create", "configmap", "after-snapshot", "-n", "default" })
    assert.equal(0, rc, o)
    rc, o = fixture.exec(st, "cp1", { "moonadm", "etcd", "snapshot", "restore", dir .. "/s.db", "--yes", "--etcdutl", "image" })
    assert.equal(0, rc, o)
    assert.matches("etcdutl of registry.k8s.io/etcd:3.6.6-0 (a one-shot static Pod)", o, 1, true)
    assert.matches("The cluster holds the snapshot's data", o, 1, true)
    rc, o = fixture.kubectl(st, { "get", "configmap", "in-snapshot", "-n", "default", "-o", "name" })
    assert.equal(0, rc, o)
    rc, o = fixture.kubectl(st, { "get", "configmap", "after-snapshot", "-n", "default", "-o", "name" })
    assert.are_not.equal(0, rc, o)
    assert.matches("NotFound", o, 1, true)
    -- the one-shot Pod's manifest is gone, and the restored cluster keeps the worker's Pod as it ran
    rc, o = fixture.exec(st, "cp1", { "ls", "/etc/kubernetes/manifests" })
    assert.equal(0, rc, o)
    assert.is_nil(o:find("moonadm-etcdutl", 1, true), o)
    wait("both Nodes Ready after the restore", 120, function()
      local a, why = node_ready(st, "cp1")
      if not a then return false, why end
      return node_ready(st, "w1")
    end)
    rc, o = fixture.kubectl(st, { "wait", "--for=condition=Ready", "pod/bb", "--timeout=60s" })
    assert.equal(0, rc, o)
    local after = kjson(st, { "get", "pod", "bb", "-o", "json" })
    assert.equal(before.metadata.uid, after.metadata.uid)
    assert.equal(before.status.containerStatuses[1].containerID, after.status.containerStatuses[1].containerID)
    h.rmrf(dir)
  end)

  it("resets the worker: the CRI lists no pod afterwards, the kubelet is stopped, and it joins again", function()
    assert.equal(0, code, out .. err)
    local rc, o = crictl(st, "w1", { "pods", "-q" })
    assert.equal(0, rc, o)
    assert.matches("%x", o, 1, "w1 runs pods before the reset")
    local rcode, rout, rerr = fixture.exec(st, "w1", { "moonadm", "reset", "-f" })
    assert.equal(0, rcode, rout .. rerr)
    rc, o = crictl(st, "w1", { "pods", "-q" })
    assert.equal(0, rc, o)
    assert.equal("", (o:gsub("%s+", "")))
    rc, o = crictl(st, "w1", { "ps", "-a", "-q" })
    assert.equal(0, rc, o)
    assert.equal("", (o:gsub("%s+", "")))
    rc = fixture.exec(st, "w1", { "systemctl", "is-active", "--quiet", "kubelet" })
    assert.equal(3, rc)
    fixture.kubectl(st, { "delete", "node", "w1", "--wait=true" })
    local jcode, jout, jerr = fixture.exec(st, "w1", { "moonadm", "join", "--config", st.dir .. "/w1-join.yaml" })
    assert.equal(0, jcode, jout .. jerr)
    wait("w1 Ready again", 120, function() return node_ready(st, "w1") end)
    -- its new pod CIDR is wired (lab exec after a join): a new pod gets an address in it
    local w1 = kjson(st, { "get", "node", "w1", "-o", "json" })
    local conflist = cjson.decode(h.read(st.nodes[2].root .. "/etc/cni/net.d/10-moonadm-lab.conflist") or "{}")
    assert.equal(w1.spec.podCIDR, conflist.plugins[1].ipam.ranges[1][1].subnet)
  end)

  it("lab down leaves no process, namespace or cgroup of the lab", function()
    assert.equal(0, code, out .. err)
    local rc, o = h.moonadm { "lab", "down", "--name", NAME }
    assert.equal(0, rc, o)
    local p = io.popen("ip netns list")
    local ns = p:read("a")
    p:close()
    assert.is_nil(ns:match(NAME .. "%-"))
    for _, n in ipairs(st.nodes) do
      local cg = io.open("/sys/fs/cgroup/pids/moonadm-" .. NAME .. "-" .. n.name .. "/cgroup.procs", "r")
      if cg then cg:close() end
      assert.is_nil(cg, n.name .. "'s cgroup is still there")
    end
    local ps = io.popen("ps -eo args")
    local all = ps:read("a")
    ps:close()
    assert.is_nil(all:match(NAME .. "/cp1"), "a process of the lab survived")
    assert.is_nil(all:match("lab node %-%-root [^\n]*" .. NAME), "a node init survived")
  end)
end)

describe("the real-kubelet lab with a containerd that cannot start (own lab e2erealbad)", function()
  local NAME_BAD, dir = "e2erealbad", nil
  teardown(function() h.moonadm { "lab", "down", "--name", NAME_BAD } end)

  it("fails naming the node and its containerd log, and lab down removes everything", function()
    dir = h.tmpdir()
    for _, b in ipairs { "etcd", "etcdctl", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kubeadm",
      "kubelet", "containerd-shim-runc-v2", "ctr", "crictl" } do
      os.execute(("ln -s %s %s"):format(h.q(fixture.bin_dir .. "/" .. b), h.q(dir .. "/" .. b)))
    end
    h.write(dir .. "/containerd", "#!/bin/sh\necho 'containerd: broken on purpose' >&2\nexit 1\n")
    os.execute("chmod +x " .. h.q(dir .. "/containerd"))
    local t0 = os.time()
    local code, out, err = h.moonadm { "lab", "up", "--name", NAME_BAD, "--subnet", "10.252.11", "--kubelet", "real",
      "--bin-dir", dir }
    assert.are_not.equal(0, code)
    local text = out .. err
    assert.matches("node cp1: containerd exited %d+ times without answering: see [^\n]*/cp1/var/log/containerd%.log", text)
    assert.is_true(os.time() - t0 < 60, "took " .. (os.time() - t0) .. "s")
    local log = h.read(h.top .. "/.lab/" .. NAME_BAD .. "/cp1/var/log/containerd.log") or ""
    assert.matches("broken on purpose", log, 1, true)
    local rc, o = h.moonadm { "lab", "down", "--name", NAME_BAD }
    assert.equal(0, rc, o)
    local p = io.popen("ip netns list")
    local ns = p:read("a")
    p:close()
    assert.is_nil(ns:match(NAME_BAD .. "%-"))
  end)
end)
