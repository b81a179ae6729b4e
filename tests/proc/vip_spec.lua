-- The control-plane endpoint's virtual IP (scripts/endpoint/): the init's settings and their errors,
-- the files and static Pods a node gets (haproxy itself checks its configuration; keepalived's
-- is read for what the guide sets), and reset removing only moonadm's files. The Pods running,
-- the VIP moving and haproxy's backend following the apiservers: tests/e2e/vip_spec.lua.
local config = require "config"
local context = require "framework.context"
local fs = require "moonadm.fs"
local yaml = require "moonadm.yaml"
local proc = require "moonadm.proc"
local h = require "helpers"
local vip = require "endpoint.vip"
local render = require "endpoint.keepalived_haproxy"

local HEAD = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: 192.0.2.11\n" ..
  "nodeRegistration:\n  name: cp1\n  criSocket: unix:///var/run/containerd/containerd.sock\n---\n" ..
  "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"

local function mkctx(root, cluster_yaml, flags)
  local cfg = assert(config.load { text = HEAD .. (cluster_yaml or ""), filename = "k.yaml", kind = "init",
    no_host_defaults = true })
  return context.new { command = "init", cfg = cfg, gates = cfg.gates, flags = flags or {}, root = root }
end

local VIP = { ["control-plane-endpoint-vip"] = "keepalived-haproxy", ["control-plane-endpoint-vip-interface"] = "eth7" }

