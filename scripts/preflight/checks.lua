-- Preflight checks with kubeadm's names. Each check returns nothing when fine, or a list of
-- {level = "error"|"warning", msg}. Errors named in --ignore-preflight-errors (or "all") become
-- warnings, as in kubeadm; the check's name is printed so the user knows what to pass. A file
-- that the journal records as this engine's own (with the same content) passes under --resume.
local fs = require "moonadm.fs"
local core = require "moonadm.core"
local config = require "config"
local log = require "framework.log"
local net = require "moonadm.net"
local config_net = require "config.net"
local cri = require "cri.client"
local cri_socket = require "cri.socket"
local images = require "config.images"
local util = require "framework.util"
local which = require "node.which"
local runtime_lab = require "runtime.lab"

local M = {}

-- kubeadm names a path check after the path: /etc/kubernetes/manifests/x.yaml ->
-- FileAvailable--etc-kubernetes-manifests-x.yaml
local function path_name(prefix, path)
  return prefix .. path:gsub("/", "-")
end

-- Under --resume, is `owner` (a file whose presence explains the finding: the manifest of the
-- component holding a port, the bootstrap kubeconfig that made the kubelet write kubelet.conf) one
-- of this engine's own artifacts?
local function vouched(ctx, owner)
  return owner and ctx.flags.resume and ctx.journal and ctx.journal:owns(owner)
end

function M.file_available(path, owner)
  return {
    name = path_name("FileAvailable-", path),
    run = function(ctx)
      if not fs.exists(path) then return end
      if ctx.flags.resume and ctx.journal and ctx.journal:owns(path, fs.read(path)) then
        log.v(1, "[preflight] %s was written by an earlier run of this flow (journal): accepted under --resume", path)
        return
      end
      if vouched(ctx, owner) then
        log.v(1, "[preflight] %s comes from %s, written by an earlier run of this flow: accepted under --resume", path, owner)
        return
      end
      return { { level = "error", msg = ("%s already exists"):format(path) } }
    end,
  }
end

function M.dir_available(path, owner)
  return {
    name = path_name("DirAvailable-", path),
    run = function(ctx)
      local entries = fs.list(path)
      if not entries or #entries == 0 then return end
      if vouched(ctx, owner) then return end
      if ctx.flags.resume and ctx.journal then
        local all_ours = true
        for _, e in ipairs(entries) do
          local p = path .. "/" .. e
          local st = fs.stat(p)
          if not (st and st.type == "file" and ctx.journal:owns(p, fs.read(p))) then all_ours = false end
        end
        if all_ours or ctx.journal:owns(path) then return end
      end
      return { { level = "error", msg = ("%s is not empty"):format(path) } }
    end,
  }
end

M.is_privileged_user = {
  name = "IsPrivilegedUser",
  run = function(ctx)
    -- Under --root the node is a directory the user owns; only a real node needs root.
    if ctx.root ~= "/" then return end
    if core.getuid() ~= 0 then return { { level = "error", msg = "user is not running as root" } } end
  end,
}

-- Node checks ------------------------------------------------------------------------------
-- Under a --root other than "/", the node is a directory on a machine that may run several (the lab)
-- or a developer's desktop: checks of the machine itself (binaries, swap, CPUs, memory) report
-- warnings instead of errors. Ports are checked in this process's network namespace, which is the
-- node's own in the lab, so they stay errors. See docs/manifests.md.
local function rooted(ctx) return ctx.root and ctx.root ~= "/" end

local function soften(ctx, level)
  if level == "error" and rooted(ctx) then return "warning" end
  return level
end

local function sh_read(cmd)
  local p = io.popen(cmd .. " 2>/dev/null")
  if not p then return nil end
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

