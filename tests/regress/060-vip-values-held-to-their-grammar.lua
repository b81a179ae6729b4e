-- Issue 46 #4: --control-plane-endpoint-vip-interface went into keepalived.conf unchecked: a newline
-- injected any directive (a vrrp_script, which keepalived runs as root), and a control-plane join
-- took the ConfigMap kube-system/moonadm-control-plane-endpoint as it was. Now every value that
-- reaches keepalived's or haproxy's files is held to its grammar where the settings are made
-- (endpoint/vip.lua: flags, config, ConfigMap, `ip`, the EndpointSlice), and the renderer refuses
-- again (endpoint/keepalived_haproxy.lua); the error names the flag or the ConfigMap's key, and
-- nothing is written.
local h = require "helpers"
local fs = require "moonadm.fs"
local proc = require "moonadm.proc"
local config = require "config"
local context = require "framework.context"
local vip = require "endpoint.vip"
local render = require "endpoint.keepalived_haproxy"
local join_phase = require "phases.join.control-plane-endpoint"

local INJECT = 'lo\nvrrp_script x {\n  script "/bin/sh -c id>/tmp/pwned"\n}\nvrrp_instance y {'
local INIT = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: 192.0.2.11\n" ..
  "nodeRegistration:\n  name: cp1\n  criSocket: unix:///var/run/containerd/containerd.sock\n---\n" ..
  "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: 192.0.2.2:8443\n"
local JOIN = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n" ..
  "    token: abcdef.0123456789abcdef\n    apiServerEndpoint: 192.0.2.2:8443\n    unsafeSkipCAVerification: true\n" ..
  "nodeRegistration:\n  name: cp2\n  criSocket: unix:///var/run/containerd/containerd.sock\n" ..
  "controlPlane:\n  localAPIEndpoint:\n    advertiseAddress: 192.0.2.12\n"
local GOOD_CM = { mode = "keepalived-haproxy", address = "192.0.2.2", port = "8443", routerID = "51",
  haproxyImage = "docker.io/library/haproxy:2.6", keepalivedImage = "docker.io/osixia/keepalived:2.0.20" }

-- nothing of the VIP's (nor anything else) under root
local function nothing_written(root)
  local _, out = proc.run { argv = { "find", root, "-type", "f" } }
  assert.equal("", out or "", "files were written")
end

-- a kube.client stand-in: get answers objects by kind (404 for the others)
local function fake(objects)
  return { get = function(_, ref)
    if objects[ref.kind] then return objects[ref.kind] end
    return nil, setmetatable({ code = 404 }, { __tostring = function() return "not found" end })
  end }
end

local function with(t, k, v)
  local c = {}
  for a, b in pairs(t) do c[a] = b end
  c[k] = v
  return c
end