describe("the control-plane endpoint's virtual IP", function()
  local root
  before_each(function() root = h.tmpdir(); fs.set_root(root) end)
  after_each(function() fs.set_root("/"); h.rmrf(root) end)

  it("is off without --control-plane-endpoint-vip", function()
    assert.is_nil(vip.init_settings(mkctx(root, "controlPlaneEndpoint: 192.0.2.2:8443\n", {})))
  end)

  it("takes the VIP and haproxy's port from controlPlaneEndpoint, images and router id from flags", function()
    local s = vip.init_settings(mkctx(root, "controlPlaneEndpoint: 192.0.2.2:8443\n", {
      ["control-plane-endpoint-vip"] = "keepalived-haproxy", ["control-plane-endpoint-vip-router-id"] = "77",
      ["control-plane-endpoint-vip-haproxy-image"] = "example.test/haproxy:1" }))
    assert.same({ mode = "keepalived-haproxy", address = "192.0.2.2", port = 8443, router_id = 77,
      haproxy_image = "example.test/haproxy:1", keepalived_image = vip.DEFAULT_IMAGES.keepalived }, s)
  end)

  it("refuses what cannot work, saying what to give instead", function()
    local cases = {
      { "", "needs controlPlaneEndpoint" },
      { "controlPlaneEndpoint: cp.example.test:8443\n", "needs an IP address there" },
      { "controlPlaneEndpoint: 192.0.2.2\n", "has no port" },
      { "controlPlaneEndpoint: 192.0.2.2:6443\n", "its port must differ from the apiserver's bindPort 6443" },
      { "controlPlaneEndpoint: \"[2001:db8::2]:8443\"\n", "IPv4 only" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(vip.init_settings, mkctx(root, c[1], VIP))
      assert.is_false(ok, c[1])
      assert.matches(c[2], err, 1, true)
    end
    local ok, err = pcall(vip.init_settings, mkctx(root, "controlPlaneEndpoint: 192.0.2.2:8443\n",
      { ["control-plane-endpoint-vip"] = "kube-vip" }))
    assert.is_false(ok)
    assert.matches("not served by the module proxy", err, 1, true)
    ok, err = pcall(vip.init_settings, mkctx(root, "controlPlaneEndpoint: 192.0.2.2:8443\n",
      { ["control-plane-endpoint-vip"] = "keepalived-haproxy", ["control-plane-endpoint-vip-router-id"] = "300" }))
    assert.is_false(ok)
    assert.matches("1..255", err, 1, true)
    ok, err = pcall(vip.init_settings, mkctx(root, "controlPlaneEndpoint: 192.0.2.2:8443\n",
      { ["control-plane-endpoint-vip"] = "nginx" }))
    assert.is_false(ok)
    assert.matches("give keepalived-haproxy or kube-vip", err, 1, true)
  end)

  it("writes keepalived's and haproxy's files and static Pods as the HA guide has them", function()
    local ctx = mkctx(root, "controlPlaneEndpoint: 192.0.2.2:8443\n", VIP)
    vip.write_node(ctx, vip.init_settings(ctx), nil, true)
    local ka = assert(h.read(root .. render.KEEPALIVED_CONF))
    -- every node a BACKUP that does not preempt, and a check that starts failed: a (re)started node
    -- never takes the VIP before its haproxy answers, nor from a healthy holder
    for _, want in ipairs { "state BACKUP\n", "nopreempt\n", "priority 101", "interface eth7", "virtual_router_id 51",
      "192.0.2.2", 'script "/etc/keepalived/check_apiserver.sh"', "init_fail\n", "fall 3\n" } do
      assert.matches(want, ka, 1, true)
    end
    assert.is_nil(ka:find("weight", 1, true)) -- a failed check is FAULT (weights do nothing under nopreempt)
    assert.matches("curl -sfk --max-time 2 https://localhost:8443/healthz", h.read(root .. render.CHECK_SCRIPT), 1, true)
    local cfg = assert(h.read(root .. render.HAPROXY_CFG))
    assert.matches("bind *:8443", cfg, 1, true)
    assert.matches("http-check send meth GET uri /healthz", cfg, 1, true)
    assert.matches("server cp1 192.0.2.11:6443 check verify none\n", cfg, 1, true)
    assert.matches("server cp7 192.0.2.11:6443 check verify none disabled\n", cfg, 1, true)
    for path, mode in pairs { [render.CHECK_SCRIPT] = "755", [render.HAPROXY_CFG] = "644",
      ["/etc/kubernetes/manifests/haproxy.yaml"] = "600", ["/etc/kubernetes/manifests/keepalived.yaml"] = "600" } do
      local _, out = proc.run { argv = { "stat", "-c", "%a", root .. path } }
      assert.equal(mode, out:gsub("%s+$", ""), path)
    end
    local ka_pod = yaml.decode(h.read(root .. "/etc/kubernetes/manifests/keepalived.yaml"))[1]
    assert.same({ "NET_ADMIN", "NET_BROADCAST", "NET_RAW" }, ka_pod.spec.containers[1].securityContext.capabilities.add)
    assert.is_true(ka_pod.spec.hostNetwork)
    local hp_pod = yaml.decode(h.read(root .. "/etc/kubernetes/manifests/haproxy.yaml"))[1]
    assert.same({ host = "localhost", path = "/healthz", port = 8443, scheme = "HTTPS" },
      hp_pod.spec.containers[1].livenessProbe.httpGet)
    -- the official image's USER is haproxy; the reader token is root's 0600
    assert.same({ runAsUser = 0, runAsGroup = 0 }, hp_pod.spec.containers[1].securityContext)
    assert.matches("bind 127.0.0.1:8404\n", cfg, 1, true)
    assert.matches("stats show-legends\n", cfg, 1, true) -- else the CSV leaves the addresses out
    -- the backend task reads from this node's apiserver, else through the VIP
    assert.matches('local DSTS = { "192.0.2.11:6443", "192.0.2.2:8443" }', h.read(root .. render.BACKENDS_LUA), 1, true)
    -- keepalived (2.2.7, the image's) accepts its configuration: on this machine's multicast link,
    -- the check script's path swapped for one its script security allows outside /etc
    if proc.run { argv = { "sh", "-c", "command -v keepalived" } } == 0 then
      local _, links = proc.run { argv = { "ip", "-o", "link", "show", "up" } }
      local link = links:match("%d+: ([%w%-_]+)[@:][^\n]*MULTICAST[^\n]*") or "eth0"
      local test_conf = ka:gsub("interface eth7", "interface " .. link):gsub(render.CHECK_SCRIPT, "/bin/true")
      h.write(root .. "/ka.conf", test_conf)
      local code, out = proc.run { argv = { "keepalived", "--config-test=" .. root .. "/ka.log", "-f", root .. "/ka.conf" } }
      assert.equal(0, code, tostring(out) .. (h.read(root .. "/ka.log") or ""))
    end
    -- haproxy reads the configuration (and loads the backend task's Lua) as it would in its Pod
    if proc.run { argv = { "sh", "-c", "command -v haproxy" } } == 0 then
      fs.set_root("/")
      h.write(root .. render.CA_FILE, (h.read("/etc/ssl/certs/ca-certificates.crt")))
      local local_cfg = cfg:gsub("(%s)(/etc/[%w/%.%-]+)", function(sp, p) return sp .. root .. p end)
      h.write(root .. "/check.cfg", local_cfg)
      local code, out = proc.run { argv = { "haproxy", "-c", "-f", root .. "/check.cfg" } }
      assert.equal(0, code, out)
      assert.matches("Configuration file is valid", out, 1, true)
    end
  end)

  it("a joining control plane is a BACKUP at priority 100 and lists the apiservers known now", function()
    local out = render.render({ address = "192.0.2.2", port = 8443, router_id = 9, haproxy_image = "h", keepalived_image = "k" },
      { name = "cp2", ip = "192.0.2.12", port = 6443, interface = "eth0" },
      { { ip = "192.0.2.12", port = 6443 }, { ip = "192.0.2.11", port = 6443 } })
    local by = {}
    for _, f in ipairs(out.files) do by[f[1]] = f[2] end
    assert.matches("state BACKUP\n    nopreempt\n", by[render.KEEPALIVED_CONF], 1, true)
    assert.matches("priority 100", by[render.KEEPALIVED_CONF], 1, true)
    assert.matches("server cp1 192.0.2.12:6443 check verify none\n    server cp2 192.0.2.11:6443 check verify none\n",
      by[render.HAPROXY_CFG], 1, true)
    assert.matches('local slots = { [1] = "192.0.2.12 6443", [2] = "192.0.2.11 6443" }', by[render.BACKENDS_LUA], 1, true)
    assert.matches('local DSTS = { "192.0.2.12:6443", "192.0.2.2:8443" }', by[render.BACKENDS_LUA], 1, true)
    assert.matches("https://kubernetes:6443/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes",
      by[render.BACKENDS_LUA], 1, true)
  end)

  it("refuses to overwrite a keepalived or haproxy configuration it did not write, in preflight already", function()
    local ctx = mkctx(root, "controlPlaneEndpoint: 192.0.2.2:8443\n", VIP)
    h.write(root .. render.HAPROXY_CFG, "# the operator's own haproxy\n")
    for _, f in ipairs { vip.preflight, function(c) vip.write_node(c, vip.init_settings(c), nil, true) end } do
      local ok, err = pcall(f, ctx)
      assert.is_false(ok)
      assert.matches(render.HAPROXY_CFG .. " exists and was not written by moonadm", err, 1, true)
      assert.matches("move it away", err, 1, true)
    end
    assert.equal("# the operator's own haproxy\n", h.read(root .. render.HAPROXY_CFG))
    assert.is_nil(h.read(root .. render.KEEPALIVED_CONF))
    assert.is_nil(h.read(root .. "/etc/kubernetes/manifests/haproxy.yaml"))
    -- its own files (a crashed run's) are rewritten: the phase converges
    h.rmrf(root .. render.HAPROXY_CFG)
    vip.write_node(ctx, vip.init_settings(ctx), nil, true)
    vip.write_node(ctx, vip.init_settings(ctx), nil, true)
    assert.matches(render.MARK, h.read(root .. render.HAPROXY_CFG), 1, true)
  end)

  it("init stops in preflight on a bad setting, before any file is written", function()
    local cfgfile = root .. "/init.yaml"
    h.write(cfgfile, HEAD .. "controlPlaneEndpoint: 192.0.2.2:6443\n")
    local code, out, err = h.moonadm { "init", "--root", root, "--config", cfgfile, "--control-plane-endpoint-vip",
      "keepalived-haproxy", "--control-plane-endpoint-vip-interface", "eth7" }
    assert.is_not.equal(0, code)
    assert.matches("its port must differ from the apiserver's bindPort 6443", out .. err, 1, true)
    assert.is_nil(h.read(root .. "/etc/kubernetes/pki/ca.crt"))
    assert.is_nil(h.read(root .. render.HAPROXY_CFG))
  end)

  it("reset removes moonadm's files and the token, and leaves a file it did not write", function()
    local ctx = mkctx(root, "controlPlaneEndpoint: 192.0.2.2:8443\n", VIP)
    vip.write_node(ctx, vip.init_settings(ctx), nil, true)
    h.write(root .. render.TOKEN_FILE, "secret")
    h.write(root .. render.KEEPALIVED_CONF, "! the operator's own keepalived\n")
    assert.is_true(vip.present(ctx))
    vip.remove_files(ctx)
    assert.is_nil(h.read(root .. render.HAPROXY_CFG))
    assert.is_nil(h.read(root .. render.TOKEN_FILE))
    assert.is_nil(h.read(root .. render.BACKENDS_LUA))
    assert.is_nil(h.read(root .. render.CHECK_SCRIPT))
    assert.equal("! the operator's own keepalived\n", h.read(root .. render.KEEPALIVED_CONF))
    assert.is_false(vip.present(ctx))
  end)

  -- `ip` itself is the lab's to run (tests/e2e/vip_spec.lua); here proc.run answers as `ip` would, and
  -- what reset says and runs is checked for each state the interface can be in
  it("reset takes the VIP off the interface it holds it on, and says so when it is not there", function()
    local ctx = mkctx(root, "controlPlaneEndpoint: 192.0.2.2:8443\n", VIP)
    vip.write_node(ctx, vip.init_settings(ctx), nil, true)
    local log = require "framework.log"
    local real_run, out, err = proc.run, log.out, log.err
    local function sink(t) return { write = function(_, ...) for _, x in ipairs { ... } do t[#t + 1] = x end end, flush = function() end } end
    local function reset_with(show_code, show_out, del_code)
      local ran, printed = {}, {}
      proc.run = function(o)
        ran[#ran + 1] = table.concat(o.argv, " ")
        if o.argv[2] == "-o" then return show_code, show_out end
        return del_code, del_code == 0 and "" or "RTNETLINK answers: Operation not permitted"
      end
      log.out, log.err = sink(printed), sink(printed)
      local ok, e = pcall(vip.release_address, ctx)
      proc.run, log.out, log.err = real_run, out, err
      assert(ok, e)
      return ran, table.concat(printed)
    end
    local held = "7: eth7    inet 192.0.2.11/24 brd 192.0.2.255 scope global eth7\n" ..
      "7: eth7    inet 192.0.2.2/32 scope global eth7\n"
    local ran, said = reset_with(0, held, 0)
    assert.same({ "ip -o addr show dev eth7", "ip addr del 192.0.2.2/32 dev eth7" }, ran)
    assert.matches("Removed the virtual IP 192.0.2.2 from eth7", said, 1, true)
    ran, said = reset_with(0, held, 2)
    assert.equal(2, #ran)
    assert.matches("Failed to remove the virtual IP 192.0.2.2 from eth7: RTNETLINK", said, 1, true)
    -- 192.0.2.21 is another address, not the VIP
    ran, said = reset_with(0, "7: eth7    inet 192.0.2.21/24 scope global eth7\n", 0)
    assert.same({ "ip -o addr show dev eth7" }, ran)
    assert.matches("The virtual IP 192.0.2.2 is not on eth7: nothing to remove", said, 1, true)
    ran, said = reset_with(1, "Device \"eth7\" does not exist.", 0)
    assert.same({ "ip -o addr show dev eth7" }, ran)
    assert.matches("Could not read the addresses of eth7 to remove the virtual IP 192.0.2.2", said, 1, true)
  end)
end)
