-- The control-plane endpoint as a virtual IP on the control planes themselves (issue 22; kubeadm's HA
-- guide, keepalived + haproxy as static Pods), on the real-kubelet lab with its own balancer off
-- (`lab up --control-plane-endpoint vip`): 3 control planes + 1 worker come up with the VIP as
-- controlPlaneEndpoint and the worker joined through it; every haproxy's backend follows the
-- apiservers; killing the VIP's holder (its kubelet, containerd and pods, and its link, as a host
-- that dies) moves the VIP and /readyz answers through it again (a poller counts the failed
-- seconds); a spare joins through it; a control plane's reset leaves the others' backends without it.
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"

local NAME, SUBNET = "e2evip", "10.252.20"
local VIP = SUBNET .. ".2"
local ENDPOINT = VIP .. ":8443"

describe("the control-plane endpoint as a virtual IP (own lab " .. NAME .. ", 3 control planes + 1 worker + 1 spare)", function()
  local code, out, err, st, t_up
  local holder_before

  local function kjson(args) return fixture.kjson(st, args) end
  local function node(name) return fixture.node(st, name) end
  -- the node whose eth0 holds the VIP now, its link up (nil: none)
  local function holder()
    for _, n in ipairs(st.nodes) do
      if n.role == "control-plane" then
        local p = io.popen(("ip -n %s-%s -4 addr show dev eth0 up 2>/dev/null"):format(NAME, n.name))
        local text = p:read("a")
        p:close()
        if text:find("inet " .. VIP .. "/", 1, true) then return n.name end
      end
    end
  end
  -- the servers haproxy's backend has in service now (not MAINT), asked of haproxy itself: its
  -- loopback stats page in the node's network namespace, as CSV. set of "ip port"
  local function backends(on)
    local p = io.popen(("ip netns exec %s-%s curl -sf --max-time 3 'http://127.0.0.1:8404/stats;csv' 2>&1"):format(NAME, on))
    local csv = p:read("a")
    p:close()
    local set, col = {}, nil
    for line in csv:gmatch("[^\n]+") do
      local f = {}
      for v in (line:gsub("^# ", "") .. ","):gmatch("([^,]*),") do f[#f + 1] = v end
      if not col then
        col = {}
        for i, name in ipairs(f) do col[name] = i end
        assert(col.pxname and col.svname and col.status and col.addr, "haproxy-" .. on .. "'s stats: " .. csv)
      elseif f[col.pxname] == "apiserverbackend" and f[col.svname]:match("^cp%d+$") and f[col.status] ~= "MAINT" then
        local ip, port = f[col.addr]:match("^(.+):(%d+)$")
        assert(ip, "haproxy-" .. on .. "'s stats name no address for " .. f[col.svname] .. ": " .. csv)
        set[ip .. " " .. port] = true
      end
    end
    return set
  end
  local function keys(set)
    local l = {}
    for k in pairs(set) do l[#l + 1] = k end
    table.sort(l)
    return table.concat(l, ", ")
  end

  setup(function()
    local t0 = os.time()
    code, out, err = h.moonadm { "lab", "up", "--name", NAME, "--subnet", SUBNET, "--kubelet", "real",
      "--control-planes", "3", "--workers", "1", "--spares", "1", "--control-plane-endpoint", "vip",
      "--ready-timeout", "300" }
    t_up = os.time() - t0
    if code == 0 then st = assert(fixture.state(NAME), "no lab.json") end
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", NAME } end)

  it("comes up with the VIP as controlPlaneEndpoint, the worker joined through it, no lab balancer", function()
    assert.equal(0, code, out .. err)
    io.stderr:write(("\n[figure] lab up --control-plane-endpoint vip (3 control planes + 1 worker, real kubelet): %ds\n")
      :format(t_up))
    assert.is_nil(st.lb)
    local cm = kjson { "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "json" }
    assert.matches("controlPlaneEndpoint: " .. ENDPOINT:gsub("%.", "%%."), cm.data.ClusterConfiguration)
    assert.matches("server: https://" .. ENDPOINT:gsub("%.", "%%."), h.read(node("w1").root .. "/etc/kubernetes/kubelet.conf"))
    assert.is_true(fixture.nodes_ready(st, nil, 4))
    local pods = kjson { "-n", "kube-system", "get", "pods", "-o", "json" }
    local running = {}
    for _, p in ipairs(pods.items) do
      if p.status.phase == "Running" then running[p.metadata.name] = true end
    end
    for _, cp in ipairs { "cp1", "cp2", "cp3" } do
      assert.is_true(running["keepalived-" .. cp], "keepalived-" .. cp .. " is not Running")
      assert.is_true(running["haproxy-" .. cp], "haproxy-" .. cp .. " is not Running")
    end
    -- one control plane holds it: the init node's keepalived, alone when it became MASTER, unless its
    -- check failed three times in a row while the others joined (a CPU-starved run) and it moved on
    holder_before = holder()
    assert.is_not_nil(holder_before, "no control plane holds the VIP " .. VIP)
    if holder_before ~= "cp1" then
      io.stderr:write(("\n[figure] the VIP moved from cp1 to %s while the others joined\n"):format(holder_before))
    end
  end)

  it("every haproxy's backend holds the three apiservers (its reader follows the EndpointSlice)", function()
    assert.equal(0, code, out .. err)
    local want = ("%s.11 6443, %s.12 6443, %s.13 6443"):format(SUBNET, SUBNET, SUBNET)
    for _, cp in ipairs { "cp1", "cp2", "cp3" } do
      fixture.wait_for("haproxy-" .. cp .. "'s backend to hold every apiserver", 60, function()
        local got = keys(backends(cp))
        return got == want, got
      end)
    end
  end)

  it("killing the VIP's holder moves the VIP; /readyz through it answers again", function()
    assert.equal(0, code, out .. err)
    local dir = h.tmpdir()
    local ca = node("cp2").root .. "/etc/kubernetes/pki/ca.crt"
    -- one line per poll: epoch seconds and ok|fail (anonymous /readyz, the cluster CA checks the VIP's certificate)
    os.execute(([[(while [ ! -e %s/stop ]; do t=$(date +%%s.%%N); if curl -sf --max-time 1 --cacert %s https://%s/readyz -o /dev/null; then echo "$t ok"; else echo "$t fail"; fi; sleep 0.25; done) > %s/polls 2>&1 &]])
      :format(h.q(dir), h.q(ca), ENDPOINT, h.q(dir)))
    os.execute("sleep 3")
    local victim = node(holder_before)
    local t_kill = tonumber(io.popen("date +%s.%N"):read("a"))
    assert.equal(0, (os.execute(("kill -KILL %d"):format(math.tointeger(victim.init_pid))) and 0 or 1))
    assert.is_true(os.execute(("ip -n %s-%s link set eth0 down"):format(NAME, victim.name)) == true)
    local new
    fixture.wait_for("another control plane to hold the VIP", 60, function()
      new = holder()
      return new ~= nil and new ~= victim.name, new
    end)
    -- answering again: 8 polls in a row (2 s) succeed
    fixture.wait_for("/readyz through the VIP to answer again", 90, function()
      local polls = h.read(dir .. "/polls") or ""
      local tail = {}
      for t, r in polls:gmatch("(%S+) (%a+)\n") do if tonumber(t) > t_kill then tail[#tail + 1] = r end end
      local n = 0
      for i = #tail, 1, -1 do if tail[i] == "ok" then n = n + 1 else break end end
      return n >= 8, ("%d polls since the kill"):format(#tail)
    end)
    os.execute("touch " .. h.q(dir .. "/stop") .. "; sleep 1.5")
    -- failed seconds: from each failed poll's start to the next poll's
    local polls = {}
    for t, r in (h.read(dir .. "/polls") or ""):gmatch("(%S+) (%a+)\n") do
      if tonumber(t) > t_kill then polls[#polls + 1] = { t = tonumber(t), ok = r == "ok" } end
    end
    h.rmrf(dir)
    local fails, failed_s, recovered = 0, 0, nil
    for i, p in ipairs(polls) do
      if not p.ok then
        fails, recovered = fails + 1, nil
        failed_s = failed_s + ((polls[i + 1] and polls[i + 1].t or p.t) - p.t)
      else
        recovered = recovered or p.t
      end
    end
    -- until the first poll of the final run of successes began
    local outage = fails > 0 and recovered and (recovered - t_kill) or 0
    io.stderr:write(("\n[figure] VIP failover (%s killed, %s holds it): /readyz through %s answered again %.1fs after the kill; " ..
      "%d of %d polls failed, %.1f failed seconds\n"):format(victim.name, new, ENDPOINT, outage, fails, #polls, failed_s))
    assert.is_true(outage < 45, ("the VIP took %.1fs to answer again"):format(outage))
    local rc, ka = fixture.kubectl(st, { "-n", "kube-system", "logs", "keepalived-" .. new })
    assert.equal(0, rc, ka)
    assert.matches("Entering MASTER STATE", ka, 1, true)
  end)

  it("the dead control plane leaves the others' haproxy backends (its apiserver lease expired)", function()
    assert.equal(0, code, out .. err)
    local dead = node(holder_before).ip .. " 6443"
    for _, cp in ipairs { "cp1", "cp2", "cp3" } do
      if cp ~= holder_before then
        fixture.wait_for("haproxy-" .. cp .. " to drop " .. dead, 90, function()
          local got = backends(cp)
          return not got[dead], keys(got)
        end)
      end
    end
  end)

  it("a spare joins through the VIP", function()
    assert.equal(0, code, out .. err)
    local jcode, jtext = fixture.run_on(st, "s1", { "moonadm", "join", "--config", st.dir .. "/s1-join.yaml" })
    assert.equal(0, jcode, jtext)
    assert.matches("This node has joined the cluster", jtext, 1, true)
    assert.matches("server: https://" .. ENDPOINT:gsub("%.", "%%."), h.read(node("s1").root .. "/etc/kubernetes/kubelet.conf"))
    local ncode, nout, nerr = h.moonadm { "lab", "network", "--name", NAME } -- its pod network, as `lab up` wires the others'
    assert.equal(0, ncode, nout .. nerr)
    fixture.wait_for("Node s1 Ready", 120, function()
      local rc, o = fixture.kubectl(st, { "get", "node", "s1", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}" })
      return rc == 0 and o == "True", o
    end)
  end)

  it("a control plane's reset removes its files and the others' haproxy drop it", function()
    assert.equal(0, code, out .. err)
    -- the reset node is the VIP's holder now: its reset must hand the VIP on
    local gone, stays = holder(), nil
    for _, cp in ipairs { "cp1", "cp2", "cp3" } do if cp ~= holder_before and cp ~= gone then stays = cp end end
    assert.is_not_nil(gone)
    -- the dead node's etcd member goes first, as an operator removes a lost host's (kubeadm's docs):
    -- the reset then leaves one voter of one, never a cluster without quorum
    local etcdctl = { "etcdctl", "--endpoints", "https://127.0.0.1:2379", "--cacert", "/etc/kubernetes/pki/etcd/ca.crt",
      "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt", "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key" }
    local function etcd(args)
      local argv = {}
      for _, a in ipairs(etcdctl) do argv[#argv + 1] = a end
      for _, a in ipairs(args) do argv[#argv + 1] = a end
      local rc, o, e = fixture.exec(st, stays, argv)
      return rc == 0 and o, o .. e
    end
    local list = assert(etcd { "member", "list", "-w", "json", "--hex" })
    for _, m in ipairs(cjson.decode(list).members) do
      if m.name == holder_before then
        fixture.wait_for("etcd to remove the lost member " .. holder_before, 60, function()
          local removed, why = etcd { "member", "remove", m.ID }
          if removed then return true end
          -- an attempt whose answer was an error may still have removed it (the next one then says
          -- "member not found"): a member gone from the list is removed
          local now = etcd { "member", "list", "-w", "json", "--hex" }
          if not now then return false, why end
          for _, other in ipairs(cjson.decode(now).members) do
            if other.ID == m.ID then return false, why end
          end
          return true
        end, 2)
      end
    end
    local rcode, rtext = fixture.run_on(st, gone, { "moonadm", "reset", "-f" })
    assert.equal(0, rcode, rtext)
    assert.matches("Removed the control-plane endpoint's files", rtext, 1, true)
    -- the VIP goes with the reset: taken off by the reset if keepalived still held it when its pod
    -- was killed, or already given up by keepalived (its check fails once this node's etcd member is
    -- removed, and a slow reset lets it reach FAULT first); either way the reset says which
    assert.is_truthy(rtext:find("Removed the virtual IP " .. VIP, 1, true)
      or rtext:find("The virtual IP " .. VIP .. " is not on eth0: nothing to remove", 1, true), rtext)
    for _, f in ipairs { "/etc/haproxy/haproxy.cfg", "/etc/haproxy/apiserver-reader.token", "/etc/keepalived/keepalived.conf",
      "/etc/kubernetes/manifests/haproxy.yaml", "/etc/kubernetes/manifests/keepalived.yaml" } do
      assert.is_nil(h.read(node(gone).root .. f), f)
    end
    local addr = node(gone).ip .. " 6443"
    fixture.wait_for("haproxy-" .. stays .. " to drop " .. addr, 90, function()
      local got = backends(stays)
      return not got[addr], keys(got)
    end)
    assert.is_nil(io.popen(("ip -n %s-%s -4 addr show dev eth0"):format(NAME, gone)):read("a"):find(VIP .. "/", 1, true),
      gone .. " still holds the VIP after its reset")
    fixture.wait_for(stays .. " to hold the VIP", 30, function()
      local now = holder()
      if now == stays then return true end
      local _, ka = fixture.kubectl(st, { "-n", "kube-system", "logs", "keepalived-" .. stays, "--tail", "5" })
      return false, tostring(now) .. " holds it; keepalived-" .. stays .. ": " .. ka
    end)
    local rc, o = fixture.kubectl(st, { "get", "--raw", "/readyz" })
    assert.equal(0, rc, o)
  end)
end)
