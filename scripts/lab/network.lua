-- The lab's network as `lab up` lays it out, over lab/net.lua's namespaces and bridge: its /24
-- (the given one checked, or a free one picked) against this machine's addresses and the other labs'
-- records, under the machine-wide lock; the addresses in it (.2 the control-plane endpoint, .11..
-- the nodes, .201.. external etcd members); each node's /etc/hosts; the endpoint itself (the lab's
-- balancer in its own namespace, or the control planes' virtual IP).
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local log = require "framework.log"
local net = require "lab.net"
local paths = require "lab.paths"
local proc = require "moonadm.proc"
local state = require "lab.state"

local M = {}

-- --control-plane-endpoint vip: haproxy's port (the HA guide's).
local VIP_PORT <const> = 8443

-- Other labs' recorded subnets (their lab.json under .lab/), for those that still have a bridge or
-- a namespace on this machine: {{name=, subnet=, dir=}}.
local function other_labs(name, dir)
  local out = {}
  local base = paths.top_dir() .. "/.lab"
  for _, e in ipairs(fs.list(base) or {}) do
    local d = base .. "/" .. e
    if d ~= dir then
      local st = state.load(d)
      if type(st) == "table" and type(st.subnet) == "string" and st.name ~= name and net.exists(st.name) then
        out[#out + 1] = { name = st.name, subnet = st.subnet, dir = d }
      end
    end
  end
  return out
end

-- The lab's /24: --subnet when nothing on this machine or another lab has it, else a free one.
local function choose_subnet(flags, set, name, dir)
  local addrs, aerr = net.host_addresses()
  if not addrs then error("lab network: " .. aerr, 0) end
  local labs = other_labs(name, dir)
  if set.subnet then
    local why = net.taken(flags.subnet, { lab = name, addresses = addrs, labs = labs })
    if why then
      error(("subnet %s is already taken (%s): give another --subnet, or leave it out and the lab picks a free one")
        :format(flags.subnet, why), 0)
    end
    return flags.subnet
  end
  local subnet, perr = net.choose(name, { addresses = addrs, labs = labs })
  if not subnet then error(perr, 0) end
  log.info("[lab] %s: subnet %s.0/24 (free; --subnet picks another)", name, subnet)
  return subnet
end

-- Takes the machine-wide lock and chooses the lab's subnet (set: the flags given) → subnet, and the
-- lock's release. The caller records the choice in lab.json and brings the bridge up before it
-- releases the lock: a concurrent `lab up` sees one or the other.
function M.claim_subnet(flags, set, name, dir)
  local release = net.lock()
  local ok, subnet = pcall(choose_subnet, flags, set, name, dir)
  if not ok then release() error(subnet, 0) end
  return subnet, release
end

-- The lab's nodes in st (cp1..cpN, w1..wN, s1..sN, each with its address and root) and its
-- external etcd members (e1..eN), as flags ask.
function M.add_nodes(st, flags)
  for i = 1, flags["control-planes"] do st.nodes[#st.nodes + 1] = { name = "cp" .. i, role = "control-plane" } end
  for i = 1, flags.workers do st.nodes[#st.nodes + 1] = { name = "w" .. i, role = "worker" } end
  for i = 1, flags.spares do st.nodes[#st.nodes + 1] = { name = "s" .. i, role = "spare" } end
  for i, n in ipairs(st.nodes) do
    n.ip = ("%s.%d"):format(st.subnet, 10 + i)
    n.root = st.dir .. "/" .. n.name
  end
  if flags["external-etcd"] > 0 then
    st.etcd = {}
    for i = 1, flags["external-etcd"] do
      st.etcd[i] = { name = "e" .. i, ip = ("%s.%d"):format(st.subnet, 200 + i), root = st.dir .. "/e" .. i }
    end
  end
end

-- Every node's etc/hosts: its own name and its peers', as a real site's DNS or /etc/hosts would say.
function M.write_hosts(st)
  local lines = { "127.0.0.1	localhost", "::1	localhost ip6-localhost ip6-loopback" }
  for _, n in ipairs(st.nodes) do lines[#lines + 1] = n.ip .. "	" .. n.name end
  local text = table.concat(lines, "\n") .. "\n"
  for _, n in ipairs(st.nodes) do state.write(n.root .. "/etc/hosts", text, "0644", "0755") end
end

-- The control-plane endpoint at .2, recorded in st: with vip, the control planes' keepalived holds it
-- and their haproxy listens on VIP_PORT (no balancer); else, with several control planes, the lab's
-- balancer (`lab lb`, lab/lb.lua) in its own namespace in front of their kube-apiservers.
function M.endpoint_up(st, vip)
  local ip = st.subnet .. ".2"
  if vip then
    st.vip, st.endpoint = { ip = ip, port = VIP_PORT }, ip .. ":" .. VIP_PORT
    state.save(st.dir, st)
    return
  end
  local backends = {}
  for _, n in ipairs(st.nodes) do if n.role == "control-plane" then backends[#backends + 1] = n.ip .. ":6443" end end
  if #backends <= 1 then return end
  local lb = { name = "lb", ip = ip }
  net.node_up("lb", lb.ip, st.subnet, st.name)
  local largv = { core.exe(), "lab", "lb", "--listen", lb.ip .. ":6443" }
  for _, b in ipairs(backends) do largv[#largv + 1] = "--backend"; largv[#largv + 1] = b end
  lb.pid = assert(proc.spawn { argv = largv, netns = net.netns_path("lb", st.name), log = st.dir .. "/lb.log", new_session = true })
  st.lb, st.endpoint = lb, lb.ip .. ":6443"
  state.save(st.dir, st)
end

return M
