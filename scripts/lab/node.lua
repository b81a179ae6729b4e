-- A real-kubelet lab node's init: `moonadm lab node --root DIR --node-name N --bin-dir DIR --unit FILE
-- --images TAR --cgroup NAME`, started by `lab up --kubelet real` as PID 1 of the node's own PID and
-- UTS namespaces, inside its network namespace and a mount namespace where /run is a private tmpfs
-- and the node's directories sit at their canonical paths (lab/node_start.lua). It does for the node
-- what systemd does on a real one, and no more:
--   containerd.service: containerd with this node's config (restarted when it exits);
--   kubelet.service:    stopped until asked; started, stopped and restarted by `systemctl` (the lab's
--                       lab/systemctl.lua on the node's PATH), its command line built from kubeadm's
--                       drop-in (lab/unit.lua), restarted 10 s after it exits (the kubelet package's
--                       RestartSec);
-- and, once containerd answers, imports the lab's images (nothing can be pulled here). As PID 1 it
-- reaps every orphan (the shims re-parent to it); when it dies the kernel ends every process of the
-- node, which is how `lab down` stops a node.
-- The node's installed kubelet package is the file /var/lib/moonadm-lab/kubelet.release (M.RELEASE):
-- one line, a release whose kubelet the lab built (.lab/bin/<release>/kubelet, `LAB_RELEASES=<release>
-- make lab-bins-node`); `lab up` writes the lab's release there. Each start of the kubelet service reads
-- it, so what a user does on a real node after `upgrade apply|node`, `apt install kubelet=1.36.3-*` and
-- `systemctl restart kubelet`, is here:
--   moonadm lab exec w1 -- sh -c 'echo v1.36.3 > /var/lib/moonadm-lab/kubelet.release'
--   moonadm lab exec w1 -- systemctl restart kubelet
-- (`kubelet --version` on the node reads it too: the lab's `kubelet` wrapper, lab/node_start.lua).
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local proc = require "moonadm.proc"
local cjson = require "cjson"
local releases = require "config.releases"
local unit = require "lab.unit"
local util = require "framework.util"

local M = {}

M.CONTROL = "/run/moonadm-lab"      -- kubelet.want (systemctl's requests) and kubelet.state (answers)
M.SOCKET = "/run/containerd/containerd.sock"
M.RELEASE = "/var/lib/moonadm-lab/kubelet.release" -- the node's installed kubelet (above)
-- containerd's sandbox image: the pause tag of the installed kubelet's minor as kubeadm lists it (kubeadm
-- v1.35's 3.10.1 when no release is recorded); containerd 2.4's own default is 3.10.2
function M.pause(release)
  return "registry.k8s.io/pause:" .. (release and releases.must(release).pause or "3.10.1")
end
local PATH <const> = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
local RESTART_SEC <const> = { containerd = 5, kubelet = 10 }
local STOP_GRACE <const> = 10

local function log(fmt, ...)
  io.stdout:write(os.date("!%Y-%m-%dT%H:%M:%SZ "), core.redact(fmt:format(...)), "\n")
  io.stdout:flush()
end

-- containerd's config for a lab node (each setting is one the lab cannot run without; see
-- README.md, "The lab"): the CRI pins kubeadm's pause tag and never pulls it, the OOM score is left alone
-- (root here lacks CAP_SYS_RESOURCE), cgroupfs (no systemd), Debian's CNI plugins, pod netns
-- files under the node's private state dir.
function M.containerd_config(release)
  return ([[
version = 3
root = '/var/lib/containerd'
state = '/run/containerd'

[grpc]
  address = '%s'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '%s'
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      disable_pause_image_pull = true
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '/etc/cni/net.d'
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
]]):format(M.SOCKET, M.pause(release))
end

-- The cgroup of this node in every hierarchy of the host (cgroup v1 here, one dir per controller,
-- and the v2 "unified" one): the kubelet's cgroupRoot, so kubelets side by side never touch each
-- other's pods. cpuset children start with no CPUs: they get their parent's.
function M.make_cgroups(name)
  if M.unified() then
    os.execute(("mkdir -p '/sys/fs/cgroup/%s'"):format(name))
    return
  end
  for _, h in ipairs(fs.list("/sys/fs/cgroup") or {}) do
    local base = "/sys/fs/cgroup/" .. h
    if fs.exists(base .. "/cgroup.procs") then
      local d = base .. "/" .. name
      os.execute(("mkdir -p '%s'"):format(d))
      if h == "cpuset" then
        for _, f in ipairs { "cpuset.cpus", "cpuset.mems" } do
          local v = util.read_host(base .. "/" .. f)
          local out = v and io.open(d .. "/" .. f, "w")
          if out then out:write(v); out:close() end
        end
      end
    end
  end
end

-- Removes a node's cgroups, children first (each must be empty of processes: the node is gone).
function M.remove_cgroups(name)
  for _, d in ipairs(M.cgroup_dirs(name)) do
    if fs.exists(d) then
      os.execute(("find '%s' -depth -type d -exec rmdir {} + 2>/dev/null"):format(d))
    end
  end
end

-- Is /sys/fs/cgroup the unified (v2) hierarchy itself?
function M.unified() return fs.exists("/sys/fs/cgroup/cgroup.controllers") end

-- The node's cgroup directories: one per v1 hierarchy, or the one of the unified hierarchy.
function M.cgroup_dirs(name)
  if M.unified() then return { "/sys/fs/cgroup/" .. name } end
  local out = {}
  for _, h in ipairs(fs.list("/sys/fs/cgroup") or {}) do
    if fs.exists("/sys/fs/cgroup/" .. h .. "/cgroup.procs") then out[#out + 1] = "/sys/fs/cgroup/" .. h .. "/" .. name end
  end
  return out
end

-- Is any of them still there?
function M.cgroups_left(name)
  for _, d in ipairs(M.cgroup_dirs(name)) do if fs.exists(d) then return true end end
  return false
end

local Node = {}
Node.__index = Node

function M.new(o)
  return setmetatable({ o = o, services = {}, gen = 0, imported = false, state_text = nil }, Node)
end

function Node:env()
  local env = { "PATH=" .. self.o.bin_dir .. ":" .. PATH, "HOME=/root" }
  return env
end

-- The release in the node's M.RELEASE file → "v1.36.3" | nil (no file: the lab's default kubelet) |
-- nil, err (a file that names no release).
function Node:release()
  local text = util.read_host(self.o.root .. M.RELEASE)
  if not text then return nil end
  local r = text:match("^%s*(v%d+%.%d+%.%d+)%s*$")
  if not r then return nil, ("%s: %q is not a release (one line such as v1.36.3)"):format(M.RELEASE, text) end
  return r
end

function Node:kubelet_argv()
  local text = util.read_host(self.o.unit)
  if not text then return nil, self.o.unit .. ": cannot read the kubelet unit drop-in" end
  local u = unit.parse(text)
  -- the unit's EnvironmentFiles are the node's (kubeadm-flags.env, /etc/default/kubelet), under its root
  local argv, err = unit.argv(u, function(p) return util.read_host(self.o.root .. p) end)
  if not argv then return nil, self.o.unit .. ": " .. err end
  local release, rerr = self:release()
  if rerr then return nil, rerr end
  -- The unit names the kubelet package's path; the lab's kubelet (never a host's) is in the lab's bin
  -- dir: the installed release's folder, or its top (the default release) when none is recorded.
  local dir = self.o.bin_dir .. (release and ("/" .. release) or "")
  argv[1] = dir .. "/" .. argv[1]:match("[^/]+$")
  local f = io.open(argv[1], "r") -- through the bin dir's links into the cache (fs.exists sees a dangling one)
  if f then f:close() else
    return nil, ("%s is missing (%s names %s): build it with `LAB_RELEASES=%s make lab-bins-node`"):format(
      argv[1], M.RELEASE, tostring(release), release or releases.DEFAULT)
  end
  return argv
end

function Node:start(name)
  local s = self.services[name]
  local argv, err
  if name == "kubelet" then argv, err = self:kubelet_argv() else argv = s.argv end
  if not argv then
    log("%s: cannot start: %s", name, err)
    s.restart_at = core.monotonic() + RESTART_SEC[name]
    return
  end
  local pid, serr = proc.spawn { argv = argv, env = self:env(), log = s.log }
  if not pid then
    log("%s: cannot start: %s", name, serr)
    s.restart_at = core.monotonic() + RESTART_SEC[name]
    return
  end
  s.pid = pid
  log("%s: started (pid %d): %s", name, pid, table.concat(argv, " "))
end

function Node:stop(name)
  local s = self.services[name]
  local pid = s.pid
  if not pid then return end
  proc.signal(pid, "TERM")
  local deadline = core.monotonic() + STOP_GRACE
  -- reap() clears s.pid once it has reaped this process
  while s.pid == pid and proc.alive(pid) do
    if core.monotonic() > deadline then proc.signal(pid, "KILL") end
    self:reap()
    core.sleep(0.01)
  end
  self:reap()
  log("%s: stopped", name)
  s.pid = nil
end

-- Reaps every exited child; a service's own exit schedules its restart.
function Node:reap()
  while true do
    local pid, code = proc.wait_any(true)
    if not pid then return end
    for name, s in pairs(self.services) do
      if s.pid == pid then
        s.pid = nil
        s.exits = (s.exits or 0) + 1
        if s.want then
          s.restart_at = core.monotonic() + RESTART_SEC[name]
          log("%s: exited with %d; restarting in %ds (see %s)", name, code, RESTART_SEC[name], s.log)
        end
      end
    end
  end
end

-- Applies systemctl's latest request for the kubelet: "<generation> start|stop|restart".
function Node:control()
  local text = util.read_host(M.CONTROL .. "/kubelet.want")
  local gen, verb = (text or ""):match("^(%d+) (%a+)")
  gen = tonumber(gen)
  if not gen or gen <= self.gen then return end
  local k = self.services.kubelet
  if verb == "stop" then
    k.want = false
    self:stop("kubelet")
  elseif verb == "start" then
    k.want = true
    if not k.pid then self:start("kubelet") end
  elseif verb == "restart" then
    k.want = true
    self:stop("kubelet")
    self:start("kubelet")
  end
  self.gen = gen
end

function Node:write_state()
  local k = self.services.kubelet
  local text = ("%d %s %d\n"):format(self.gen, k.pid and "active" or (k.want and "activating" or "inactive"), k.pid or 0)
  if text ~= self.state_text then
    fs.write(M.CONTROL .. "/kubelet.state", text, "0644")
    self.state_text = text
  end
end

-- Once containerd answers: import the lab's images into the CRI's namespace; then the node is ready.
function Node:import_images()
  local code, out = proc.run { argv = { self.o.bin_dir .. "/ctr", "--address", M.SOCKET, "version" }, env = self:env() }
  if code ~= 0 then return false, out end
  local t0 = core.monotonic()
  code, out = proc.run { argv = { self.o.bin_dir .. "/ctr", "--address", M.SOCKET, "-n", "k8s.io", "images", "import",
    "--platform", "linux/amd64", self.o.images }, env = self:env() }
  if code ~= 0 then return nil, ("importing %s failed: %s"):format(self.o.images, out) end
  log("images: imported %s in %.1fs", self.o.images, core.monotonic() - t0)
  return true
end

function Node:report(status)
  status.pid_ns_init = true
  fs.write(self.o.root .. "/lab-node.json", cjson.encode(status), "0644")
end

function Node:run()
  local o = self.o
  log("node %s: init of the real-kubelet lab node (root %s)", o.node_name, o.root)
  proc.run { argv = { "hostname", o.node_name } }
  fs.mkdir(M.CONTROL, "0755")
  fs.mkdir("/run/containerd", "0711")
  M.make_cgroups(o.cgroup)
  local cfg = o.root .. "/etc/containerd/config.toml"
  fs.mkdir(o.root .. "/etc/containerd", "0755")
  local release, rerr = self:release()
  if rerr then log("containerd: %s: its sandbox image is kubeadm v1.35's", rerr) end
  fs.write(cfg, M.containerd_config(release), "0644")
  self.services.containerd = { want = true, argv = { o.bin_dir .. "/containerd", "--config", cfg },
    log = "/var/log/containerd.log" }
  self.services.kubelet = { want = false, log = "/var/log/kubelet.log" }
  self:start("containerd")
  self:write_state()
  local t0 = core.monotonic()
  while true do
    self:reap()
    self:control()
    for name, s in pairs(self.services) do
      if s.want and not s.pid and core.monotonic() >= (s.restart_at or 0) then self:start(name) end
    end
    if not self.imported then
      local ok, err = self:import_images()
      if ok then
        self.imported = true
        self:report { ready = true, containerd = M.SOCKET }
      elseif (ok == nil or core.monotonic() - t0 > 60 or (self.services.containerd.exits or 0) >= 2) and not self.reported then
        -- said once; a failed import is not retried, a silent containerd still is (it may come up)
        local exits = self.services.containerd.exits or 0
        self:report { ready = false, error = (ok == nil and err) or (exits > 0 and
          ("containerd exited %d times without answering: see %s/var/log/containerd.log"):format(exits, o.root)) or
          ("containerd does not answer on %s after 60s: see %s/var/log/containerd.log"):format(M.SOCKET, o.root) }
        self.reported = true
        self.imported = ok == nil
      end
    end
    self:write_state()
    -- systemctl's request waits for this loop: a long tick would be paid by every kubelet start,
    -- stop and restart of either tool's init and join (a tick is a waitpid and one small read)
    core.sleep(0.02)
  end
end

return M
