-- A control-plane endpoint without an outside load balancer (kubeadm's HA guide): a virtual IP held
-- by the control planes themselves. moonadm's own, opt-in (kubeadm's v1beta4 has no field for it):
--   init   --control-plane-endpoint-vip keepalived-haproxy, with controlPlaneEndpoint VIP:PORT
--          (PORT: haproxy's, not the apiservers' bindPort); the settings go into the ConfigMap
--          kube-system/moonadm-control-plane-endpoint, which a control-plane join reads;
--   join   a control plane writes the same static Pods when that ConfigMap exists;
--   reset  removes the files (the manifests go with the manifest dir); the other nodes' haproxy
--          drops this apiserver by itself once it leaves the `kubernetes` EndpointSlice.
-- haproxy's backend follows the live apiservers through a reader token that may only get that one
-- EndpointSlice (endpoint/keepalived_haproxy.lua says why).
local cjson = require "cjson"
local core = require "moonadm.core"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"
local fs = require "moonadm.fs"
local proc = require "moonadm.proc"
local capi = require "cluster.api"
local admin = require "cluster.admin"
local client = require "kube.client"
local shape = require "kube.shape"
local cnet = require "config.net"
local log = require "framework.log"
local nodeview = require "node.view"
local clean = require "node.clean"
local render = require "endpoint.keepalived_haproxy"

local M = {}

M.MODES = { ["keepalived-haproxy"] = true, ["kube-vip"] = true }
M.CONFIGMAP = "moonadm-control-plane-endpoint"
M.READER = "moonadm-control-plane-endpoint" -- the ServiceAccount, Role and RoleBinding
M.READER_SECRET = "moonadm-control-plane-endpoint-token"
M.DEFAULT_IMAGES = { haproxy = "docker.io/library/haproxy:2.6", keepalived = "docker.io/osixia/keepalived:2.0.20" }
M.DEFAULT_ROUTER_ID = 51

local function flag(ctx, name)
  local v = ctx.flags and ctx.flags[name]
  if v ~= nil and v ~= "" then return v end
end

-- Where init's settings come from (the names an error gives) and the ConfigMap's key of each.
local INIT_SOURCE = {
  mode = "--control-plane-endpoint-vip", router_id = "--control-plane-endpoint-vip-router-id",
  haproxy_image = "--control-plane-endpoint-vip-haproxy-image",
  keepalived_image = "--control-plane-endpoint-vip-keepalived-image",
}
local CM_KEY = { mode = "mode", address = "address", port = "port", router_id = "routerID",
  haproxy_image = "haproxyImage", keepalived_image = "keepalivedImage" }

-- The settings from their raw values: every one checked by its grammar (render.check) here, the
-- one place settings are made, whatever their source; where(field, why) is the error, naming the
-- source and what to do.
local function settings(raw, where)
  local s = {}
  for _, f in ipairs(render.SETTINGS) do
    local v, why = render.check(f, raw[f])
    if v == nil then error(where(f, why), 0) end
    s[f] = v
  end
  return s
end

