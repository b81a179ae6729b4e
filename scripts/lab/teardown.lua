-- Taking a lab apart (`lab down`, and `lab up` before it starts over): every process lab.json
-- records stopped and checked gone, whatever is left in the lab's namespaces killed, the namespaces,
-- bridge and a real node's cgroups removed; the last lab to go also removes the mount points the
-- labs made on the host and puts back the kubelet's sysctls.
local core = require "moonadm.core"
local lab_node = require "lab.node"
local net = require "lab.net"
local node_start = require "lab.node_start"
local proc = require "moonadm.proc"
local state = require "lab.state"
local sysctls = require "lab.sysctls"

local M = {}

-- Every process st records, TERM then (after 30 s) KILL, each waited for; a real node's init is
-- killed first.
local function stop_processes(st)
  local pids = {}
  for _, n in ipairs(st.nodes or {}) do
    if n.kubelet_pid then pids[#pids + 1] = n.kubelet_pid end
    -- a real node's init first: its death ends every process of the node's PID namespace (only if
    -- that PID is still this node's init: after a reboot lab.json's PIDs belong to others)
    if n.init_pid and node_start.is_node_init(n.init_pid, n.root) then proc.signal(n.init_pid, "KILL") end
    if n.node_pid and node_start.is_node_init(n.node_pid, n.root) then pids[#pids + 1] = n.node_pid end
  end
  if st.lb and st.lb.pid then pids[#pids + 1] = st.lb.pid end
  for _, m in ipairs(st.etcd or {}) do if m.etcd_pid then pids[#pids + 1] = m.etcd_pid end end
  for _, pid in ipairs(pids) do proc.signal(pid, "TERM") end
  local deadline = core.monotonic() + 30
  for _, pid in ipairs(pids) do
    while proc.alive(pid) and core.monotonic() < deadline do
      proc.wait(pid, true)
      core.sleep(0.05)
    end
    if proc.alive(pid) then proc.signal(pid, "KILL") end
  end
end

-- Stops everything a lab started, checked gone; removes its namespaces and bridge.
-- st: the lab's state, or nil to read it from dir (a lab without one: by its name).
function M.run(dir, st, name)
  st = st or state.load(dir) or { nodes = {}, name = name }
  stop_processes(st)
  -- Anything still inside a lab namespace (a stand-in killed with -9 leaves orphans) goes too.
  local lab = st.name
  for _, node in ipairs(net.list_nodes(lab)) do
    local _, out = proc.run { argv = { "ip", "netns", "pids", net.netns_name(node, lab) } }
    for pid in (out or ""):gmatch("%d+") do proc.signal(tonumber(pid), "KILL") end
  end
  for _, node in ipairs(net.list_nodes(lab)) do net.node_down(node, lab) end
  net.bridge_down(lab)
  -- a real node's cgroups, once its processes are gone (the kernel ends them just after their init)
  if st.kubelet == "real" then
    for _, n in ipairs(st.nodes or {}) do
      for _ = 1, 50 do
        lab_node.remove_cgroups(node_start.cgroup_name(st, n))
        if not lab_node.cgroups_left(node_start.cgroup_name(st, n)) then break end
        core.sleep(0.1)
      end
    end
  end
  -- The empty mount points this lab created on the host go, unless another lab still runs: removing
  -- a directory that is a mount point in another namespace would detach that lab's mounts.
  local _, others = proc.run { argv = { "ip", "netns", "list" } }
  if not (others or ""):match("%S") then
    for _, d in ipairs(st.created_dirs or {}) do os.remove(d) end -- only if empty
    sysctls.restore() -- no lab left: no kubelet of ours needs them
  end
  state.remove(dir)
end

return M
