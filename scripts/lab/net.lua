-- The lab's network: one Linux bridge on the host and, per lab node, a network namespace with
-- its own loopback and an address on that bridge (a veth pair). These addresses exist only on
-- the lab's own bridge and namespaces. Everything here shells out to iproute2's `ip`.
local proc = require "moonadm.proc"

local M = {}

M.NAME = "moonadm"    -- a lab's name prefixes its namespaces and names its bridge: labs can coexist
M.SUBNET = "10.250.0" -- /24; .1 is the host side, .2 the load balancer, .11.. the nodes

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
function M.check()
  local code, out = proc.run { argv = { "ip", "netns", "add", "moonadm-probe" } }
  if code ~= 0 then
    return nil, "this machine refuses network namespaces (`ip netns add` failed: " .. (out or "") ..
      "): the lab needs root and CAP_SYS_ADMIN; it does not fall back to anything that changes the manifests"
  end
  proc.run { argv = { "ip", "netns", "del", "moonadm-probe" } }
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

return M