-- The init's settings from its flags and config, checked; nil when the mode is not asked for.
function M.init_settings(ctx)
  local mode = flag(ctx, "control-plane-endpoint-vip")
  if not mode then return nil end
  if not M.MODES[mode] then
    error(("--control-plane-endpoint-vip %q: give keepalived-haproxy or kube-vip"):format(mode), 0)
  end
  if mode == "kube-vip" then
    error("--control-plane-endpoint-vip kube-vip: not available in this release: kube-vip's Go module " ..
      "(github.com/kube-vip/kube-vip) is not served by the module proxy moonadm is built and tested with, so " ..
      "its static Pod could never be proven here; use keepalived-haproxy (docs/ha.md)", 0)
  end
  local cpe = ((ctx.cfg or {}).cluster or {}).controlPlaneEndpoint
  if not cpe or cpe == "" then
    error("--control-plane-endpoint-vip needs controlPlaneEndpoint (or --control-plane-endpoint) set to " ..
      "VIP:PORT, the virtual IP and haproxy's port", 0)
  end
  local host, port = cnet.split_host_port(cpe)
  if host and not port then
    error(("controlPlaneEndpoint %q has no port: give VIP:PORT with PORT haproxy's (the guide's 8443), " ..
      "not the apiservers' %d"):format(cpe, nodeview.bind_port(ctx)), 0)
  end
  local s = settings({ mode = mode, address = host, port = port,
    router_id = flag(ctx, "control-plane-endpoint-vip-router-id") or M.DEFAULT_ROUTER_ID,
    haproxy_image = flag(ctx, "control-plane-endpoint-vip-haproxy-image") or M.DEFAULT_IMAGES.haproxy,
    keepalived_image = flag(ctx, "control-plane-endpoint-vip-keepalived-image") or M.DEFAULT_IMAGES.keepalived,
  }, function(f, why)
    -- the address and port are controlPlaneEndpoint's (--control-plane-endpoint or the configuration)
    return ("%s: %s"):format(INIT_SOURCE[f] or ("controlPlaneEndpoint " .. shape.quote(cpe)), why)
  end)
  if s.port == nodeview.bind_port(ctx) then
    error(("controlPlaneEndpoint %q: haproxy runs next to the kube-apiserver on every control plane, so " ..
      "its port must differ from the apiserver's bindPort %d (the guide uses 8443)"):format(cpe, s.port), 0)
  end
  return s
end

local function configmap(s)
  return {
    apiVersion = "v1", kind = "ConfigMap",
    metadata = { name = M.CONFIGMAP, namespace = "kube-system" },
    data = { mode = s.mode, address = s.address, port = tostring(s.port), routerID = tostring(s.router_id),
      haproxyImage = s.haproxy_image, keepalivedImage = s.keepalived_image },
  }
end

-- The cluster's settings (the ConfigMap), checked as init's are, or nil when it has none; raises on
-- any other failure, before this node's files are written.
function M.cluster_settings(c)
  local cm, err = capi.lookup(c, { apiVersion = "v1", kind = "ConfigMap", namespace = "kube-system", name = M.CONFIGMAP })
  if err then error(("reading ConfigMap kube-system/%s: %s"):format(M.CONFIGMAP, tostring(err)), 0) end
  if not cm then return nil end
  local fix = ("fix it (kubectl -n kube-system edit configmap %s; `moonadm init phase control-plane-endpoint-reader` " ..
    "on a control plane writes it anew), or delete it if the cluster has no virtual IP, then run the join again; " ..
    "this node's keepalived and haproxy files were not written"):format(M.CONFIGMAP)
  local d, derr = shape.strings(cm, "data")
  if not d then error(("ConfigMap kube-system/%s: %s: %s"):format(M.CONFIGMAP, derr, fix), 0) end
  local raw = {}
  for f, key in pairs(CM_KEY) do raw[f] = d[key] end
  return settings(raw, function(f, why)
    return ("ConfigMap kube-system/%s, key %s: %s; %s"):format(M.CONFIGMAP, CM_KEY[f], why, fix)
  end)
end

-- --control-plane-endpoint-vip-interface checked (keepalived's `interface`), or nil when not given.
-- init's and a control-plane join's preflight ask, before anything is written.
function M.given_interface(ctx)
  local given = flag(ctx, "control-plane-endpoint-vip-interface")
  if not given then return nil end
  local v, why = render.check("interface", given)
  if not v then
    error(("--control-plane-endpoint-vip-interface: %s: give the interface that holds this node's address, " ..
      "as `ip link` lists it"):format(why), 0)
  end
  return v
end

-- The interface holding this node's address (keepalived's `interface`): --control-plane-endpoint-vip-interface
-- wins; else asked of `ip -j addr show` (its name checked too: it goes into keepalived.conf).
function M.interface(ctx, ip)
  local given = M.given_interface(ctx)
  if given then return given end
  local code, out = proc.run { argv = { "ip", "-j", "addr", "show" } }
  if code ~= 0 then error(("finding the interface of %s: `ip -j addr show` failed: %s"):format(ip, tostring(out)), 0) end
  local ok, links = pcall(cjson.decode, out or "")
  for _, l in ipairs(ok and type(links) == "table" and links or {}) do
    for _, a in ipairs(type(l.addr_info) == "table" and l.addr_info or {}) do
      if a["local"] == ip then
        local v, why = render.check("interface", l.ifname)
        if not v then
          error(("the interface `ip -j addr show` names for %s: %s: give keepalived's interface with " ..
            "--control-plane-endpoint-vip-interface"):format(ip, why), 0)
        end
        return v
      end
    end
  end
  error(("no interface of this machine holds the advertise address %s: give keepalived's interface with " ..
    "--control-plane-endpoint-vip-interface"):format(ip), 0)
