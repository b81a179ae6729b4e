-- The lab's network: one Linux bridge on the host and, per lab node, a network namespace with
-- its own loopback and an address on that bridge (a veth pair). These addresses exist only on
-- the lab's own bridge and namespaces. Everything here shells out to iproute2's `ip`.
-- A lab without --subnet picks a free /24 itself (M.choose): the first candidate comes from its
-- name, the next ones are probed against every address on this machine and every other lab's
-- recorded subnet, under a machine-wide lock so that two `lab up`s cannot pick the same one.
local cjson = require "cjson"
local core = require "moonadm.core"
local proc = require "moonadm.proc"
local encoding = require "moonadm.encoding"

local M = {}

M.NAME = "moonadm"    -- a lab's name prefixes its namespaces and names its bridge: labs can coexist
M.SUBNET = "10.250.0" -- /24; .1 is the host side, .2 the load balancer, .11.. the nodes
M.POOL = "10.250"     -- the /16 a lab without --subnet picks its /24 from (M.SUBNET is its .0)
M.LOCK = "/run/moonadm-lab-subnet.lock"

function M.bridge_name(lab) return ("%s0"):format(lab or M.NAME):sub(1, 15) end
local function veth_name(lab, node) return ("v%s-%s"):format((lab or M.NAME):sub(1, 6), node):sub(1, 15) end

local function ip(args, allow_fail)
  local argv = { "ip" }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local code, out = proc.run { argv = argv }
  if code ~= 0 and not allow_fail then
    error(("lab network: `%s` failed (exit %s): %s"):format(table.concat(argv, " "), tostring(code), out or ""), 0)
  end
  return code == 0, out
end

function M.netns_name(node, lab) return (lab or M.NAME) .. "-" .. node end
function M.netns_path(node, lab) return "/run/netns/" .. M.netns_name(node, lab) end

-- Can this machine make namespaces at all? Say so clearly instead of falling back.
-- The probe's name is this process's: two labs starting at once must not collide on it.
function M.check()
  local probe = "moonadm-probe-" .. core.getpid()
  local code, out = proc.run { argv = { "ip", "netns", "add", probe } }
  if code ~= 0 then
    return nil, "this machine refuses network namespaces (`ip netns add` failed: " .. (out or "") ..
      "): the lab needs root and CAP_SYS_ADMIN; it does not fall back to anything that changes the manifests"
  end
  proc.run { argv = { "ip", "netns", "del", probe } }
  return true
end

function M.bridge_up(subnet, lab)
  subnet = subnet or M.SUBNET
  local br = M.bridge_name(lab)
  if not ip({ "link", "show", br }, true) then
    ip { "link", "add", br, "type", "bridge" }
  end
  ip({ "addr", "add", subnet .. ".1/24", "dev", br }, true)
  ip { "link", "set", br, "up" }
end