-- The process listening on a TCP port in this network namespace (the node's own in the lab), as
-- `ss` names it: its command name and PID, or nil when nothing tells (no ss, no listener seen).
function M.port_listener(port)
  local out = sh_read(("ss -Hltnp 'sport = :%d'"):format(port))
  local name, pid = (out or ""):match('users:%(%("([^"]+)",pid=(%d+)')
  return name, tonumber(pid)
end

-- Whether a process's command name (its executable's file name cut at 15 bytes, as the kernel keeps
-- it) is `program`: the name itself, or the name followed by a tag (the lab runs `etcd:3.6.8-0`).
function M.is_program(comm, program)
  if comm == program:sub(1, 15) then return true end
  local head = comm:sub(1, #program + 1)
  return #comm >= math.min(15, #program + 1) and (program .. ":"):sub(1, #head) == head
end

-- Port-N: the port can be bound on the advertise address and on the wildcard address of its family
-- (kubeadm binds ":N", so a listener on any address counts). Under --resume a port held by the
-- node's own process passes: `owner` is the file an earlier run of this flow wrote that started it
-- (a static Pod's manifest, the kubelet's config.yaml), and `process` the command name its
-- listener must have (checked when ss can tell), so a port some other program took is still an error.
function M.port_open(port, ip, owner, process)
  return {
    name = ("Port-%d"):format(port),
    run = function(ctx)
      local wild = ip and ip:find(":", 1, true) and "::" or "0.0.0.0"
      for _, addr in ipairs { ip or wild, wild } do
        local free, err = net.port_free(addr, port)
        if free == false then
          local name, pid = M.port_listener(port)
          if ctx and vouched(ctx, owner) and fs.exists(owner) and (not name or not process or M.is_program(name, process)) then
            log.v(1, "[preflight] port %d is held by %s, started by an earlier run of this flow (%s): accepted under --resume",
              port, name and ("%s (pid %d)"):format(name, pid) or "this node's process", owner)
            return
          end
          local by = name and (" by %s (pid %d)"):format(name, pid) or ""
          return { { level = "error", msg = ("Port %d is in use%s"):format(port, by) } }
        end
        if free == nil and addr == wild then
          return { { level = "warning", msg = ("could not check port %d: %s"):format(port, err) } }
        end
      end
    end,
  }
end

-- FileExisting-<exe>: an executable in PATH (mandatory ones are errors, others warnings).
function M.in_path(exe, mandatory)
  return {
    name = "FileExisting-" .. exe,
    run = function(ctx)
      if which.find(exe) then return end
      return { { level = mandatory and soften(ctx, "error") or "warning", msg = ("%s not found in system path"):format(exe) } }
    end,
  }
end

M.swap = {
  name = "Swap",
  run = function()
    local f = io.open("/proc/swaps")
    if not f then return end
    local n = 0
    for _ in f:lines() do n = n + 1 end
    f:close()
    if n > 1 then
      return { { level = "warning", msg = "swap is supported for cgroup v2 only. The kubelet must be properly configured to use swap. Please refer to https://kubernetes.io/docs/concepts/architecture/nodes/#swap-memory, or disable swap on the node" } }
    end
  end,
}

M.MIN_CPUS, M.MIN_MEM_MB = 2, 1700

M.num_cpu = {
  name = "NumCPU",
  run = function(ctx)
    local n = core.ncpu()
    if n and n < M.MIN_CPUS then
      return { { level = soften(ctx, "error"), msg = ("the number of available CPUs %d is less than the required %d"):format(n, M.MIN_CPUS) } }
    end
  end,
}

M.mem = {
  name = "Mem",
  run = function(ctx)
    local f = io.open("/proc/meminfo")
    if not f then return end
    local kb
    for line in f:lines() do kb = kb or tonumber(line:match("^MemTotal:%s*(%d+)")) end
    f:close()
    local mb = kb and kb // 1024
    if mb and mb < M.MIN_MEM_MB then
      return { { level = soften(ctx, "error"), msg = ("the system RAM (%d MB) is less than the minimum %d MB"):format(mb, M.MIN_MEM_MB) } }
    end
  end,
}

-- Hostname: the node name is a valid DNS subdomain (error) and resolves (warning).
function M.hostname(node_name)
  return {
    name = "Hostname",
    run = function()
      if not config_net.is_dns_subdomain(node_name) then
        return { { level = "error", msg = ("invalid node name format %q"):format(node_name) } }
      end
      -- ahosts (getaddrinfo, any family) answers from /etc/hosts at once; `getent hosts` asks for IPv6
      -- first and waits on DNS when the name has only an IPv4 entry.
      local out = sh_read("getent ahosts " .. ("'" .. node_name:gsub("'", "") .. "'"))
      if not (out and out:match("%S")) then
        return { { level = "warning", msg = ("hostname %q could not be reached"):format(node_name) },
          { level = "warning", msg = ("hostname %q: lookup %s: no such host"):format(node_name, node_name) } }
      end
    end,
  }
end

local function parse_version(v)
  local ma, mi, pa = tostring(v):match("v?(%d+)%.(%d+)%.?(%d*)")
  if not ma then return nil end
  return { tonumber(ma), tonumber(mi), tonumber(pa) or 0 }
end
M.parse_version = parse_version

-- KubeletVersion: the kubelet in PATH is neither newer than the control plane nor older than the
-- oldest kubelet kubeadm supports (control plane minor - 3). version_of lets tests inject a version.
-- The installed kubelet's version ("v1.35.4"), from `kubelet --version`, or nil.
-- Asked once per PATH in a run: KubeletVersion and SystemVerification both want it, and each
-- `kubelet --version` starts the kubelet's Go runtime (40-70 ms here), so node_checks starts it
-- before the CRI checks run (M.prefetch_kubelet_version) and the answer is read when first wanted.
local kubelet_versions = {} -- PATH -> version | false | the running `kubelet --version`
function M.prefetch_kubelet_version()
  local path = os.getenv("PATH") or ""
  if kubelet_versions[path] == nil then kubelet_versions[path] = io.popen("kubelet --version 2>/dev/null") or false end
end
local function installed_kubelet_version()
  M.prefetch_kubelet_version()
  local path = os.getenv("PATH") or ""
  local v = kubelet_versions[path]
  if io.type(v) == "file" then
    local out = v:read("a")
    v:close()
    v = out and out:match("v%d+%.%d+%.%d+%S*") or false
    kubelet_versions[path] = v
  end
  return v or nil
end
M.installed_kubelet_version = installed_kubelet_version

function M.kubelet_version(cp_version, version_of)
  return {
    name = "KubeletVersion",
    run = function(ctx)
      local text = (version_of or installed_kubelet_version)()
      if not text then
        return { { level = soften(ctx, "error"), msg = "couldn't get kubelet version: cannot execute 'kubelet --version': executable file not found in $PATH" } }
      end
      local kv, cv = parse_version(text), parse_version(cp_version)
      if not kv or not cv then return { { level = "error", msg = ("couldn't parse kubelet version %q"):format(text) } } end
      local min = { cv[1], cv[2] - 3, 0 }
      if kv[1] < min[1] or (kv[1] == min[1] and kv[2] < min[2]) then
        return { { level = "error", msg = ("Kubelet version %q is lower than kubeadm can support. Please upgrade kubelet"):format(text) } }
      end
      if kv[1] > cv[1] or (kv[1] == cv[1] and kv[2] > cv[2]) then
        return { { level = "error", msg = ("the kubelet version is higher than the control plane version. This is not a supported version skew and may lead to a malfunctional cluster. Kubelet version: %q Control plane version: %q"):format(text, cp_version) } }
      end
    end,
  }
end

-- ---- the container runtime (kubeadm's CRI, ContainerRuntimeVersion, ImagePull) ----------------

-- A client of this node's CRI endpoint, or nil and the check's finding.
-- One client per run's context, so the CRI and ImagePull checks share what it asked (its info, the image list).
local clients = setmetatable({}, { __mode = "k" })
local function runtime_client(ctx)
  local ok, sock = pcall(cri_socket.socket, ctx)
  if not ok then return nil, { { level = "error", msg = sock } } end
  local c = ctx and clients[ctx]
  if c and c.endpoint == sock then return c end
  local err
  c, err = cri.new(sock)
  if not c then return nil, { { level = soften(ctx, "error"), msg = "could not connect to the container runtime: " .. err } } end
  if ctx then clients[ctx] = c end
  return c
end

-- CRI: the runtime answers and says RuntimeReady.
M.cri = {
  name = "CRI",
  run = function(ctx)
    local c, finding = runtime_client(ctx)
    if not c then return finding end
    local ok, err = c:running()
    if not ok then return { { level = soften(ctx, "error"), msg = err } } end
  end,
}

-- ContainerRuntimeVersion: the runtime implements the CRI's RuntimeConfig (the kubelet takes the
-- cgroup driver from it); kubeadm v1.35 warns when it does not, as its kubelet still falls back.
M.container_runtime_version = {
  name = "ContainerRuntimeVersion",
  run = function(ctx)
    local c, finding = runtime_client(ctx)
    if not c then return finding end
    local ok, err = c:runtime_config_implemented()
    if ok == nil then return { { level = soften(ctx, "error"), msg = err } } end
    if ok == false then
      return { { level = "warning", msg = "You must update your container runtime to a version that supports the CRI method " ..
        "RuntimeConfig. Falling back to using cgroupDriver from kubelet config will be removed in 1.36. For more " ..
        "information, see https://git.k8s.io/enhancements/keps/sig-node/4033-group-driver-detection-over-cri" } }
    end
  end,
}

-- ImagePull: every image the node's control plane needs is present, or pulled now (policy
-- IfNotPresent or Always; Never pulls nothing), one after another (kubeadm pulls in parallel when
-- imagePullSerial is false: moonadm always pulls one by one).
function M.image_pull(wanted, policy)
  return {
    name = "ImagePull",
    run = function(ctx)
      policy = policy or "IfNotPresent"
      if policy == "Never" then return end
      if policy ~= "IfNotPresent" and policy ~= "Always" then
        return { { level = "error", msg = ("unsupported pull policy %q"):format(policy) } }
      end
      local c, finding = runtime_client(ctx)
      if not c then return finding end
      local sandbox = c:sandbox_image()
      if sandbox and sandbox ~= wanted.pause then
        log.warn("detected that the sandbox image %q of the container runtime is inconsistent with that used by kubeadm. " ..
          "It is recommended to use %q as the CRI sandbox image.", sandbox, wanted.pause)
      end
      local out = {}
      for _, image in ipairs(wanted) do
        if policy == "IfNotPresent" and c:image_exists(image) then
          log.v(1, "image exists: %s", image)
        else
          log.v(1, "pulling: %s", image)
          local ok, err = c:pull(image)
          if not ok then out[#out + 1] = { level = soften(ctx, "error"), msg = ("failed to pull image %s: %s"):format(image, err) } end
        end
      end
      return out
    end,
  }
end

-- kubeadm's RunPullImagesCheck (run by init; kubeadm also runs it on a control-plane join, moonadm does
-- not: docs/compatibility.md): on a node with a runtime (the systemd node runtime), the control plane's
-- images present or pulled, with kubeadm's words. Under --root the host's runtime is not this node's.
function M.pull_images(ctx, cluster, prefix, ignore)
  local rt = ctx.flags and ctx.flags["node-runtime"] or "systemd"
  if rt == "lab" then return M.run(ctx, { M.lab_images(images.list(cluster)) }, ignore) end
  if rt ~= "systemd" then return end
  if rooted(ctx) then
    log.v(1, "%s the node root is %s, not /: not pulling images into the host's container runtime", prefix or "[preflight]", ctx.root)
    return
  end
  prefix = prefix or "[preflight]"
  if ctx.dry_run then
    log.info("%s Would pull the required images (like 'kubeadm config images pull')", prefix)
    return
  end
  log.info("%s Pulling images required for setting up a Kubernetes cluster", prefix)
  log.info("%s This might take a minute or two, depending on the speed of your internet connection", prefix)
  log.info("%s You can also perform this action beforehand using 'kubeadm config images pull'", prefix)
  local list = images.list(cluster)
  list.pause = images.pause(cluster)
  local reg = config.node_document(ctx.cfg).nodeRegistration or {}
  M.run(ctx, { M.image_pull(list, reg.imagePullPolicy) }, ignore)