end

-- The apiservers the cluster lists now (the `kubernetes` EndpointSlice), this node's first.
local function servers_now(c, self_ip, self_port)
  local list = { { ip = self_ip, port = self_port } }
  if not c then return list end
  local slice, err = capi.lookup(c, { apiVersion = "discovery.k8s.io/v1", kind = "EndpointSlice",
    namespace = "default", name = "kubernetes" })
  if err then error(("reading the kube-apiservers' EndpointSlice default/kubernetes: %s"):format(tostring(err)), 0) end
  -- its addresses go into haproxy.cfg: each held to an address's grammar, as a setting is
  local function bad(why) error(("EndpointSlice default/kubernetes: %s: refusing to write haproxy's backend from " ..
    "it"):format(why), 0) end
  local port, perr = shape.get(slice, "ports.1.port")
  if perr then bad(perr) end
  if port ~= nil then
    local why
    port, why = render.check("port", port)
    if not port then bad("ports[0].port " .. why) end
  end
  local eps, eerr = shape.get(slice, "endpoints", "array")
  if eerr then bad(eerr) end
  local seen = { [self_ip] = true }
  for i, ep in ipairs(eps or {}) do
    local addrs, aerr = shape.get(ep, "addresses", "array")
    if aerr then bad(("endpoints[%d]: %s"):format(i - 1, aerr)) end
    for j, a in ipairs(addrs or {}) do
      local ip, why = render.check("ip", a)
      if not ip then bad(("endpoints[%d].addresses[%d] %s"):format(i - 1, j - 1, why)) end
      if not seen[ip] and #list < render.SLOTS then seen[ip] = true; list[#list + 1] = { ip = ip, port = port or self_port } end
    end
  end
  return list
end

-- Raises when this node has a keepalived or haproxy configuration moonadm did not write (no mark):
-- the operator's own, which the phase must not overwrite.
function M.check_files_free(ctx)
  for _, f in ipairs(render.FILES) do
    local text = ctx:read(f)
    if text and not text:find(render.MARK, 1, true) then
      error(("%s exists and was not written by moonadm: this node already has its own keepalived or haproxy " ..
        "configuration; move it away (or drop --control-plane-endpoint-vip and keep your own balancer)"):format(f), 0)
    end
  end
end

-- init preflight, before anything is written: the settings, keepalived's interface, no foreign files.
function M.preflight(ctx)
  if not M.init_settings(ctx) then return end
  M.interface(ctx, nodeview.advertise_address(ctx))
  M.check_files_free(ctx)
end

-- Writes this node's files and static Pods. c: an admin client (a join), or nil (init: the
-- cluster has no apiserver yet). first: the init node (priority 101: it wins a tie of nodes that start together).
function M.write_node(ctx, s, c, first)
  local ip, port = nodeview.advertise_address(ctx), nodeview.bind_port(ctx)
  local node = { name = nodeview.name(ctx), ip = ip, port = port, interface = M.interface(ctx, ip), first = first }
  M.check_files_free(ctx)
  local out = render.render(s, node, servers_now(c, ip, port))
  ctx:mkdir("/etc/keepalived", "0755")
  ctx:mkdir(render.HAPROXY_DIR, "0755")
  for _, f in ipairs(out.files) do ctx:write(f[1], f[2], f[3]) end
  ctx:mkdir("/etc/kubernetes/manifests", "0700")
  for _, name in ipairs { "keepalived", "haproxy" } do
    ctx:write(("/etc/kubernetes/manifests/%s.yaml"):format(name), yaml.encode(out.pods[name]), "0600")
  end
  log.info("[control-plane-endpoint] %s the keepalived and haproxy static Pods for the virtual IP %s " ..
    "(interface %s, haproxy on port %d)", ctx.dry_run and "Would write" or "Wrote", s.address, node.interface, s.port)
