-- A lab node from the host's side: its root's directories and the binds that put them at their
-- canonical paths, and its start in its network namespace — the kubelet stand-in (lab/kubelet.lua),
-- or a real-kubelet node's init (lab/node.lua) as PID 1 of its own PID and UTS namespaces.
local core = require "moonadm.core"
local lab_node = require "lab.node"
local net = require "lab.net"
local paths = require "lab.paths"
local proc = require "moonadm.proc"
local releases = require "config.releases"
local state = require "lab.state"

local M = {}

-- The binds that make a node's root appear at the canonical paths for a command run "on" it.
-- /var/lib/moonadm is the node's journal: each node has its own, as each machine would;
-- /var/lib/moonadm-lab holds the node's kubelet stand-in status (what reset waits on).
local NODE_DIRS <const> = { "/etc/kubernetes", "/var/lib/kubelet", "/var/lib/etcd", "/var/lib/moonadm",
  "/var/lib/moonadm-lab" }
-- Each with the mode kubeadm gives it when it makes it (kubeconfig dir 0755, kubelet and etcd data 0700),
-- moonadm's journal dir 0700, the dirs above them 0755.
local NODE_DIR_MODES <const> = { ["/etc/kubernetes"] = "0755", ["/var/lib/kubelet"] = "0700",
  ["/var/lib/etcd"] = "0700", ["/var/lib/moonadm"] = "0700", ["/var/lib/moonadm-lab"] = "0755" }