end

-- ImagePull on the lab's stand-in: each image it would run has its release's binary (what a pull
-- of an image nobody built is on the lab).
function M.lab_images(list)
  return {
    name = "ImagePull",
    run = function()
      local out = {}
      for _, image in ipairs(list) do
        local err = runtime_lab.image_missing(image)
        if err then out[#out + 1] = { level = "error", msg = ("failed to pull image %s: %s"):format(image, err) } end
      end
      return out
    end,
  }
end

-- Service-kubelet: the kubelet service is enabled (kubeadm checks it is not also active at init).
M.service_kubelet = {
  name = "Service-kubelet",
  run = function(ctx)
    if rooted(ctx) then return end
    if not which.find("systemctl") then
      return { { level = "warning", msg = "no supported init system detected, skipping checking for services" } }
    end
    local _, enabled = sh_read("systemctl is-enabled --quiet kubelet.service")
    if not enabled then
      return { { level = "warning", msg = "kubelet service is not enabled, please run 'systemctl enable kubelet.service'" } }
    end
  end,
}

-- ---- SystemVerification (kubeadm's system validators: kernel, OS, cgroups) -----------------

M.KERNEL_VERSIONS = { "^5%.4", "^5%.10", "^5%.15", "^[6-9]%.%d+%.%d+", "^[1-9]%d+%.%d+%.%d+" }
M.CGROUPS_V1 = { "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids" }
M.CGROUPS_V2 = { "cpu", "cpuset", "devices", "freezer", "memory", "pids" }
M.CGROUP_V1_ERROR = "cgroups v1 support is deprecated and will be removed in a future release. Please migrate to " ..
  "cgroups v2. To explicitly enable cgroups v1 support for kubelet v1.35 or newer, you must set the kubelet " ..
  "configuration option 'FailCgroupV1' to 'false'. You must also explicitly skip this validation. For more " ..
  "information, see https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1"

-- The host's cgroup layout: "v2" with its controllers, or "v1" with the enabled subsystems.
function M.cgroups(mounts, proc_cgroups, read)
  read = read or util.read_host
  mounts = mounts or read("/proc/mounts") or ""
  for line in mounts:gmatch("[^\n]+") do
    local dir, fstype = line:match("^%S+ (%S+) (%S+)")
    if dir == "/sys/fs/cgroup" and fstype == "cgroup2" then
      local list = {}
      for c in (read("/sys/fs/cgroup/cgroup.controllers") or ""):gmatch("%S+") do list[#list + 1] = c end
      -- v2 freezes through cgroup.freeze (Linux 5.2+) and controls devices with eBPF: kubeadm's
      -- validator counts both as present
      list[#list + 1] = "freezer"
      list[#list + 1] = "devices"
      return "v2", list
    end
  end
  local list = {}
  for line in (proc_cgroups or read("/proc/cgroups") or ""):gmatch("[^\n]+") do
    local name, enabled = line:match("^(%w+)%s+%d+%s+%d+%s+(%d)")
    if name and enabled == "1" then list[#list + 1] = name end
  end
  return "v1", list
end

-- cgroup v1 is an error with a kubelet of v1.35 or later (which refuses it unless failCgroupV1 is false,
-- and kubeadm wants this check skipped explicitly too), a warning before. The kubelet's version is
-- `kubelet --version`'s, else the control plane's (default_minor).
function M.system_verification(default_minor)
  return {
    name = "SystemVerification",
    run = function(ctx)
      local out = {}
      local kubelet_minor = tonumber((installed_kubelet_version() or ""):match("^v%d+%.(%d+)")) or default_minor
      local release = (util.read_host("/proc/sys/kernel/osrelease") or ""):match("%S+") or "" -- uname -r
      local supported
      for _, pat in ipairs(M.KERNEL_VERSIONS) do supported = supported or release:match(pat) ~= nil end
      if not supported then
        out[#out + 1] = { level = "error", msg = ("kernel release %s is unsupported. Supported LTS versions from the 5.x " ..
          "series are 5.4, 5.10 and 5.15. Any 6.x version is also supported. For cgroups v2 support, the recommended " ..
          "version is 5.10 or newer"):format(release) }
      end
      local version, have = M.cgroups()
      local set = {}
      for _, c in ipairs(have) do set[c] = true end
      local missing = {}
      for _, c in ipairs(version == "v2" and M.CGROUPS_V2 or M.CGROUPS_V1) do if not set[c] then missing[#missing + 1] = c end end
      if #missing > 0 then
        out[#out + 1] = { level = "error", msg = "missing required cgroups: " .. table.concat(missing, " ") }
      end
      if version == "v1" then
        out[#out + 1] = { level = (kubelet_minor or 35) >= 35 and "error" or "warning", msg = M.CGROUP_V1_ERROR }
      end
      for _, r in ipairs(out) do r.level = soften(ctx, r.level) end
      return out
    end,
  }
end

-- The executables a node runtime needs: kubeadm v1.35's addExecChecks (settled by the reference
-- kubeadm in the differential spec: losetup, mount, cp), plus crictl for the CRI.
M.RUNTIME_BINARIES = {
  systemd = { { "crictl", true }, { "losetup", true }, { "mount", true }, { "cp", true } },
  none = {},
  lab = {},
}

-- Checks every node runs: kubelet port, binaries, swap, hostname, kubelet skew (systemd runtime).
function M.node_checks(ctx, node_name, cp_version)
  local rt = ctx.flags and ctx.flags["node-runtime"] or "systemd"
  local checks = {}
  -- kubeadm's order (addCommonChecks): the runtime, swap, executables, system, hostname, kubelet
  if rt == "systemd" then
    M.prefetch_kubelet_version() -- runs beside the CRI checks
    checks[#checks + 1] = M.cri
    checks[#checks + 1] = M.container_runtime_version
  end
  for _, b in ipairs(M.RUNTIME_BINARIES[rt] or {}) do checks[#checks + 1] = M.in_path(b[1], b[2]) end
  if rt == "systemd" then
    local minor = tonumber(tostring(cp_version or ""):match("^v?%d+%.(%d+)"))
    checks[#checks + 1] = M.system_verification(minor)
  end
  checks[#checks + 1] = M.hostname(node_name)
  if rt == "systemd" then
    checks[#checks + 1] = M.kubelet_version(cp_version)
    checks[#checks + 1] = M.service_kubelet
  end
  -- the kubelet an earlier run started (kubelet-start wrote its config.yaml) holds it under --resume
  checks[#checks + 1] = M.port_open(10250, nil, "/var/lib/kubelet/config.yaml", "kubelet")
  checks[#checks + 1] = M.swap
  return checks
end

-- Checks of a control-plane node: CPUs, memory, its ports, manifests absent, etcd data dir empty.
function M.control_plane_checks(ctx, ip, bind_port)
  local function manifest(c) return ("/etc/kubernetes/manifests/%s.yaml"):format(c) end
  local checks = { M.num_cpu, M.mem, M.port_open(bind_port, ip, manifest("kube-apiserver"), "kube-apiserver"),
    M.port_open(10259, ip, manifest("kube-scheduler"), "kube-scheduler"),
    M.port_open(10257, ip, manifest("kube-controller-manager"), "kube-controller-manager") }
  for _, c in ipairs { "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd" } do
    checks[#checks + 1] = M.file_available(("/etc/kubernetes/manifests/%s.yaml"):format(c))
  end
  local etcd = ctx.cfg.cluster and ctx.cfg.cluster.etcd
  if not (etcd and etcd["external"]) then
    checks[#checks + 1] = M.port_open(2379, ip, manifest("etcd"), "etcd")
    checks[#checks + 1] = M.port_open(2380, ip, manifest("etcd"), "etcd")
    checks[#checks + 1] = M.dir_available((etcd and etcd["local"] and etcd["local"].dataDir) or "/var/lib/etcd", manifest("etcd"))
  end
  return checks
end

-- Runs the checks; raises one error listing every failing check, kubeadm-style. `names`: the checks
-- to ignore, when the caller knows them (upgrade's come from its own configuration part).
function M.run(ctx, checks, names)
  local ignore = {}
  local doc = config.node_document(ctx.cfg)
  local from_cfg = names or ctx.cfg and ctx.cfg.reset and ctx.cfg.reset.ignorePreflightErrors
    or (doc.nodeRegistration or {}).ignorePreflightErrors
  for _, n in ipairs(from_cfg or ctx.flags["ignore-preflight-errors"] or {}) do
    ignore[n:lower()] = true
  end
  local errs = {}
  for _, c in ipairs(checks) do
    for _, r in ipairs(c.run(ctx) or {}) do
      if r.level == "error" and not (ignore.all or ignore[c.name:lower()]) then
        errs[#errs + 1] = ("\t[ERROR %s]: %s"):format(c.name, r.msg)
      else
        log.line("warning", ("\t[WARNING %s]: %s"):format(c.name, r.msg)) -- kubeadm's own format
      end
    end
  end
  if #errs > 0 then
    local hint = ctx.journal and not ctx.flags.resume and next(ctx.journal.data.phases) and
      "\nThis node has a moonadm journal from an earlier run: to continue it, run the same command with --resume." or ""
    error(("[preflight] Some fatal errors occurred:\n%s\n[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`%s")
      :format(table.concat(errs, "\n"), hint), 0)
  end
end

return M