end

-- The reader's ServiceAccount, its long-lived token Secret, and a Role that may get only the
-- default/kubernetes EndpointSlice.
local function reader_objects()
  return {
    { apiVersion = "v1", kind = "ServiceAccount", metadata = { name = M.READER, namespace = "kube-system" } },
    { apiVersion = "v1", kind = "Secret", type = "kubernetes.io/service-account-token",
      metadata = { name = M.READER_SECRET, namespace = "kube-system",
        annotations = { ["kubernetes.io/service-account.name"] = M.READER } } },
    { apiVersion = "rbac.authorization.k8s.io/v1", kind = "Role", metadata = { name = M.READER, namespace = "default" },
      rules = { { apiGroups = { "discovery.k8s.io" }, resources = { "endpointslices" }, resourceNames = { "kubernetes" },
        verbs = { "get" } } } },
    { apiVersion = "rbac.authorization.k8s.io/v1", kind = "RoleBinding", metadata = { name = M.READER, namespace = "default" },
      roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "Role", name = M.READER },
      subjects = { { kind = "ServiceAccount", name = M.READER, namespace = "kube-system" } } },
  }
end

-- The reader token (the token controller fills the Secret a moment after it is made). A Secret that
-- does not exist is not waited for: init's control-plane-endpoint-reader makes it.
local function reader_token(ctx, c)
  local ref = { apiVersion = "v1", kind = "Secret", namespace = "kube-system", name = M.READER_SECRET }
  return capi.poll("the token of Secret kube-system/" .. M.READER_SECRET, capi.timeout(ctx, "kubernetesAPICall"), 0.5,
    function()
      local sec, err = capi.lookup(c, ref)
      if err then return nil, err end
      if not sec then
        error(("Secret kube-system/%s (haproxy's EndpointSlice reader) does not exist: on a control plane run " ..
          "`moonadm init phase control-plane-endpoint-reader --config <the init's config> " ..
          "--control-plane-endpoint-vip keepalived-haproxy`, which makes it, then run this again"):format(M.READER_SECRET), 0)
      end
      local d, derr = shape.strings(sec, "data")
      if not d then error(("Secret kube-system/%s: %s"):format(M.READER_SECRET, derr), 0) end
      if not d.token then return nil, "the token controller has not filled it yet" end
      -- a JWT (base64url parts and dots): it goes into haproxy's Authorization header
      local t = encoding.base64_decode(d.token)
      if not t or not t:match("^[%w%-_.]+$") then
        error(("Secret kube-system/%s: data.token is not a service account token (a JWT): delete the Secret and run " ..
          "`moonadm init phase control-plane-endpoint-reader` on a control plane"):format(M.READER_SECRET), 0)
      end
      return t
    end)
end

-- Writes the reader token this node's haproxy reads with (0600: a credential).
function M.write_token(ctx, c)
  if ctx.dry_run then
    log.info("[dryrun] Would write haproxy's EndpointSlice reader token to %s", render.TOKEN_FILE)
    return
  end
  ctx:write(render.TOKEN_FILE, reader_token(ctx, c), "0600")
end

-- init, once the apiserver answers: the reader, then the settings (a join that finds the settings
-- finds the reader too).
function M.upload(ctx, s, c)
  for _, obj in ipairs(reader_objects()) do
    if obj.kind == "Secret" then capi.ensure(ctx, c, obj) else capi.apply(ctx, c, obj) end
  end
  capi.apply(ctx, c, configmap(s))
end