-- A namespace with lo up and eth0 = addr/24 on the bridge, default route via the host side.
function M.node_up(node, addr, subnet, lab)
  subnet = subnet or M.SUBNET
  local ns = M.netns_name(node, lab)
  local host_if = veth_name(lab, node)
  if not ip({ "netns", "pids", ns }, true) then
    ip { "netns", "add", ns }
  end
  ip({ "link", "del", host_if }, true)
  ip { "link", "add", host_if, "type", "veth", "peer", "name", "eth0", "netns", ns }
  ip { "link", "set", host_if, "master", M.bridge_name(lab), "up" }
  ip { "-n", ns, "link", "set", "lo", "up" }
  ip { "-n", ns, "addr", "add", addr .. "/24", "dev", "eth0" }
  ip { "-n", ns, "link", "set", "eth0", "up" }
  ip { "-n", ns, "route", "add", "default", "via", subnet .. ".1" }
  -- A host made ready for Kubernetes forwards IPv4 (kubeadm's preflight
  -- FileContent--proc-sys-net-ipv4-ip_forward); a new namespace starts with the host's value, often 0,
  -- and only a node whose CNI bridge plugin ran would have turned it on: a spare failed kubeadm's join.
  ip { "netns", "exec", ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward" }
end

function M.node_down(node, lab)
  ip({ "link", "del", veth_name(lab, node) }, true)
  ip({ "netns", "del", M.netns_name(node, lab) }, true)
end

function M.bridge_down(lab)
  ip({ "link", "del", M.bridge_name(lab) }, true)
end

-- Every namespace of this lab that exists (node names), for cleaning up after a killed run.
function M.list_nodes(lab)
  local _, out = ip({ "netns", "list" }, true)
  local prefix = (lab or M.NAME) .. "-"
  local nodes = {}
  for line in (out or ""):gmatch("[^\n]+") do
    local name = line:match("^(%S+)")
    if name and name:sub(1, #prefix) == prefix then nodes[#nodes + 1] = name:sub(#prefix + 1) end
  end
  return nodes
end

-- ---- choosing a subnet ------------------------------------------------------------

local function ip4(text)
  local a, b, c, d = (text or ""):match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
  if not a then return nil end
  local n = 0
  for _, o in ipairs { a, b, c, d } do
    o = tonumber(o)
    if o > 255 then return nil end
    n = n * 256 + o
  end
  return n
end

-- Is "a.b.c" a valid /24 prefix?
function M.valid_subnet(subnet)
  return type(subnet) == "string" and subnet:match("^%d+%.%d+%.%d+$") ~= nil and ip4(subnet .. ".0") ~= nil
end

-- Do the /24 subnet and addr/prefix share any address?
function M.overlaps(subnet, addr, prefix)
  local net, a = ip4(subnet .. ".0"), ip4(addr)
  if not net or not a then return false end
  local bits = math.min(24, prefix)
  local size = 1 << (32 - bits)
  return net // size == a // size
end

-- Every IPv4 address on this machine's interfaces (the lab namespaces' own are not seen here; each
-- lab's bridge holds its subnet's .1): {{dev=, addr=, prefix=}}. `ip -j` is iproute2's JSON.
function M.host_addresses(run)
  local code, out = (run or proc.run) { argv = { "ip", "-j", "-4", "addr", "show" } }
  if code ~= 0 then return nil, "`ip -j -4 addr show` failed: " .. tostring(out) end
  local ok, links = pcall(cjson.decode, out or "")
  if not ok or type(links) ~= "table" then return nil, "`ip -j -4 addr show` gave no JSON: " .. tostring(out) end
  local list = {}
  for _, l in ipairs(links) do
    for _, ai in ipairs(type(l.addr_info) == "table" and l.addr_info or {}) do
      if ai.family == "inet" and ai["local"] then
        list[#list + 1] = { dev = l.ifname, addr = ai["local"], prefix = math.tointeger(ai.prefixlen) or 32 }
      end
    end
  end
  return list
end

-- Why subnet cannot be this lab's, or nil when it is free. opts: {lab = this lab's name,
-- addresses = M.host_addresses(), labs = {{name=, subnet=, dir=}, ...} (other labs' state)}.
function M.taken(subnet, opts)
  local own = M.bridge_name(opts.lab)
  for _, a in ipairs(opts.addresses or {}) do
    if a.dev ~= own and M.overlaps(subnet, a.addr, a.prefix) then
      return ("%s/%d on %s is in it"):format(a.addr, a.prefix, a.dev)
    end
  end
  for _, l in ipairs(opts.labs or {}) do
    if l.name ~= (opts.lab or M.NAME) and l.subnet == subnet then
      return ("lab %q (%s) uses it"):format(l.name, l.dir or "?")
    end
  end
end

-- The candidates for a lab, in order: the default lab starts at M.SUBNET; another name starts at a
-- /24 of M.POOL picked by its name's hash (never the default's .0), then the next ones, wrapping.
function M.candidates(lab)
  local list = {}
  if (lab or M.NAME) == M.NAME then
    for i = 0, 255 do list[#list + 1] = ("%s.%d"):format(M.POOL, i) end
    return list
  end
  local h = tonumber(encoding.sha256_hex(lab):sub(1, 8), 16)
  local start = h % 255 -- 0..254 -> third octet 1..255
  for i = 0, 254 do list[#list + 1] = ("%s.%d"):format(M.POOL, (start + i) % 255 + 1) end
  return list
end

-- The first free candidate, or nil and why none is.
function M.choose(lab, opts)
  for _, subnet in ipairs(M.candidates(lab)) do
    if not M.taken(subnet, { lab = lab, addresses = opts.addresses, labs = opts.labs }) then return subnet end
  end
  return nil, ("no free /24 left in %s.0.0/16 for lab %q: give one with --subnet"):format(M.POOL, lab or M.NAME)
end

-- Does this lab have anything on the machine (its bridge or a namespace)?
function M.exists(lab)
  return ip({ "link", "show", M.bridge_name(lab) }, true) or #M.list_nodes(lab) > 0
end

-- The machine-wide lock around choosing a subnet and bringing its bridge up: a directory (mkdir is
-- atomic) holding the owner's pid; a dead owner's lock is broken. Returns a release function.
function M.lock(timeout)
  local deadline = core.monotonic() + (timeout or 60)
  local no_pid_since
  while true do
    local made = os.execute(("mkdir '%s' 2>/dev/null"):format(M.LOCK))
    if made then
      local f = io.open(M.LOCK .. "/pid", "w")
      if f then f:write(tostring(core.getpid())); f:close() end
      return function() os.remove(M.LOCK .. "/pid"); os.remove(M.LOCK) end
    end
    local f = io.open(M.LOCK .. "/pid", "r")
    local pid = f and tonumber(f:read("a"))
    if f then f:close() end
    -- no pid for 5 s: its owner died between mkdir and writing it
    if not pid then no_pid_since = no_pid_since or core.monotonic() else no_pid_since = nil end
    if (pid and not proc.alive(math.tointeger(pid))) or (no_pid_since and core.monotonic() - no_pid_since > 5) then
      os.remove(M.LOCK .. "/pid")
      os.remove(M.LOCK)
      no_pid_since = nil
    elseif core.monotonic() > deadline then
      error(("lab network: could not take the subnet lock %s within %gs (held by pid %s)"):format(M.LOCK,
        timeout or 60, tostring(pid)), 0)
    else
      core.sleep(0.1)
    end
  end
end

return M
