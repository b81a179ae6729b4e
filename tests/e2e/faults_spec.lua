-- Fault tolerance of the cluster-side phases: a 429/500 storm and connection resets from a
-- fault-injecting proxy in front of the kube-apiserver (tests/e2e/fault_proxy.lua, behind
-- `kubectl proxy`), the kube-apiserver restarting during init's cluster phases (its process
-- killed; the kubelet stand-in starts it again). The phases retry within their timeouts and succeed, or fail with
-- a message that names the phase and the timeout and says how to resume.
-- Own lab dev14f (10.253.15): cp1, cp2 behind the lab balancer, the spare s1 for the failed join.
local h = require "helpers"
local crash = require "crash_common"
local core = require "moonadm.core"
local yaml = require "moonadm.yaml"

local function bg(cmd, pidfile)
  os.execute(cmd .. " & echo $! > " .. h.q(pidfile))
  return (h.read(pidfile) or ""):match("%d+")
end

local function wait_file(path, secs)
  local deadline = core.now() + secs
  while core.now() < deadline do
    if h.read(path) and h.read(path) ~= "" then return h.read(path) end
    core.sleep(0.05)
  end
end

describe("faults (own lab dev14f)", function()
  local st, dir, pids, control, logf, conf, cfg = nil, nil, {}, nil, nil, nil, nil

  local gen = 0
  local function set(mode, n)
    gen = gen + 1
    h.write(control, ("return { mode = %q, n = %d, id = %d }\n"):format(mode, n, gen))
  end
  local function phase(args, extra_env)
    local a = { "init", "phase" }
    for _, x in ipairs(args) do a[#a + 1] = x end
    for _, x in ipairs { "--config", cfg, "--root", dir .. "/root", "-v", "2" } do a[#a + 1] = x end
    local t0 = core.now()
    local code, out, err = h.moonadm(a, extra_env)
    return code, out .. err, core.now() - t0
  end

  setup(function()
    st = crash.up("dev14f", "10.253.15", { "--control-planes", "2", "--spares", "1" })
    dir = h.tmpdir()
    -- kubectl proxy: plain HTTP on the host, the admin's credentials to the apiserver over TLS
    local kp = dir .. "/kproxy.out"
    pids[#pids + 1] = bg(("%s --kubeconfig %s proxy --port=0 >%s 2>&1"):format(h.q(crash.bin_dir .. "/kubectl"),
      h.q(st.dir .. "/super-admin.conf"), h.q(kp)), dir .. "/kp.pid")
    local out = wait_file(kp, 20)
    local kport = assert(out and out:match("127%.0%.0%.1:(%d+)"), "kubectl proxy did not start: " .. tostring(out))
    control = dir .. "/control.lua"
    set("pass", 0)
    pids[#pids + 1] = bg(("%s lua %s %s %s %s >/dev/null 2>&1"):format(h.q(h.bin), h.q(h.top .. "/tests/e2e/fault_proxy.lua"),
      h.q(dir .. "/port"), kport, h.q(control)), dir .. "/fp.pid")
    local port = assert(wait_file(dir .. "/port", 10), "fault proxy did not start")
    logf = dir .. "/port.log"
    -- the phases' admin.conf (and super-admin.conf) under a temp root: the proxy, no credentials
    conf = dir .. "/root/etc/kubernetes/admin.conf"
    h.write(conf, yaml.encode {
      apiVersion = "v1", kind = "Config", ["current-context"] = "f",
      clusters = { { name = "f", cluster = { server = "http://127.0.0.1:" .. port,
        ["certificate-authority-data"] = require("moonadm.encoding").base64_encode(h.read(st.nodes[1].root .. "/etc/kubernetes/pki/ca.crt")) } } },
      contexts = { { name = "f", context = { cluster = "f", user = "f" } } },
      users = { { name = "f", user = { token = "unused-kubectl-proxy-authenticates" } } },
    })
    h.write(dir .. "/root/etc/kubernetes/super-admin.conf", h.read(conf))
    -- the lab's init config with a short API-call timeout
    local docs = assert(yaml.decode(assert(h.read(st.dir .. "/cp1-init.yaml"))))
    for _, d in ipairs(docs) do
      if d.kind == "InitConfiguration" then d.timeouts = { kubernetesAPICall = "20s" } end
    end
    cfg = dir .. "/init.yaml"
    h.write(cfg, yaml.encode_all(docs))
  end)

  teardown(function()
    for _, p in ipairs(pids) do if p then os.execute("kill " .. p .. " 2>/dev/null") end end
    if dir then h.rmrf(dir) end
    crash.down("dev14f")
  end)

  it("a storm of 429/500 answers: upload-config and bootstrap-token retry and succeed", function()
    set("storm", 6)
    local code, out, secs = phase { "upload-config", "kubeadm" }
    assert.equal(0, code, out)
    assert.is_true(secs < 20, "took " .. secs .. "s")
    set("storm", 6)
    code, out = phase { "bootstrap-token" }
    assert.equal(0, code, out)
    local log = h.read(logf)
    local _, injected = log:gsub("%-> 429", "")
    assert.is_true(injected >= 6, log)
  end)

  it("connection resets: the phase reconnects and succeeds", function()
    set("reset", 5)
    local code, out = phase { "upload-config", "kubelet" }
    assert.equal(0, code, out)
    assert.matches("reset connection", h.read(logf))
  end)

  it("a storm that never ends: the phase fails within its timeout, names the phase and the timeout, says how to resume", function()
    set("storm", -1)
    local code, out, secs = phase { "upload-config", "kubeadm" }
    set("pass", 0)
    assert.not_equal(0, code)
    assert.is_true(secs < 20 + 15, "took " .. secs .. "s")
    assert.matches("error execution phase upload%-config", out)
    assert.matches("after 20s", out)
    assert.matches("timeout 20s", out)
  end)

  it("init's flow fails in a never-ending storm at upload-config, within its timeout, and says how to resume", function()
    -- the whole init flow on the temp root, its node-side phases skipped: upload-config runs first
    set("storm", -1)
    local t0 = core.now()
    local code, out, err = h.moonadm { "init", "--config", cfg, "--root", dir .. "/root", "--skip-phases",
      "preflight,certs,kubeconfig,etcd,control-plane,kubelet-start,wait-control-plane" }
    local secs = core.now() - t0
    set("pass", 0)
    out = out .. err
    assert.not_equal(0, code, out)
    assert.is_true(secs < 20 + 15, "took " .. secs .. "s")
    assert.matches("error execution phase upload%-config/kubeadm: .*after 20s", out)
    assert.matches("run the same command again with %-%-resume", out)
    -- and it does: with the storm over, --resume completes the flow from there
    code, out, err = h.moonadm { "init", "--config", cfg, "--root", dir .. "/root", "--resume", "--skip-phases",
      "preflight,certs,kubeconfig,etcd,control-plane,kubelet-start,wait-control-plane,kubelet-finalize,addon,show-join-command" }
    assert.equal(0, code, out .. err)
  end)

  it("a control-plane join whose etcd member never joins fails and removes its learner: no orphan", function()
    -- s1's etcd cannot start (a patch adds an unknown flag): the learner is added, never catches
    -- up, and must be removed again; cp1's cluster keeps exactly its member(s), none a learner.
    local cp1 = st.nodes[1]
    local before = assert(crash.etcd_members(st, "cp1"))
    local pdir = dir .. "/patches"
    h.write(pdir .. "/etcd+json.yaml", "- op: add\n  path: /spec/containers/0/command/-\n  value: --no-such-etcd-flag\n")
    local jcfg = crash.join_config(st)
    local jdoc = assert(yaml.decode(h.read(jcfg)))[1]
    jdoc.patches = { directory = pdir }
    h.write(jcfg, yaml.encode(jdoc))
    local code, out = crash.exec(st, "s1", { h.bin, "join", "--config", jcfg })
    assert.not_equal(0, code, out)
    assert.matches("the learner https://[%d.]+:2380 was removed again", out)
    assert.matches("run the same join again", out)
    local after = assert(crash.etcd_members(st, "cp1"))
    assert.equal(#before, #after)
    for _, m in ipairs(after) do assert.is_not_true(m.isLearner, m.name) end
    crash.clean(st)
  end)

  it("the kube-apiserver restarts during the cluster phases (its process killed): they wait and succeed", function()
    -- Killed, the kubelet stand-in restarts it after its back-off, as a kubelet restarts a crashed
    -- static pod. (Moving the manifest away and back is the other way; see the closing note of
    -- issue 10: the stand-in did not start it again while its API calls were failing.)
    local cp1 = st.nodes[1]
    local logp = dir .. "/restart.log"
    bg(("%s lab exec cp1 --name %s -- moonadm init phase upload-config all --config %s >%s 2>&1; echo $? > %s"):format(
      h.q(h.bin), st.name, h.q(st.dir .. "/cp1-init.yaml"), h.q(logp), h.q(dir .. "/restart.rc")), dir .. "/r.pid")
    core.sleep(1)
    local p = io.popen("pgrep -f -- " .. h.q("kube-apiserver --advertise-address=" .. cp1.ip .. " "))
    local pid = p:read("l")
    p:close()
    assert.truthy(pid, "no kube-apiserver process of " .. cp1.ip)
    os.execute("kill -9 " .. pid)
    local rc = wait_file(dir .. "/restart.rc", 240)
    assert.equal("0", rc and rc:match("%d+"), h.read(logp))
  end)
end)
