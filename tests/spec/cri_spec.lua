-- The CRI client (scripts/cri/client.lua) against a scripted crictl, and the pieces of the
-- real-kubelet lab that read or write a format: the kubelet's command line from kubeadm's drop-in
-- (lab/unit.lua), the CNI conflist, the cgroup layout and SystemVerification's verdict.
local cjson = require "cjson"
local cri = require "cri.client"
local unit = require "lab.unit"
local cni = require "lab.cni"
local preflight = require "preflight.checks"
local h = require "helpers"

-- A crictl whose answers are given per subcommand: answers[sub] = {code, out} or a function(argv).
local function fake(answers)
  local calls = {}
  local run = function(spec)
    local argv = spec.argv
    calls[#calls + 1] = argv
    local sub = argv[10] -- after crictl --config F --runtime-endpoint E --image-endpoint E --timeout T
    local a = answers[sub]
    if type(a) == "function" then return a(argv) end
    if not a then return 1, "unknown " .. tostring(sub) end
    return a[1], a[2]
  end
  return assert(cri.new("/run/x.sock", { crictl = "/fake/crictl", run = run })), calls
end

describe("cri.client", function()
  it("dials the endpoint for runtime and images, with no crictl.yaml and a timeout", function()
    local c, calls = fake { version = { 0, "Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  2.4.2\nRuntimeApiVersion:  v1\n" } }
    local v = assert(c:version())
    assert.equal("containerd", v.runtimeName)
    assert.equal("2.4.2", v.runtimeVersion)
    assert.equal("v1", v.runtimeApiVersion)
    assert.same({ "/fake/crictl", "--config", "/dev/null", "--runtime-endpoint", "unix:///run/x.sock", "--image-endpoint",
      "unix:///run/x.sock", "--timeout", "10s", "version" }, calls[1])
  end)

  it("image presence: one listing answers for every listed tag or digest, anything else asks the runtime, a pull re-lists", function()
    local listed = { images = { { repoTags = { "registry.k8s.io/pause:3.10.1" }, repoDigests = { "registry.k8s.io/pause@sha256:aa" } },
      { repoTags = { "registry.k8s.io/etcd:3.6.6-0" }, repoDigests = {} } } }
    local c, calls = fake {
      images = { 0, cjson.encode(listed) },
      inspecti = function(argv) return argv[#argv] == "busybox:1" and 0 or 1, "" end,
      pull = { 0, "Image is up to date" },
    }
    assert.is_true(c:image_exists("registry.k8s.io/pause:3.10.1"))
    assert.is_true(c:image_exists("registry.k8s.io/pause@sha256:aa"))
    assert.is_true(c:image_exists("registry.k8s.io/etcd:3.6.6-0"))
    local function count(sub)
      local n = 0
      for _, a in ipairs(calls) do if a[10] == sub then n = n + 1 end end
      return n
    end
    assert.equal(1, count("images"))
    assert.equal(0, count("inspecti"))
    assert.is_true(c:image_exists("busybox:1")) -- a short name the runtime normalizes
    assert.is_false(c:image_exists("registry.k8s.io/kube-apiserver:v1.35.4"))
    assert.equal(2, count("inspecti"))
    assert.is_true(c:pull("registry.k8s.io/kube-apiserver:v1.35.4"))
    c:image_exists("registry.k8s.io/pause:3.10.1")
    assert.equal(2, count("images"))
  end)

  it("image presence without a listing (an older crictl): every image asked of the runtime", function()
    local c, calls = fake { inspecti = { 0, "" } }
    assert.is_true(c:image_exists("registry.k8s.io/pause:3.10.1"))
    assert.is_true(c:image_exists("registry.k8s.io/etcd:3.6.6-0"))
    assert.equal("inspecti", calls[#calls][10])
  end)

  it("running: RuntimeReady must be true; NetworkReady is not looked at", function()
    local info = { status = { conditions = { { type = "RuntimeReady", status = true }, { type = "NetworkReady", status = false,
      reason = "NetworkPluginNotReady" } } } }
    local c = fake { info = { 0, cjson.encode(info) } }
    assert.is_true((c:running()))
    info.status.conditions[1] = { type = "RuntimeReady", status = false, reason = "Broken", message = "no runc" }
    c = fake { info = { 0, cjson.encode(info) } }
    local ok, err = c:running()
    assert.is_nil(ok)
    assert.equal('container runtime condition "RuntimeReady" is not true. reason: Broken, message: no runc', err)
  end)

  it("a runtime that does not answer: the error names the endpoint and crictl's words, without its log prefix", function()
    local c = fake { info = { 1, 'time="2026-12-02T15:54:19Z" level=fatal msg="validate service connection: dial unix /run/x.sock: connect: no such file or directory"\n' } }
    local ok, err = c:running()
    assert.is_nil(ok)
    assert.equal('container runtime is not running: crictl info (unix:///run/x.sock): "validate service connection: dial unix ' ..
      '/run/x.sock: connect: no such file or directory"', err)
  end)

  it("RuntimeConfig: implemented, unimplemented (a warning for the caller), or an error", function()
    assert.is_true(fake({ ["runtime-config"] = { 0, "{}" } }):runtime_config_implemented())
    assert.is_false(fake({ ["runtime-config"] = { 1, "rpc error: code = Unimplemented desc = unknown method RuntimeConfig" } })
      :runtime_config_implemented())
    local ok, err = fake({ ["runtime-config"] = { 1, "deadline exceeded" } }):runtime_config_implemented()
    assert.is_nil(ok)
    assert.matches("could not check if the runtime config is available", err, 1, true)
  end)

  it("lists pod sandboxes and removes each, retrying as kubeadm does, joining what still failed", function()
    local pods = { items = { { id = "aaa", metadata = { name = "etcd-cp1", namespace = "kube-system" }, state = "SANDBOX_READY" },
      { id = "bbb", metadata = { name = "x", namespace = "default" }, state = "SANDBOX_NOTREADY" } } }
    local stops = {}
    local c, calls = fake {
      pods = { 0, cjson.encode(pods) },
      stopp = function(argv)
        local id = argv[#argv]
        stops[id] = (stops[id] or 0) + 1
        if id == "aaa" and stops[id] < 3 then return 1, "busy" end
        return 0, ""
      end,
      rmp = function(argv) if argv[#argv] == "bbb" then return 1, "in use" end return 0, "" end,
    }
    local list = assert(c:pods())
    assert.same({ id = "aaa", name = "etcd-cp1", namespace = "kube-system", state = "SANDBOX_READY" }, list[1])
    local n, err = c:remove_pods { "aaa", "bbb" }
    assert.is_nil(n)
    assert.equal(3, stops.aaa) -- failed side by side and once alone, then stopped and removed
    assert.equal(1 + cri.REMOVE_RETRIES, stops.bbb) -- the side-by-side stop, then kubeadm's retries
    assert.matches("^failed to remove pod bbb: crictl rmp %(unix:///run/x%.sock%): in use$", err)
    assert.is_true(#calls > 5)
    local ok_calls
    c, ok_calls = fake { stopp = { 0, "" }, rmp = { 0, "" } }
    n = assert(c:remove_pods { "a", "b" })
    assert.equal(2, n)
    -- all went at once: a crictl stopp per pod side by side, then one crictl rmp for both
    assert.equal(3, #ok_calls)
    assert.same({ "stopp", "a" }, { table.unpack(ok_calls[1], 10) })
    assert.same({ "stopp", "b" }, { table.unpack(ok_calls[2], 10) })
    assert.same({ "rmp", "a", "b" }, { table.unpack(ok_calls[3], 10) })
  end)

  it("without crictl: an error saying what to install", function()
    local c, err = cri.new("/run/x.sock", { path = "/nonexistent" })
    assert.is_nil(c)
    assert.matches("crictl not found in system path", err, 1, true)
    assert.matches("cri%-tools", err)
  end)
end)

describe("lab.unit: the kubelet's command line from kubeadm's drop-in", function()
  local dropin = h.read(h.top .. "/packaging/10-kubeadm.conf")

  it("builds the command systemd would run, with the flags env split into words", function()
    local files = {
      ["/var/lib/kubelet/kubeadm-flags.env"] = 'KUBELET_KUBEADM_ARGS="--node-ip=192.0.2.7 --hostname-override=n1"\n',
      ["/etc/default/kubelet"] = "# site overrides\nKUBELET_EXTRA_ARGS=--v=2\n",
    }
    local argv = assert(unit.argv(unit.parse(dropin), function(p) return files[p] end))
    assert.same({ "/usr/bin/kubelet", "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
      "--kubeconfig=/etc/kubernetes/kubelet.conf", "--config=/var/lib/kubelet/config.yaml", "--node-ip=192.0.2.7",
      "--hostname-override=n1", "--v=2" }, argv)
  end)

  it("an optional EnvironmentFile may be missing; a required one may not; ${VAR} stays one word", function()
    local u = unit.parse("[Service]\nEnvironment=\"A=x y\" B=z\nEnvironmentFile=/etc/req\nExecStart=\nExecStart=/bin/k ${A} $A $B\n")
    local argv, err = unit.argv(u, function() return nil end)
    assert.is_nil(argv)
    assert.equal("EnvironmentFile /etc/req is missing", err)
    argv = assert(unit.argv(u, function() return "" end))
    assert.same({ "/bin/k", "x y", "x", "y", "z" }, argv)
  end)
end)

describe("the real-kubelet lab's formats", function()
  it("writes one bridge + host-local conflist over the node's pod CIDR, with portmap", function()
    local c = cjson.decode(cni.conflist("10.244.1.0/24"))
    assert.equal("1.0.0", c.cniVersion)
    assert.equal("bridge", c.plugins[1].type)
    assert.is_true(c.plugins[1].isGateway)
    assert.equal("host-local", c.plugins[1].ipam.type)
    assert.equal("10.244.1.0/24", c.plugins[1].ipam.ranges[1][1].subnet)
    assert.equal("portmap", c.plugins[2].type)
  end)

  it("reads the cgroup layout: v1 subsystems from /proc/cgroups, v2 from the unified mount", function()
    local v, list = preflight.cgroups("tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw 0 0\n",
      "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t2\t10\t1\nmemory\t5\t10\t1\nhugetlb\t0\t1\t0\n")
    assert.equal("v1", v)
    assert.same({ "cpu", "memory" }, list)
    v, list = preflight.cgroups("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n", nil,
      function(p) return p == "/sys/fs/cgroup/cgroup.controllers" and "cpuset cpu memory pids\n" or nil end)
    assert.equal("v2", v)
    assert.same({ "cpuset", "cpu", "memory", "pids", "freezer", "devices" }, list)
  end)

  it("SystemVerification on this machine says what kubeadm says about cgroup v1", function()
    if preflight.cgroups() ~= "v1" then return end
    local found
    for _, r in ipairs(preflight.system_verification(35).run { flags = {}, root = "/" } or {}) do
      if r.msg == preflight.CGROUP_V1_ERROR then found = r end
    end
    assert.is_table(found)
    assert.equal("error", found.level)
    assert.matches("must also explicitly skip this validation", found.msg, 1, true)
  end)
end)
