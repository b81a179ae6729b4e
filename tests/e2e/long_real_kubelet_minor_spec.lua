-- A minor upgrade on the real-kubelet lab (issue 21; `make test-long`): its own lab e2erkm
-- (10.253.41), 1 control plane + 1 worker on containerd and the real kubelet v1.35.4, every node
-- holding v1.36.3's images too. `upgrade apply v1.36.3` on cp1 makes the real kubelet replace each
-- static Pod's container by the v1.36.3 image; then, as a user does with `apt install kubelet` and
-- `systemctl restart kubelet`, the node's kubelet is swapped to v1.36.3 (the lab's
-- /var/lib/moonadm-lab/kubelet.release, scripts/lab/node.lua) and the Node reports it; the same for
-- the worker after `upgrade node`; kube-proxy's DaemonSet and coredns's Deployment end on the new
-- images and available. Each upgrade is given the node's patches directory (its cgroupRoot), as a
-- user whose nodes have patches must: kubeadm rewrites the kubelet's config.yaml from the cluster's.
-- Needs `LAB_RELEASES=v1.36.3 make lab-bins-node` (and the default node set).
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"

local NAME, SUBNET = "e2erkm", "10.253.41"
local FROM, TO = "v1.35.4", "v1.36.3"
local TO_IMAGES = { ["etcd"] = "3.6.8-0", ["kube-apiserver"] = TO, ["kube-controller-manager"] = TO,
  ["kube-scheduler"] = TO }
local RELEASE_FILE = "/var/lib/moonadm-lab/kubelet.release"

local function wait(what, timeout, fn) return fixture.wait_for(what, timeout, fn, 2) end