describe("regress 060: values that reach keepalived's and haproxy's files are held to their grammar", function()
  local root
  before_each(function() root = h.tmpdir(); fs.set_root(root) end)
  after_each(function() fs.set_root("/"); h.rmrf(root) end)

  local function ctx_of(kind, text, flags)
    local cfg = assert(config.load { text = text, filename = "k.yaml", kind = kind, no_host_defaults = true })
    return context.new { command = kind, cfg = cfg, gates = cfg.gates, flags = flags or {}, root = root }
  end

  it("from the flag: init phase control-plane-endpoint and init refuse it, naming the flag, and write nothing", function()
    local cfgfile = h.tmpdir() .. "/init.yaml"
    h.write(cfgfile, INIT)
    for _, argv in ipairs {
      { "init", "phase", "control-plane-endpoint" }, -- the issue's reproduction
      { "init", "--skip-phases", "addon" },           -- a whole init stops in preflight
    } do
      for _, a in ipairs { "--root", root, "--config", cfgfile, "--control-plane-endpoint-vip", "keepalived-haproxy",
        "--control-plane-endpoint-vip-interface", INJECT } do argv[#argv + 1] = a end
      local code, out, err = h.moonadm(argv)
      assert.is_not.equal(0, code)
      assert.matches("--control-plane-endpoint-vip-interface: \"lo\\nvrrp_script x {\\n", out .. err, 1, true)
      assert.matches("is not a network interface name", out .. err, 1, true)
      nothing_written(root)
    end
    h.rmrf(cfgfile:match("^(.*)/"))
  end)

  it("from the other flags: each names its flag", function()
    for flag, bad in pairs { ["control-plane-endpoint-vip-router-id"] = "51\nvrrp_script x {",
      ["control-plane-endpoint-vip-haproxy-image"] = "haproxy:2.6\n    lua-load /tmp/evil.lua",
      ["control-plane-endpoint-vip-keepalived-image"] = "keepalived latest" } do
      local ok, err = pcall(vip.init_settings, ctx_of("init", INIT, { ["control-plane-endpoint-vip"] = "keepalived-haproxy",
        [flag] = bad }))
      assert.is_false(ok, flag)
      assert.matches("--" .. flag .. ": ", err, 1, true)
      assert.is_nil(err:find("\n", 1, true), "one line: " .. err)
    end
  end)

  it("from a control-plane join's flag: its preflight refuses it before anything is written", function()
    local ctx = ctx_of("join", JOIN, { ["control-plane-endpoint-vip-interface"] = INJECT })
    local ok, err = pcall(vip.given_interface, ctx)
    assert.is_false(ok)
    assert.matches("--control-plane-endpoint-vip-interface: ", err, 1, true)
    -- and the phase itself, with the cluster's settings well-formed
    vip.admin_client = function() return fake { ConfigMap = { data = GOOD_CM } } end
    ok, err = pcall(join_phase.run, ctx)
    vip.admin_client = require("cluster.admin").client
    assert.is_false(ok)
    assert.matches("is not a network interface name", err, 1, true)
    nothing_written(root)
  end)

  it("from the config: controlPlaneEndpoint and the node name cannot carry one, and `ip`'s answer is checked", function()
    for _, text in ipairs {
      INIT:gsub("controlPlaneEndpoint: 192.0.2.2:8443", 'controlPlaneEndpoint: "192.0.2.2:8443\\nvrrp_script x {"'),
      INIT:gsub("name: cp1", 'name: "cp1\\nvrrp_script x {"'),
    } do
      local cfg, err = config.load { text = text, filename = "k.yaml", kind = "init", no_host_defaults = true }
      assert.is_nil(cfg)
      assert.matches("k.yaml", err, 1, true)
    end
    -- the interface found by `ip -j addr show` (no flag) goes through the same check
    local ctx = ctx_of("init", INIT, { ["control-plane-endpoint-vip"] = "keepalived-haproxy" })
    local real = proc.run
    proc.run = function() return 0, ('[{"ifname":%q,"addr_info":[{"local":"192.0.2.11"}]}]'):format(INJECT):gsub("\\\n", "\\n") end
    local ok, err = pcall(vip.write_node, ctx, vip.init_settings(ctx), nil, true)
    proc.run = real
    assert.is_false(ok)
    assert.matches("the interface `ip -j addr show` names for 192.0.2.11: ", err, 1, true)
    nothing_written(root)
  end)

  it("from the ConfigMap (a control-plane join): every key is checked, named, and nothing is written", function()
    local ctx = ctx_of("join", JOIN, { ["control-plane-endpoint-vip-interface"] = "eth0" })
    local cases = {
      { with(GOOD_CM, "address", "192.0.2.2\n    }\n}\nvrrp_script x {"), "key address: " },
      { with(GOOD_CM, "address", "vip.example.test"), "key address: " },
      { with(GOOD_CM, "port", "8443\n    lua-load /tmp/x.lua"), "key port: " },
      { with(GOOD_CM, "routerID", "0"), "key routerID: " },
      { with(GOOD_CM, "haproxyImage", "haproxy:2.6\nglobal"), "key haproxyImage: " },
      { with(GOOD_CM, "keepalivedImage", nil), "key keepalivedImage: is missing" },
      { with(GOOD_CM, "mode", "kube-vip"), "key mode: " },
      { with(GOOD_CM, "port", 8443), "data.port is a number, not a string" },
      { "x", "data is a string, not an object" },
    }
    for _, case in ipairs(cases) do
      vip.admin_client = function() return fake { ConfigMap = { data = case[1] } } end
      local ok, err = pcall(join_phase.run, ctx)
      vip.admin_client = require("cluster.admin").client
      assert.is_false(ok, case[2])
      assert.matches("ConfigMap kube-system/moonadm-control-plane-endpoint", err, 1, true)
      assert.matches(case[2], err, 1, true)
      assert.matches("kubectl -n kube-system edit configmap moonadm-control-plane-endpoint", err, 1, true)
      assert.is_nil(err:find("attempt to", 1, true), err)
    end
    nothing_written(root)
  end)

  it("from the EndpointSlice: only addresses become haproxy's servers", function()
    local ctx = ctx_of("join", JOIN, { ["control-plane-endpoint-vip-interface"] = "eth0" })
    for _, slice in ipairs {
      { ports = { { port = 6443 } }, endpoints = { { addresses = { "192.0.2.11:6443 check\n    server evil 10.0.0.1" } } } },
      { ports = { { port = "6443\n" } }, endpoints = {} },
      { ports = { { port = 6443 } }, endpoints = { { addresses = "192.0.2.11" } } },
      { ports = { { port = 6443 } }, endpoints = "x" },
    } do
      vip.admin_client = function() return fake { ConfigMap = { data = GOOD_CM }, EndpointSlice = slice } end
      local ok, err = pcall(join_phase.run, ctx)
      vip.admin_client = require("cluster.admin").client
      assert.is_false(ok)
      assert.matches("EndpointSlice default/kubernetes: ", err, 1, true)
      assert.is_nil(err:find("attempt to", 1, true), err)
    end
    nothing_written(root)
  end)

  it("the renderer refuses an unchecked value itself", function()
    local s = { address = "192.0.2.2", port = 8443, router_id = 51, haproxy_image = "h", keepalived_image = "k" }
    local n = { name = "cp1", ip = "192.0.2.11", port = 6443, interface = "eth0" }
    assert.is_table(render.render(s, n, { { ip = "192.0.2.11", port = 6443 } }))
    for _, bad in ipairs {
      { "setting address", with(s, "address", "192.0.2.2\n}"), n, {} },
      { "setting router_id", with(s, "router_id", 256), n, {} },
      { "this node's name", s, with(n, "name", "cp1\nvrrp_script x {"), {} },
      { "this node's interface", s, with(n, "interface", INJECT), {} },
      { "kube-apiserver 1's address", s, n, { { ip = "192.0.2.12 backup", port = 6443 } } },
    } do
      local ok, err = pcall(render.render, bad[2], bad[3], bad[4])
      assert.is_false(ok, bad[1])
      assert.matches("refusing to write keepalived's and haproxy's files: " .. bad[1], err, 1, true)
    end
  end)

  it("the grammars accept what kubeadm's HA guide and real clusters use", function()
    for kind, values in pairs {
      interface = { "eth0", "ens192", "enp0s31f6", "bond0.100", "br-1a2b3c4d5e6f", "wlp2s0", "vlan_7" },
      image = { "haproxy:2.6", "docker.io/library/haproxy:2.6", "registry.local:5000/team/haproxy:2.6-alpine",
        "quay.io/x/keepalived@sha256:" .. ("a"):rep(64), "localhost:5000/k:v1" },
      address = { "192.0.2.2", "10.0.0.1" }, port = { "8443", 8443, 1, 65535 }, router_id = { "1", "255", 51 },
    } do
      for _, v in ipairs(values) do assert.is_not_nil(render.check(kind, v), kind .. " " .. tostring(v)) end
    end
    for kind, values in pairs {
      interface = { "", ".", "..", "eth0:1", "a/b", "sixteen-bytes-xx", "eth 0", "eth0\0" },
      image = { "haproxy:2.6 x", "a\nb", "-x", "a//b", "" },
      address = { "::ffff:192.0.2.2", "2001:db8::2", "192.0.2.256" }, port = { "0", "65536", "1e3", 1.5 },
      router_id = { "0", "256", "-1" },
    } do
      for _, v in ipairs(values) do assert.is_nil(render.check(kind, v), kind .. " " .. tostring(v)) end
    end
  end)
end)