-- Waits until the control-plane endpoint answers /healthz (the VIP is held and haproxy sends
-- the request to a healthy apiserver): anonymous, the cluster CA checks the serving certificate.
function M.wait(ctx, s, timeout)
  if ctx.dry_run then
    log.info("[dryrun] Would wait for the virtual IP %s (port %d) to answer /healthz", s.address, s.port)
    return
  end
  local url = cnet.url("https", s.address, s.port)
  local c, err = client.new { server = url, ca_file = fs.path(render.CA_FILE), timeout = 5, request_timeout = 2 }
  if not c then error(("an API client for %s: %s"):format(url, tostring(err)), 0) end
  log.info("[control-plane-endpoint] Waiting for the virtual IP: %s/healthz", url)
  local t0 = core.monotonic()
  capi.poll(url .. "/healthz through the virtual IP", timeout, 0.5, function()
    local resp, rerr = c:raw("GET", "/healthz", { timeout = 2, no_retry = true })
    if not resp then return nil, rerr end
    if resp.status == 200 then return true end
    return nil, ("HTTP %d"):format(resp.status)
  end)
  c:close()
  log.info("[control-plane-endpoint] The virtual IP answers after %.1fs", core.monotonic() - t0)
end

-- Is this node running the VIP's static Pods (the files carry moonadm's mark)?
function M.present(ctx)
  local text = ctx:read(render.HAPROXY_CFG)
  return text ~= nil and text:find(render.MARK, 1, true) ~= nil
end

-- reset, after cleanup-node stopped keepalived: the VIP off this node's interface. The runtime stops a
-- pod's containers at once (SIGKILL), so keepalived cannot take it off itself, and a node keeping it
-- would still answer ARP for the VIP with no haproxy behind it. Read from keepalived.conf; nothing is
-- done unless the interface holds that address now.
function M.release_address(ctx)
  local conf = ctx:read(render.KEEPALIVED_CONF)
  if not conf or not conf:find(render.MARK, 1, true) then return end
  local ifname = render.check("interface", conf:match("\n%s*interface%s+(%S+)"))
  local addr = render.check("address", conf:match("virtual_ipaddress%s*{%s*([%x%.:]+)"))
  if not ifname or not addr then return end
  local code, out = proc.run { argv = { "ip", "-o", "addr", "show", "dev", ifname } }
  if code ~= 0 then
    log.warn("[reset] Could not read the addresses of %s to remove the virtual IP %s: %s", ifname, addr, tostring(out))
    return
  end
  if not out:find(" " .. addr .. "/", 1, true) then
    -- keepalived gave it up before its pod stopped (a failed check, or a graceful stop), or
    -- another node holds it
    log.info("[reset] The virtual IP %s is not on %s: nothing to remove", addr, ifname)
    return
  end
  if ctx.dry_run then log.info("[reset] Would remove the virtual IP %s from %s", addr, ifname) return end
  local prefix = out:match(" " .. addr:gsub("%p", "%%%0") .. "/(%d+)") or "32"
  local dcode, dout = proc.run { argv = { "ip", "addr", "del", addr .. "/" .. prefix, "dev", ifname } }
  if dcode ~= 0 then
    log.warn("[reset] Failed to remove the virtual IP %s from %s: %s", addr, ifname, tostring(dout))
  else
    log.info("[reset] Removed the virtual IP %s from %s", addr, ifname)
  end
end

-- reset, after cleanup-node (which removed every manifest and waited for the pods to stop): the
-- files moonadm wrote (marked), and the token.
function M.remove_files(ctx)
  local gone = {}
  for _, f in ipairs(render.FILES) do
    local text = ctx:read(f)
    if text and text:find(render.MARK, 1, true) then gone[#gone + 1] = f end
  end
  if ctx:exists(render.TOKEN_FILE) then gone[#gone + 1] = render.TOKEN_FILE end
  if #gone == 0 then return end
  if ctx.dry_run then log.info("[reset] Would remove the control-plane endpoint's files %s", clean.list_text(gone)) return end
  for _, f in ipairs(gone) do
    local ok, err = clean.remove(f)
    if ok == nil then log.warn("[reset] Failed to remove %s: %s", f, tostring(err)) end
  end
  log.info("[reset] Removed the control-plane endpoint's files %s", clean.list_text(gone))
end

M.admin_client = admin.client

return M