-- A real-kubelet node also has its own containerd state, CNI config and state, logs, and a private
-- /run (containerd's shim sockets are fixed under /run/containerd; runc state and pod netns live there).
local REAL_NODE_DIRS <const> = { "/var/log", "/var/lib/containerd", "/var/lib/cni", "/etc/cni/net.d",
  "/etc/haproxy", "/etc/keepalived" } -- the last two: a --control-plane-endpoint vip node's own files

local function node_dir(root, d, mode)
  local parent = d:match("^(.*)/[^/]*$")
  if parent and parent ~= "" then state.ensure_dir(root .. parent, "0755") end
  state.mkdir(root .. d, mode)
end

-- The binds of a node's root for a stand-in node and every command run on a node (lab/node_exec.lua).
function M.mounts(root)
  local m = {}
  for _, d in ipairs(NODE_DIRS) do
    node_dir(root, d, NODE_DIR_MODES[d])
    m[#m + 1] = { type = "bind", src = root .. d, dst = d }
  end
  -- The node knows its own name and its peers', as a real site's DNS or /etc/hosts would say.
  if io.open(root .. "/etc/hosts", "r") then
    m[#m + 1] = { type = "bind", src = root .. "/etc/hosts", dst = "/etc/hosts", ro = true, file = true }
  end
  return m
end

local function real_mounts(root)
  local m = { { type = "tmpfs", dst = "/run" } }
  for _, mm in ipairs(M.mounts(root)) do m[#m + 1] = mm end
  for _, d in ipairs(REAL_NODE_DIRS) do
    node_dir(root, d, "0755")
    m[#m + 1] = { type = "bind", src = root .. d, dst = d }
  end
  return m
end

-- The host paths the nodes' binds need that this machine lacks: made as empty mount points, they
-- are the lab's to remove (lab/teardown.lua).
function M.missing_host_dirs(real)
  local out = {}
  for _, d in ipairs(NODE_DIRS) do
    if not io.open(d, "r") then out[#out + 1] = d end
  end
  for _, d in ipairs(real and REAL_NODE_DIRS or {}) do
    if not io.open(d, "r") then out[#out + 1] = d end
  end
  return out
end

-- A real-kubelet lab's own tools in its sbin/, first on a node's PATH (lab/node_exec.lua): the
-- node's systemctl (lab/systemctl.lua) and its `kubelet`, the installed release's (lab/node.lua), as
-- `kubelet --version` on a node says.
function M.write_tools(st)
  state.write(st.dir .. "/sbin/systemctl", ("#!/bin/sh\nexec '%s' lab systemctl \"$@\"\n"):format(core.exe()), "0755", "0755")
  state.write(st.dir .. "/sbin/kubelet", ("#!/bin/sh\nr=$(cat %s 2>/dev/null)\nexec '%s'/${r:+$r/}kubelet \"$@\"\n")
    :format(lab_node.RELEASE, st.bin_dir), "0755", "0755")
end

-- The cgroup (in every hierarchy) a real node's kubelet uses as its cgroupRoot.
function M.cgroup_name(st, node) return ("moonadm-%s-%s"):format(st.name, node.name) end

-- Is pid the init of the real node whose root is root (its command line says so)?
function M.is_node_init(pid, root)
  local f = io.open(("/proc/%d/cmdline"):format(math.tointeger(pid) or -1), "rb")
  if not f then return false end
  local cmd = f:read("a"):gsub("%z", " ")
  f:close()
  return cmd:find(" lab node --root " .. root .. " ", 1, true) ~= nil
end

-- Starts a real-kubelet node: its init (lab/node.lua) as PID 1 of new PID and UTS namespaces, in its
-- network namespace, with its private /run and its directories bound at their canonical paths.
-- Records the init's host PID (the child of `unshare --fork`) for exec_on and teardown.
local function start_real(st, n, images)
  local mounts = real_mounts(n.root)
  -- the node's installed kubelet package (lab/node.lua): the lab's release
  state.write(n.root .. lab_node.RELEASE, (st.kubernetes_version or releases.DEFAULT) .. "\n", "0644", "0755")
  local argv = { "unshare", "--pid", "--uts", "--fork", "--mount-proc", core.exe(), "lab", "node", "--root", n.root,
    "--node-name", n.name, "--bin-dir", st.bin_dir, "--unit", paths.top_dir() .. "/packaging/10-kubeadm.conf",
    "--images", images, "--cgroup", M.cgroup_name(st, n) }
  local pid, err = proc.spawn { argv = argv, netns = net.netns_path(n.name, st.name), mounts = mounts,
    log = n.root .. "/var/log/moonadm-node.log", new_session = true }
  if not pid then error(("%s: starting its init: %s"):format(n.name, err), 0) end
  n.node_pid = pid
  local deadline = core.monotonic() + 10
  while not n.init_pid do
    local f = io.open(("/proc/%d/task/%d/children"):format(pid, pid), "r")
    local child = f and tonumber((f:read("a") or ""):match("%d+"))
    if f then f:close() end
    if child then n.init_pid = child
    elseif not proc.alive(pid) or core.monotonic() > deadline then
      error(("%s: its init did not start: see %s/var/log/moonadm-node.log"):format(n.name, n.root), 0)
    else core.sleep(0.02) end
  end
end

-- Starts a stand-in node: `lab kubelet` in its network namespace, its log in the node's var/log.
local function start_standin(st, n)
  local pid, err = proc.spawn { argv = { core.exe(), "lab", "kubelet", "--root", n.root, "--node-ip", n.ip,
    "--bin-dir", st.bin_dir, "--node-name", n.name, "--kubelet-version", st.kubernetes_version or releases.DEFAULT },
    netns = net.netns_path(n.name, st.name),
    log = n.root .. "/var/log/moonadm-kubelet.log", new_session = true }
  if not pid then error(err, 0) end
  n.kubelet_pid = pid
end

-- Every node of st, one after the other: its namespace and address on the bridge, its root (its "/"),
-- its start; lab.json saved after each, so that `lab down` finds what did start.
function M.start_all(st, images)
  for _, n in ipairs(st.nodes) do
    net.node_up(n.name, n.ip, st.subnet, st.name)
    state.mkdir(n.root, "0755") -- a node's root is its "/"
    node_dir(n.root, "/var/log", "0755")
    node_dir(n.root, "/etc/kubernetes/manifests", "0700") -- kubeadm's mode for the static Pod dir
    if st.kubelet == "real" then start_real(st, n, images) else start_standin(st, n) end
    state.save(st.dir, st)
  end
end

return M