describe("a minor upgrade " .. FROM .. " -> " .. TO .. " on the real-kubelet lab (own lab " .. NAME ..
  ", 1 control plane + 1 worker)", function()
  local code, out, err, st, t_up

  local function kjson(args) return fixture.kjson(st, args) end
  local function on(node, argv)
    local c, o, e = fixture.exec(st, node, argv)
    return c, o .. e
  end
  local function crictl(node, args)
    local c, o, e = fixture.crictl(st, node, args)
    assert.equal(0, c, o .. e)
    return o
  end
  -- the kubelet service's main PID on the node (its PID namespace's) and what that process runs
  local function kubelet_process(node)
    local c, o = on(node, { "systemctl", "status", "kubelet" })
    assert.equal(0, c, o)
    local pid = assert(o:match("Main PID: (%d+)"), o)
    local rc, cmdline = on(node, { "cat", "/proc/" .. pid .. "/cmdline" })
    assert.equal(0, rc, cmdline)
    return pid, (cmdline:gsub("%z.*", ""))
  end
  local function node_status(name)
    local rc, o = fixture.kubectl(st, { "get", "node", name, "-o", "json" })
    if rc ~= 0 then return nil, o end
    local n = cjson.decode(o)
    local ready
    for _, c in ipairs(n.status.conditions or {}) do if c.type == "Ready" then ready = c.status == "True" end end
    return n.status.nodeInfo.kubeletVersion, ready
  end
  -- what `apt install kubelet=<TO>` and `systemctl restart kubelet` do on a real node
  local function swap_kubelet(node)
    local pid_before, exe_before = kubelet_process(node)
    assert.equal(fixture.bin_dir .. "/" .. FROM .. "/kubelet", exe_before)
    local c, o = on(node, { "sh", "-c", "echo " .. TO .. " > " .. RELEASE_FILE })
    assert.equal(0, c, o)
    c, o = on(node, { "kubelet", "--version" })
    assert.equal(0, c, o)
    assert.matches("Kubernetes " .. TO:gsub("%.", "%%."), o)
    c, o = on(node, { "systemctl", "restart", "kubelet" })
    assert.equal(0, c, o)
    local pid_after, exe_after = kubelet_process(node)
    assert.are_not.equal(pid_before, pid_after)
    assert.equal(fixture.bin_dir .. "/" .. TO .. "/kubelet", exe_after)
    wait(node .. " reporting kubelet " .. TO .. " and Ready", 120, function()
      local v, ready = node_status(node)
      return v == TO and ready, ("kubeletVersion %s, Ready %s"):format(tostring(v), tostring(ready))
    end)
  end

  setup(function()
    for _, f in ipairs { fixture.bin_dir .. "/" .. TO .. "/kubelet", fixture.bin_dir .. "/" .. TO .. "/kube-proxy" } do
      assert(io.open(f, "r"), ("%s is missing: LAB_RELEASES=%s make lab-bins-node"):format(f, TO))
    end
    local t0 = os.time()
    code, out, err = h.moonadm { "lab", "up", "--name", NAME, "--subnet", SUBNET, "--kubelet", "real", "--workers", "1",
      "--ready-timeout", "300" }
    t_up = os.time() - t0
    if code == 0 then st = assert(fixture.state(NAME), "no lab.json") end
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", NAME } end)

  it("comes up at " .. FROM .. " with " .. TO .. "'s images imported on every node", function()
    assert.equal(0, code, out .. err)
    io.stderr:write(("\n[figure] lab up --kubelet real, 1 control plane + 1 worker: %ds\n"):format(t_up))
    for _, node in ipairs { "cp1", "w1" } do
      assert.equal(FROM, (node_status(node)))
      local have = {}
      for _, img in ipairs(cjson.decode(crictl(node, { "images", "-o", "json" })).images) do
        for _, t in ipairs(img.repoTags or {}) do have[t] = true end
      end
      for _, ref in ipairs { "kube-apiserver:" .. TO, "kube-controller-manager:" .. TO, "kube-scheduler:" .. TO,
        "kube-proxy:" .. TO, "etcd:3.6.8-0", "coredns/coredns:v1.14.2", "pause:3.10.2" } do
        assert.is_true(have["registry.k8s.io/" .. ref], node .. " lacks " .. ref)
      end
    end
  end)

  it("upgrade apply " .. TO .. " on cp1: the real kubelet runs each static Pod's " .. TO .. " image", function()
    assert.equal(0, code, out .. err)
    local before = {}
    for _, c in ipairs(cjson.decode(crictl("cp1", { "ps", "-o", "json" })).containers) do before[c.id] = true end
    local t0 = os.time()
    local ucode, uout = on("cp1", { "moonadm", "upgrade", "apply", TO, "--yes", "--patches", st.dir .. "/cp1-patches" })
    io.stderr:write(("\n[figure] upgrade apply %s -> %s on the real kubelet: %ds\n"):format(FROM, TO, os.time() - t0))
    assert.equal(0, ucode, uout)
    assert.matches('SUCCESS! A control plane node of your cluster was upgraded to "v1%.36%.3"', uout)
    -- the CRI's running containers: one per component, new, on the new image (crictl names the image by tag)
    local running = {}
    for _, c in ipairs(cjson.decode(crictl("cp1", { "ps", "-o", "json" })).containers) do
      if c.state == "CONTAINER_RUNNING" and TO_IMAGES[c.metadata.name] then
        local info = cjson.decode(crictl("cp1", { "inspect", c.id }))
        running[c.metadata.name] = { id = c.id, image = info.status.image.image }
      end
    end
    for comp, tag in pairs(TO_IMAGES) do
      local r = running[comp]
      assert.is_table(r, comp .. " runs no container")
      assert.is_nil(before[r.id], comp .. "'s container was not replaced")
      assert.equal("registry.k8s.io/" .. comp .. ":" .. tag, r.image)
      -- and its mirror Pod says so, Running
      local pod = kjson { "get", "pod", "-n", "kube-system", comp .. "-cp1", "-o", "json" }
      assert.equal("registry.k8s.io/" .. comp .. ":" .. tag, pod.spec.containers[1].image)
      assert.equal("Running", pod.status.phase)
    end
    local rc, v = fixture.kubectl(st, { "version", "-o", "json" })
    assert.equal(0, rc, v)
    assert.equal(TO, cjson.decode(v:match("{.*}")).serverVersion.gitVersion)
  end)

  it("cp1's kubelet is swapped to " .. TO .. " and restarted; the Node reports it", function()
    assert.equal(0, code, out .. err)
    swap_kubelet("cp1")
    -- the static Pods keep running under the new kubelet
    wait("cp1's static Pods Running under kubelet " .. TO, 120, function()
      for comp in pairs(TO_IMAGES) do
        local rc, o = fixture.kubectl(st, { "get", "pod", "-n", "kube-system", comp .. "-cp1", "-o", "jsonpath={.status.phase}" })
        if rc ~= 0 or o ~= "Running" then return false, comp .. ": " .. o end
      end
      return true
    end)
  end)

  it("upgrade node on w1, then its kubelet swapped to " .. TO, function()
    assert.equal(0, code, out .. err)
    local ucode, uout = on("w1", { "moonadm", "upgrade", "node", "--patches", st.dir .. "/w1-patches" })
    assert.equal(0, ucode, uout)
    assert.matches("successfully completed %(cluster version v1%.36%.3%)", uout)
    swap_kubelet("w1")
    local cfg = h.read(st.nodes[2].root .. "/var/lib/kubelet/config.yaml")
    assert.matches("cgroupRoot: /moonadm%-" .. NAME .. "%-w1", cfg)
  end)

  it("kube-proxy's DaemonSet and coredns's Deployment run the new images and are available", function()
    assert.equal(0, code, out .. err)
    wait("kube-proxy " .. TO .. " ready on both nodes and coredns v1.14.2 available", 180, function()
      local ds = kjson { "get", "daemonset", "-n", "kube-system", "kube-proxy", "-o", "json" }
      local dep = kjson { "get", "deployment", "-n", "kube-system", "coredns", "-o", "json" }
      local s, d = ds.status, dep.status
      -- status counts only once the controllers have seen the new spec
      local ok = s.observedGeneration == ds.metadata.generation and d.observedGeneration == dep.metadata.generation
        and ds.spec.template.spec.containers[1].image == "registry.k8s.io/kube-proxy:" .. TO
        and s.updatedNumberScheduled == 2 and s.numberReady == 2 and s.numberAvailable == 2
        and dep.spec.template.spec.containers[1].image == "registry.k8s.io/coredns/coredns:v1.14.2"
        and d.updatedReplicas == dep.spec.replicas and d.availableReplicas == dep.spec.replicas
        and (d.replicas or 0) == dep.spec.replicas
      if not ok then return false, cjson.encode { kube_proxy = s, coredns = d } end
      -- and every kube-proxy and coredns Pod left runs its new image, ready, as the kubelet reports it
      for _, sel in ipairs { { "k8s-app=kube-proxy", "registry.k8s.io/kube-proxy:" .. TO },
        { "k8s-app=kube-dns", "registry.k8s.io/coredns/coredns:v1.14.2" } } do
        local pods = kjson { "get", "pods", "-n", "kube-system", "-l", sel[1], "-o", "json" }
        if #pods.items == 0 then return false, "no pod " .. sel[1] end
        for _, p in ipairs(pods.items) do
          local cs = ((p.status or {}).containerStatuses or {})[1] or {}
          if cs.image ~= sel[2] or not cs.ready then
            return false, ("%s: %s ready=%s"):format(p.metadata.name, tostring(cs.image), tostring(cs.ready))
          end
        end
      end
      return true
    end)
  end)
end)
