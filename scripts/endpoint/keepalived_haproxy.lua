-- The files of kubeadm's HA guide's first way, for one control-plane node: keepalived holds the
-- virtual IP (VRRP, moved to a healthy node), haproxy on every control plane spreads connections
-- over the kube-apiservers. Pure rendering: settings (endpoint/vip.lua's) and this node in, file
-- texts and static Pod tables out; endpoint/vip.lua writes them.
--   keepalived.conf + check_apiserver.sh   as the guide's (the check asks /healthz through haproxy)
--   haproxy.cfg                            as the guide's, its backend a fixed set of SLOTS servers
--   apiserver-backends.lua                 haproxy's own Lua task: the backend's servers follow the
--                                          cluster's kube-apiservers (the `kubernetes` EndpointSlice)
-- Why the Lua task: a joining control plane cannot write the other nodes' files, and the
-- apiservers' endpoint reconciler already keeps the list of live apiservers; haproxy reads it from
-- its own node's apiserver with a token that may only read that one object (endpoint/vip.lua).
local yaml = require "moonadm.yaml"
local pod = require "manifests.pod"
local net = require "config.net"
local shape = require "kube.shape"

local M = {}

M.SLOTS = 7 -- the backend's servers: more control planes than etcd's sensible maximum
M.BACKEND = "apiserverbackend"
M.KEEPALIVED_CONF = "/etc/keepalived/keepalived.conf"
M.CHECK_SCRIPT = "/etc/keepalived/check_apiserver.sh"
M.HAPROXY_DIR = "/etc/haproxy"
M.HAPROXY_CFG = "/etc/haproxy/haproxy.cfg"
M.BACKENDS_LUA = "/etc/haproxy/apiserver-backends.lua"
M.TOKEN_FILE = "/etc/haproxy/apiserver-reader.token"
M.CA_FILE = "/etc/kubernetes/pki/ca.crt"
M.MARK = "written by moonadm (control-plane endpoint: keepalived-haproxy)" -- in each file's comment syntax
M.SYNC_SECONDS = 5
M.STATS = "127.0.0.1:8404" -- haproxy's stats page (its conventional port), loopback only

local arr = yaml.array

-- The grammar of every value these files take. keepalived's and haproxy's configurations are words
-- separated by blanks, a directive a line, and haproxy's task is Lua: a value with a newline, a
-- blank, a brace, a quote or a comment sign would be read as more configuration (keepalived runs a
-- vrrp_script as root). So each value is held to what it names, never merely quoted.
-- check(kind, v) → v (numbers as integers) | nil, why. endpoint/vip.lua checks every setting where
-- it is made (flags, config, ConfigMap, `ip`), render() again before it writes a byte.
local function integer(v, lo, hi)
  local n = type(v) == "string" and v:match("^%d+$") and tonumber(v) or type(v) == "number" and v or nil
  n = n and math.tointeger(n)
  return n and n >= lo and n <= hi and n or nil
end

local IMAGE_PART = "^[%w][%w._%-]*$" -- a registry host or a path component of an image name
local GRAMMAR = {
  mode = function(v)
    if v == "keepalived-haproxy" then return v end
    return nil, "is not keepalived-haproxy, the only mode this moonadm runs"
  end,
  -- the virtual IP: a dotted quad (an IPv4-mapped IPv6 text would reach keepalived as IPv6)
  address = function(v)
    local fam = net.parse_ip(v)
    if fam == 4 and not v:find(":", 1, true) then return v end
    if fam then
      return nil, "is IPv6: the virtual IP is IPv4 only in this release (keepalived's VRRP instance and the lab " ..
        "proof are IPv4); give an IPv4 VIP or an outside load balancer"
    end
    return nil, "is not an IPv4 address: the virtual IP keepalived holds needs an IP address there, not a name"
  end,
  ip = function(v)
    if net.parse_ip(v) then return v end
    return nil, "is not an IP address"
  end,
  port = function(v)
    local n = integer(v, 1, 65535)
    if n then return n end
    return nil, "is not a port (an integer 1..65535)"
  end,
  router_id = function(v)
    local n = integer(v, 1, 255)
    if n then return n end
    return nil, "is not an integer 1..255 (VRRP's virtual_router_id)"
  end,
  -- Linux's dev_valid_name (1-15 bytes, not . or .., no '/', ':', blank or NUL), narrowed to the
  -- characters interface names are made of, so keepalived reads it as one word
  interface = function(v)
    if type(v) == "string" and #v <= 15 and v:match("^[A-Za-z0-9_.%-]+$") and v ~= "." and v ~= ".." then return v end
    return nil, "is not a network interface name (1-15 letters, digits, '.', '-' or '_')"
  end,
  -- keepalived's router_id: the node name, a DNS subdomain as the API holds every Node name
  node_name = function(v)
    if net.is_dns_subdomain(v) then return v end
    return nil, "is not a node name (a lowercase DNS subdomain of at most 253 bytes)"
  end,
  -- an image reference: [host[:port]/]path[:tag][@algorithm:hex], at most 255 bytes for the name
  image = function(v)
    if type(v) ~= "string" or #v > 512 then return nil, "is not an image reference" end
    local rest, digest = v:match("^(.-)@([%w+._%-]+:%x+)$")
    rest = rest or v
    local name, tag = rest:match("^(.*/?[^/:]+):([%w_][%w_.%-]*)$")
    if not name or tag and #tag > 128 then name = rest end
    local ok = #name > 0 and #name <= 255 and (not digest or #digest <= 256)
    local first = true
    for part in (name .. "/"):gmatch("([^/]*)/") do
      local host = first and part:match("^(.-):%d+$") -- only the registry host may carry a port
      ok = ok and (host or part):match(IMAGE_PART) ~= nil
      first = false
    end
    if ok then return v end
    return nil, "is not an image reference ([registry[:port]/]name[:tag][@digest], e.g. docker.io/library/haproxy:2.6)"
  end,
}
GRAMMAR.haproxy_image, GRAMMAR.keepalived_image = GRAMMAR.image, GRAMMAR.image

-- v | nil, why ("VALUE is not ..."; "is missing" for nil).
function M.check(kind, v)
  if v == nil or v == "" then return nil, "is missing" end
  local ok, why = GRAMMAR[kind](v)
  if ok ~= nil then return ok end
  return nil, shape.quote(v) .. " " .. why
end

-- The settings a file takes, in the order they are checked.
M.SETTINGS = { "mode", "address", "port", "router_id", "haproxy_image", "keepalived_image" }

-- render's own check of what it was given (vip.lua has checked it where it was made): raises.
local function refuse_unchecked(s, n, servers)
  local function need(what, kind, v)
    local ok, why = M.check(kind, v)
    if ok == nil then
      error(("refusing to write keepalived's and haproxy's files: %s %s"):format(what, why), 0)
    end
  end
  for _, f in ipairs(M.SETTINGS) do
    if f ~= "mode" then need("setting " .. f, f, s[f]) end -- the mode chose this renderer: no file holds it
  end
  need("this node's name", "node_name", n.name)
  need("this node's address", "ip", n.ip)
  need("this node's apiserver port", "port", n.port)
  need("this node's interface", "interface", n.interface)
  for i, sv in ipairs(servers) do
    need(("kube-apiserver %d's address"):format(i), "ip", sv.ip)
    need(("kube-apiserver %d's port"):format(i), "port", sv.port)
  end
end

local function keepalived_conf(s, n)
  -- No authentication block: VRRPv2's PASS is plain text on the wire and VRRPv3 has none; the
  -- guide's auth_pass only tells routers of one subnet apart, which virtual_router_id does.
  return table.concat({
    "! " .. M.MARK,
    "global_defs {",
    "    router_id " .. n.name,
    "    script_user root",
    "    enable_script_security",
    "}",
    -- Unlike the guide's (weight -2, fall 10): a failed check puts the instance in FAULT, so the
    -- VIP leaves a node whose haproxy cannot reach an apiserver, and init_fail keeps a node that
    -- (re)starts from taking it before its haproxy answers.
    "vrrp_script check_apiserver {",
    "  script \"" .. M.CHECK_SCRIPT .. "\"",
    "  interval 2",
    "  timeout 3",
    "  fall 3",
    "  rise 2",
    "  init_fail",
    "}",
    "",
    -- Every node a BACKUP that does not preempt: the VIP stays where it is until its holder fails,
    -- instead of going back to the init node whenever that one restarts (its haproxy then knows
    -- only its own apiserver until its backend task has read the list). The first node up is
    -- alone and becomes MASTER; priority only breaks the tie of nodes that start together.
    "vrrp_instance VI_1 {",
    "    state BACKUP",
    "    nopreempt",
    "    interface " .. n.interface,
    "    virtual_router_id " .. s.router_id,
    "    priority " .. (n.first and 101 or 100),
    "    advert_int 1",
    "    virtual_ipaddress {",
    "        " .. s.address,
    "    }",
    "    track_script {",
    "        check_apiserver",
    "    }",
    "}",
    "",
  }, "\n")
end

local function check_script(s)
  local url = ("https://localhost:%d/healthz"):format(s.port)
  return table.concat({
    "#!/bin/sh",
    "# " .. M.MARK,
    "errorExit() {",
    "    echo \"*** $*\" 1>&2",
    "    exit 1",
    "}",
    ("curl -sfk --max-time 2 %s -o /dev/null || errorExit \"Error GET %s\""):format(url, url),
    "",
  }, "\n")
end

-- servers: {{ip=, port=}} known now (this node's apiserver first); the rest of the slots start
-- disabled and the Lua task fills them.
local function haproxy_cfg(s, n, servers)
  local lines = {
    "# " .. M.MARK,
    "global",
    "    log stdout format raw local0",
    "    lua-load " .. M.BACKENDS_LUA,
    "    httpclient.ssl.ca-file " .. M.CA_FILE,
    "    httpclient.ssl.verify required",
    "",
    "defaults",
    "    mode                    http",
    "    log                     global",
    "    option                  httplog",
    "    option                  dontlognull",
    "    option http-server-close",
    "    option forwardfor       except 127.0.0.0/8",
    "    option                  redispatch",
    "    retries                 1",
    "    timeout http-request    10s",
    "    timeout queue           20s",
    "    timeout connect         5s",
    "    timeout client          35s",
    "    timeout server          35s",
    "    timeout http-keep-alive 10s",
    "    timeout check           10s",
    "",
    "frontend apiserver",
    ("    bind *:%d"):format(s.port),
    "    mode tcp",
    "    option tcplog",
    "    default_backend " .. M.BACKEND,
    "",
    -- read-only state for the node's operator (and the e2e): which apiservers the backend holds
    -- now, `curl 'http://127.0.0.1:8404/stats;csv'`; on loopback only
    "frontend stats",
    "    bind " .. M.STATS,
    "    mode http",
    "    option dontlog-normal",
    "    stats enable",
    "    stats uri /stats",
    "    stats show-legends", -- the servers' addresses, which haproxy leaves out otherwise
    "",
    "backend " .. M.BACKEND,
    "    option httpchk",
    "    http-check connect ssl",
    "    http-check send meth GET uri /healthz",
    "    http-check expect status 200",
    "    mode tcp",
    "    balance     roundrobin",
    -- faster than haproxy's defaults (2 s, 3 falls, the guide's 10 s check timeout): a dead host's
    -- checks time out rather than fail, and until it is marked down clients are sent to it
    "    timeout check 2s",
    "    default-server inter 1s fall 2 rise 2",
  }
  for i = 1, M.SLOTS do
    local sv = servers[i]
    if sv then
      lines[#lines + 1] = ("    server cp%d %s check verify none"):format(i, net.join_host_port(sv.ip, sv.port))
    else
      lines[#lines + 1] = ("    server cp%d %s check verify none disabled"):format(i, net.join_host_port(n.ip, n.port))
    end
  end
  lines[#lines + 1] = ""
  return table.concat(lines, "\n")
end

-- The rest of backends.lua, the same on every node: the token, the EndpointSlice read through one
-- destination after the other, the slots moved, the task. (haproxy's Lua 5.3; kept as one text.)
local BACKENDS_LUA_BODY <const> = [==[
-- the token, or nil and why (a join or init writes it once the apiserver answers)
local function token()
  local f, err = io.open(TOKEN_FILE, "r")
  if not f then return nil, "reading the reader token: " .. tostring(err) end
  local t = (f:read("a") or ""):gsub("%s+$", "")
  f:close()
  if t == "" then return nil, TOKEN_FILE .. " is empty" end
  return t
end

-- the slice's endpoints as a set of "ip port" read through dst, or nil and why
local function fetch(tok, dst)
  local hc = core.httpclient()
  local ok, res = pcall(hc.get, hc, { url = URL, dst = dst, timeout = 3000,
    headers = { ["authorization"] = { "Bearer " .. tok }, ["accept"] = { "application/json" } } })
  if not ok then return nil, tostring(res) end
  if res and res.status == 503 and not (res.body or ""):find("Status", 1, true) then
    return nil, "HTTP 503 from haproxy's client: " .. dst .. " refused, timed out or failed the check against the cluster CA"
  end
  if not res or res.status ~= 200 then return nil, "HTTP " .. tostring(res and res.status) .. " from " .. dst end
  local port = res.body:match('"ports":%s*%[.-"port":%s*(%d+)')
  if not port then return nil, "no port in the EndpointSlice" end
  local want, n = {}, 0
  for list in res.body:gmatch('"addresses":%s*%[(.-)%]') do
    for ip in list:gmatch('"([^"]+)"') do
      -- an address, nothing else, becomes a server (the answer is read, not trusted)
      if ip:match("^[%x.:]+$") and #ip <= 45 and not want[ip .. " " .. port] then
        want[ip .. " " .. port], n = true, n + 1
      end
    end
  end
  if n == 0 then return nil, "no addresses in the EndpointSlice" end
  return want
end

local function apply(want)
  local servers = core.backends[BACKEND].servers
  for i = 1, SLOTS do
    local have = slots[i]
    if have and not want[have] then
      servers["cp" .. i]:set_maint()
      slots[i] = nil
      core.Info(("[moonadm] backend cp%d: %s removed (no longer a kube-apiserver endpoint)"):format(i, have))
    end
  end
  local placed = {}
  for _, a in pairs(slots) do placed[a] = true end
  local sorted = {}
  for a in pairs(want) do if not placed[a] then sorted[#sorted + 1] = a end end
  table.sort(sorted)
  for _, a in ipairs(sorted) do
    for i = 1, SLOTS do
      if not slots[i] then
        local ip, port = a:match("^(%S+) (%d+)$")
        local sv = servers["cp" .. i]
        sv:set_addr(ip, tonumber(port))
        sv:set_ready()
        slots[i] = a
        core.Info(("[moonadm] backend cp%d: %s added (a kube-apiserver endpoint)"):format(i, a))
        break
      end
    end
  end
end

-- one pass: "ok from DST", or why nothing changed
local function sync()
  local tok, why = token()
  if not tok then return why end
  local errs = {}
  for _, dst in ipairs(DSTS) do
    local want, err = fetch(tok, dst)
    if want then
      apply(want)
      return "ok from " .. dst
    end
    errs[#errs + 1] = err
  end
  return table.concat(errs, "; ")
end

core.register_task(function()
  local last
  while true do
    -- an error in one pass (a malformed answer, a bug) must not end the task
    local ok, state = pcall(sync)
    state = ok and state or ("error: " .. tostring(state))
    if state ~= last then
      core.Info("[moonadm] apiserver backends: " .. state)
      last = state
    end
    core.msleep(PERIOD_MS)
  end
end)
]==]

-- haproxy's Lua 5.3 (not moonadm's): read the EndpointSlice every SYNC_SECONDS from this node's
-- own apiserver (so a lost VIP does not blind it), else through the VIP (a node whose apiserver is
-- still starting, or down, learns the list from the others); move servers in and out of the slots.
local function backends_lua(s, n, servers)
  local initial = {}
  for i, sv in ipairs(servers) do initial[#initial + 1] = ("[%d] = %q"):format(i, sv.ip .. " " .. sv.port) end
  return table.concat({
    "-- " .. M.MARK,
    "-- The servers cp1..cp" .. M.SLOTS .. " of backend " .. M.BACKEND .. " follow the cluster's kube-apiservers: the",
    "-- addresses of the default/kubernetes EndpointSlice (the apiservers' endpoint reconciler keeps it),",
    "-- read from this node's apiserver, else through the virtual IP. A failed read or an empty list",
    "-- changes nothing.",
    "-- The URL names the apiserver `kubernetes` (a name kubeadm puts in every apiserver certificate:",
    "-- haproxy checks a certificate's DNS names, never its IP addresses); DSTS are where it is dialled.",
    ("local URL = %q"):format(("https://kubernetes:%d/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")
      :format(n.port)),
    ("local DSTS = { %q, %q }"):format(net.join_host_port(n.ip, n.port), net.join_host_port(s.address, s.port)),
    ("local TOKEN_FILE = %q"):format(M.TOKEN_FILE),
    ("local BACKEND, SLOTS, PERIOD_MS = %q, %d, %d"):format(M.BACKEND, M.SLOTS, M.SYNC_SECONDS * 1000),
    "local slots = { " .. table.concat(initial, ", ") .. " } -- slot -> \"ip port\" (haproxy.cfg's servers)",
    "",
    BACKENDS_LUA_BODY,
  }, "\n")
end

-- A static Pod of one container in the node's network, its host files mounted read-only
-- (mounts: {name, host path, hostPath type}, mounted at the same path).
local function static_pod(name, container, mounts)
  local list = {}
  for _, m in ipairs(mounts) do list[#list + 1] = pod.mount(m[1], m[2], m[2], true, m[3]) end
  local volumes, volume_mounts = pod.volumes(list)
  container.name, container.imagePullPolicy, container.volumeMounts = name, "IfNotPresent", volume_mounts
  return {
    apiVersion = "v1", kind = "Pod",
    metadata = { name = name, namespace = "kube-system", labels = { component = name, tier = "control-plane" } },
    spec = {
      containers = arr { container },
      hostNetwork = true,
      priority = pod.PRIORITY,
      priorityClassName = pod.PRIORITY_CLASS,
      volumes = volumes,
    },
  }
end

local function keepalived_pod(s)
  return static_pod("keepalived", {
    image = s.keepalived_image,
    command = arr { "keepalived", "--dont-fork", "--log-console", "--vrrp", "--use-file=" .. M.KEEPALIVED_CONF },
    securityContext = { capabilities = { add = arr { "NET_ADMIN", "NET_BROADCAST", "NET_RAW" } } },
  }, { { "check", M.CHECK_SCRIPT, "File" }, { "config", M.KEEPALIVED_CONF, "File" } })
end

local function haproxy_pod(s)
  return static_pod("haproxy", {
    image = s.haproxy_image,
    command = arr { "haproxy", "-db", "-f", M.HAPROXY_CFG },
    -- root: the reader token is a 0600 credential of root's, and the official image's USER is
    -- haproxy (the port is unprivileged; nothing else needs root)
    securityContext = { runAsUser = 0, runAsGroup = 0 },
    livenessProbe = { failureThreshold = 8, timeoutSeconds = 15,
      httpGet = { host = "localhost", path = "/healthz", port = s.port, scheme = "HTTPS" } },
  }, { { "ca", M.CA_FILE, "File" }, { "config", M.HAPROXY_DIR, "Directory" } })
end

-- settings: {address=, port=, router_id=, haproxy_image=, keepalived_image=}; node: {name=, ip=,
-- port= (its apiserver), interface=, first= (the init node: MASTER, priority 101)}; servers: the
-- apiservers known now, {{ip=, port=}}. → {files = {{path, text, mode}}, pods = {name = Pod}}
function M.render(s, node, servers)
  refuse_unchecked(s, node, servers)
  return {
    files = {
      { M.KEEPALIVED_CONF, keepalived_conf(s, node), "0644" },
      { M.CHECK_SCRIPT, check_script(s), "0755" },
      { M.HAPROXY_CFG, haproxy_cfg(s, node, servers), "0644" },
      { M.BACKENDS_LUA, backends_lua(s, node, servers), "0644" },
    },
    pods = { keepalived = keepalived_pod(s), haproxy = haproxy_pod(s) },
  }
end

-- The files a reset removes (the manifests go with /etc/kubernetes/manifests): the ones above and
-- the token. Only files that carry M.MARK are moonadm's to remove.
M.FILES = { M.KEEPALIVED_CONF, M.CHECK_SCRIPT, M.HAPROXY_CFG, M.BACKENDS_LUA }

return M
