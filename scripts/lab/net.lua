-- The lab's network: one Linux bridge on the host and, per lab node, a network namespace with
-- its own loopback and an address on that bridge (a veth pair). These addresses exist only on
-- the lab's own bridge and namespaces. Everything here shells out to iproute2's `ip`.
local proc = require "moonadm.proc"

local M = {}

M.BRIDGE = "moonadm0"
M.SUBNET = "10.250.0" -- /24; .1 is the host side, .2 the load balancer, .11.. the nodes

local function ip(args, allow_fail)
  local argv = { "ip" }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local code, out = proc.run { argv = argv }
  if code ~= 0 and not allow_fail then
    error(("lab network: `%s` failed (exit %s): %s"):format(table.concat(argv, " "), tostring(code), out or ""), 0)
  end
  return code == 0, out
end

function M.netns_name(node) return "moonadm-" .. node end
function M.netns_path(node) return "/run/netns/" .. M.netns_name(node) end

-- Can this machine make namespaces at all? Say so clearly instead of falling back.
function M.check()
  local code, out = proc.run { argv = { "ip", "netns", "add", "moonadm-probe" } }
  if code ~= 0 then
    return nil, "this machine refuses network namespaces (`ip netns add` failed: " .. (out or "") ..
      "): the lab needs root and CAP_SYS_ADMIN; it does not fall back to anything that changes the manifests"
  end
  proc.run { argv = { "ip", "netns", "del", "moonadm-probe" } }
  return true
end

function M.bridge_up(subnet)
  subnet = subnet or M.SUBNET
  if not ip({ "link", "show", M.BRIDGE }, true) then
    ip { "link", "add", M.BRIDGE, "type", "bridge" }
  end
  ip({ "addr", "add", subnet .. ".1/24", "dev", M.BRIDGE }, true)
  ip { "link", "set", M.BRIDGE, "up" }
end

-- A namespace with lo up and eth0 = addr/24 on the bridge, default route via the host side.
function M.node_up(node, addr, subnet)
  subnet = subnet or M.SUBNET
  local ns = M.netns_name(node)
  local host_if = ("mv-%s"):format(node):sub(1, 15)
  if not ip({ "netns", "pids", ns }, true) then
    ip { "netns", "add", ns }
  end
  ip({ "link", "del", host_if }, true)
  ip { "link", "add", host_if, "type", "veth", "peer", "name", "eth0", "netns", ns }
  ip { "link", "set", host_if, "master", M.BRIDGE, "up" }
  ip { "-n", ns, "link", "set", "lo", "up" }
  ip { "-n", ns, "addr", "add", addr .. "/24", "dev", "eth0" }
  ip { "-n", ns, "link", "set", "eth0", "up" }
  ip { "-n", ns, "route", "add", "default", "via", subnet .. ".1" }
end

function M.node_down(node)
  ip({ "link", "del", ("mv-%s"):format(node):sub(1, 15) }, true)
  ip({ "netns", "del", M.netns_name(node) }, true)
end

function M.bridge_down()
  ip({ "link", "del", M.BRIDGE }, true)
end

-- Every moonadm lab namespace that exists, for cleaning up after a killed run.
function M.list_namespaces()
  local _, out = ip({ "netns", "list" }, true)
  local names = {}
  for name in (out or ""):gmatch("(moonadm%-[%w%-]+)") do names[#names + 1] = name end
  return names
end

return M
