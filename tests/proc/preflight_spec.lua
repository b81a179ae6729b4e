-- Preflight with kubeadm's check names on a temp root, with ports held open by the test.
local net = require "moonadm.net"
local preflight = require "preflight.checks"
local h = require "helpers"

local function cfg(port, extra)
  return ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: 127.0.0.1\n" ..
    "  bindPort: %d\nnodeRegistration:\n  name: %s\n%s"):format(port, require("config").node_name_default(), extra or "")
end

describe("preflight", function()
  local root
  before_each(function() root = h.tmpdir() end)
  after_each(function() h.rmrf(root) end)

  local function init_preflight(port, args, extra)
    h.write(root .. "/k.yaml", cfg(port, extra))
    local argv = { "init", "phase", "preflight", "--root", root, "--config", root .. "/k.yaml", "--node-runtime", "none",
      "--ignore-preflight-errors", "Port-10250,Port-10257,Port-10259,Port-2379,Port-2380" .. (args and ("," .. args) or "") }
    return h.moonadm(argv)
  end

  it("a port held by the test is Port-N in use; ignoring it by name passes", function()
    local l = assert(net.listen("127.0.0.1", 0))
    local port = l:port()
    assert.is_false(net.port_free("127.0.0.1", port))
    local code, _, err = init_preflight(port)
    assert.equal(1, code)
    assert.matches(("[ERROR Port-%d]: Port %d is in use"):format(port, port), err, 1, true)
    assert.matches("--ignore-preflight-errors", err, 1, true)
    code, _, err = init_preflight(port, "Port-" .. port)
    assert.equal(0, code, err)
    assert.matches(("\t[WARNING Port-%d]: Port %d is in use"):format(port, port), err, 1, true)
    l:close()
    code, _, err = init_preflight(port)
    assert.equal(0, code, err)
  end)

  it("existing manifests and a non-empty etcd data dir are errors with kubeadm's names; all ignores every one", function()
    local l = assert(net.listen("127.0.0.1", 0))
    local port = l:port(); l:close()
    h.write(root .. "/etc/kubernetes/manifests/kube-scheduler.yaml", "x")
    h.write(root .. "/var/lib/etcd/member/x", "x")
    local code, _, err = init_preflight(port)
    assert.equal(1, code)
    assert.matches("[ERROR FileAvailable--etc-kubernetes-manifests-kube-scheduler.yaml]: /etc/kubernetes/manifests/kube-scheduler.yaml already exists", err, 1, true)
    assert.matches("[ERROR DirAvailable--var-lib-etcd]: /var/lib/etcd is not empty", err, 1, true)
    code, _, err = h.moonadm { "init", "phase", "preflight", "--root", root, "--config", root .. "/k.yaml",
      "--node-runtime", "none", "--ignore-preflight-errors", "all" }
    assert.equal(0, code, err)
  end)

  it("external etcd skips the etcd ports and data dir", function()
    local l2379 = net.listen("0.0.0.0", 2379) -- may already be taken elsewhere: either way it must not be checked
    h.write(root .. "/var/lib/etcd/x", "x")
    h.write(root .. "/k.yaml", cfg(16443, "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\netcd:\n  external:\n    endpoints: [https://192.0.2.139:2379]\n"))
    local code, _, err = h.moonadm { "init", "phase", "preflight", "--root", root, "--config", root .. "/k.yaml",
      "--node-runtime", "none", "--ignore-preflight-errors", "Port-10250,Port-10257,Port-10259,Port-16443" }
    assert.equal(0, code, err)
    assert.falsy(err:find("Port-2379", 1, true))
    if l2379 then l2379:close() end
  end)

  it("join preflight: kubelet.conf, CA and manifests dir checks, control-plane ports", function()
    h.write(root .. "/etc/kubernetes/kubelet.conf", "x")
    h.write(root .. "/etc/kubernetes/pki/ca.crt", "x")
    h.write(root .. "/etc/kubernetes/manifests/etcd.yaml", "x")
    local l = assert(net.listen("127.0.0.1", 0))
    h.write(root .. "/j.yaml", ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n" ..
      "    apiServerEndpoint: 192.0.2.131:6443\n    token: abcdef.0123456789abcdef\n    unsafeSkipCAVerification: true\n" ..
      "controlPlane:\n  localAPIEndpoint:\n    advertiseAddress: 127.0.0.1\n    bindPort: %d\n"):format(l:port()))
    local code, _, err = h.moonadm { "join", "phase", "preflight", "--root", root, "--config", root .. "/j.yaml", "--node-runtime", "none" }
    assert.equal(1, code)
    for _, name in ipairs { "FileAvailable--etc-kubernetes-kubelet.conf", "FileAvailable--etc-kubernetes-pki-ca.crt",
      "DirAvailable--etc-kubernetes-manifests", "FileAvailable--etc-kubernetes-manifests-etcd.yaml", "Port-" .. l:port() } do
      assert.matches("[ERROR " .. name .. "]", err, 1, true)
    end
    l:close()
  end)

  describe("checks as functions", function()
    local ctx = { root = "/", flags = {}, cfg = {} }

    -- Issue 46, defect 1: --resume once failed Port-10250 on every real node whose kubelet had
    -- started. A port held by the node's own process (started by the journaled run: its file is the
    -- journal's) passes under --resume; one held by anything else stays an error naming the holder.
    it("Port-N under --resume: the node's own process passes, another program is named in the error", function()
      local dir = h.tmpdir()
      -- a listener whose command name is "kubelet" (a copy of the Lua interpreter under that name)
      os.execute("cp /usr/bin/lua5.4 " .. h.q(dir .. "/kubelet"))
      os.execute("mkfifo " .. h.q(dir .. "/stdin"))
      local pf = io.popen("exec python3 -c \"import socket,os,sys;s=socket.socket();s.bind(('127.0.0.1',0));s.listen();" ..
        "print(s.getsockname()[1]);sys.stdout.flush();os.set_inheritable(s.fileno(),True);" ..
        "os.execv('" .. dir .. "/kubelet',['kubelet','-e','io.read()'])\" <" .. h.q(dir .. "/stdin"), "r")
      local stdin = assert(io.open(dir .. "/stdin", "w")) -- the listener lives until this closes
      local port = pf:read("n")
      assert.is_number(port)
      assert.is_false(net.port_free("127.0.0.1", port))
      assert.equal("kubelet", (preflight.port_listener(port)))
      local owned = { owns = function(_, f) return f == "/etc/moonadm-spec-owner" end, data = { phases = {} } }
      local resume = { root = "/", flags = { resume = true }, cfg = {}, journal = owned }
      local fs = require "moonadm.fs"
      fs.set_root(dir)
      h.write(dir .. "/etc/moonadm-spec-owner", "x")
      local ok, err = pcall(function()
        assert.is_nil(preflight.port_open(port, "127.0.0.1", "/etc/moonadm-spec-owner", "kubelet").run(resume))
        -- without --resume, or for another program's port, or without the journal's file: an error
        local r = preflight.port_open(port, "127.0.0.1", "/etc/moonadm-spec-owner", "kubelet").run(ctx)
        assert.matches(("Port %d is in use by kubelet %%(pid %%d+%%)"):format(port), r[1].msg)
        r = preflight.port_open(port, "127.0.0.1", "/etc/moonadm-spec-owner", "etcd").run(resume)
        assert.matches(("Port %d is in use by kubelet"):format(port), r[1].msg)
        r = preflight.port_open(port, "127.0.0.1", "/etc/not-owned", "kubelet").run(resume)
        assert.equal("error", r[1].level)
      end)
      fs.set_root("/")
      stdin:close()
      pf:close()
      h.rmrf(dir)
      assert(ok, err)
    end)

    it("a program's name as the kernel keeps it (15 bytes) and as the lab tags it", function()
      assert.is_true(preflight.is_program("kube-controller", "kube-controller-manager"))
      assert.is_true(preflight.is_program("kube-apiserver:", "kube-apiserver"))
      assert.is_true(preflight.is_program("etcd:3.6.6-0", "etcd"))
      assert.is_false(preflight.is_program("etcdx", "etcd"))
      assert.is_false(preflight.is_program("kube", "kube-apiserver"))
      assert.is_false(preflight.is_program("nginx", "kubelet"))
    end)

    it("KubeletVersion: higher than the control plane and too old are errors, within skew passes", function()
      local function run(v) return preflight.kubelet_version("v1.35.4", function() return v end).run(ctx) end
      assert.is_nil(run("v1.35.0"))
      assert.is_nil(run("v1.32.9"))
      assert.matches("higher than the control plane version", run("v1.36.0")[1].msg, 1, true)
      assert.matches("lower than kubeadm can support", run("v1.31.2")[1].msg, 1, true)
    end)
    it("Hostname: an invalid node name is an error", function()
      local r = preflight.hostname("Bad_Name").run(ctx)
      assert.equal("error", r[1].level)
      assert.matches("invalid node name format", r[1].msg, 1, true)
    end)
    it("FileExisting: a missing mandatory binary is an error on a real node, a warning under --root", function()
      local c = preflight.in_path("moonadm-no-such-binary", true)
      assert.equal("FileExisting-moonadm-no-such-binary", c.name)
      assert.equal("error", c.run(ctx)[1].level)
      assert.equal("warning", c.run { root = "/tmp/x", flags = {} }[1].level)
      assert.is_nil(preflight.in_path("sh", true).run(ctx))
    end)
    it("the systemd runtime checks kubeadm's binaries and the kubelet version; none and lab do not", function()
      local names = {}
      for _, c in ipairs(preflight.node_checks({ flags = { ["node-runtime"] = "systemd" }, cfg = {} }, "n", "v1.35.4")) do
        names[c.name] = true
      end
      for _, n in ipairs { "FileExisting-crictl", "FileExisting-losetup", "FileExisting-mount", "FileExisting-cp", "KubeletVersion", "Port-10250", "Swap", "Hostname" } do
        assert.truthy(names[n], n)
      end
      names = {}
      for _, c in ipairs(preflight.node_checks({ flags = { ["node-runtime"] = "none" }, cfg = {} }, "n", "v1.35.4")) do
        names[c.name] = true
      end
      assert.is_nil(names["FileExisting-crictl"]); assert.is_nil(names.KubeletVersion)
    end)
  end)
end)
