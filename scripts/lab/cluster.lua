-- The lab's orchestration (`moonadm lab up|down|status|exec`, whose command line is commands/lab.lua):
-- each node a directory (its root) plus a network namespace with its own address on the lab's
-- bridge, its kubelet stand-in running static pods as host processes; `up` runs the stock init on
-- the first node and join on the others — the same flows a real node runs — and `down` stops
-- exactly what lab.json records. Files through moonadm.fs and lab.state, processes through moonadm.proc.
local cjson = require "cjson"
local core = require "moonadm.core"
local duration = require "config.duration"
local fs = require "moonadm.fs"
local kclient = require "kube.client"
local kubeconfig = require "kube.kubeconfig"
local log = require "framework.log"
local net = require "lab.net"
local proc = require "moonadm.proc"
local state = require "lab.state"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"
local pki = require "moonadm.pki"
local config_mod = require "config"
local ext = require "lab.external_etcd"
local cni = require "lab.cni"
local lab_node = require "lab.node"
local preflight = require "preflight.checks"
local releases = require "config.releases"

local M = {}
local join_config

function M.abs(p)
  if p:sub(1, 1) == "/" then return p end
  return (os.getenv("PWD") or ".") .. "/" .. p
end

local function top_dir()
  -- .lab lives next to the binary's checkout (bin/moonadm -> ..), else in the working directory
  local exe = core.exe()
  local checkout = exe:match("^(.*)/bin/moonadm$")
  return checkout or (os.getenv("PWD") or ".")
end

function M.default_dir(name)
  return top_dir() .. "/.lab/" .. ((name == nil or name == net.NAME) and "cluster" or name)
end
function M.default_bin() return os.getenv("MOONADM_LAB_BIN") or (top_dir() .. "/.lab/bin") end
function M.default_images() return os.getenv("MOONADM_LAB_IMAGES") or (top_dir() .. "/.lab/images.tar") end

local function need_root()
  if core.getuid() ~= 0 then error("the lab needs root (network namespaces, bind mounts)", 0) end
end

-- The binds that make a node's root appear at the canonical paths for a command run "on" it.
-- /var/lib/moonadm is the node's journal: each node has its own, as each machine would;
-- /var/lib/moonadm-lab holds the node's kubelet stand-in status (what reset waits on).
local NODE_DIRS <const> = { "/etc/kubernetes", "/var/lib/kubelet", "/var/lib/etcd", "/var/lib/moonadm",
  "/var/lib/moonadm-lab" }
-- Each with the mode kubeadm gives it when it makes it (kubeconfig dir 0755, kubelet and etcd data 0700),
-- moonadm's journal dir 0700, the dirs above them 0755.
local NODE_DIR_MODES <const> = { ["/etc/kubernetes"] = "0755", ["/var/lib/kubelet"] = "0700",
  ["/var/lib/etcd"] = "0700", ["/var/lib/moonadm"] = "0700", ["/var/lib/moonadm-lab"] = "0755" }

local function node_dir(root, d, mode)
  local parent = d:match("^(.*)/[^/]*$")
  if parent and parent ~= "" then state.ensure_dir(root .. parent, "0755") end
  state.mkdir(root .. d, mode)
end

local function node_mounts(root)
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

-- A real-kubelet node also has its own containerd state, CNI config and state, logs, and a private
-- /run (containerd's shim sockets are fixed under /run/containerd; runc state and pod netns live there).
local REAL_NODE_DIRS <const> = { "/var/log", "/var/lib/containerd", "/var/lib/cni", "/etc/cni/net.d",
  "/etc/haproxy", "/etc/keepalived" } -- the last two: a --control-plane-endpoint vip node's own files

-- --control-plane-endpoint vip: haproxy's port (the HA guide's) and the images lab/build-images.sh
-- makes from Debian's haproxy and keepalived (tagged with their upstream versions).
local VIP_PORT <const> = 8443
local function vip_images()
  local out = {}
  for _, pkg in ipairs { "haproxy", "keepalived" } do
    local code, v = proc.run { argv = { "dpkg-query", "-W", "-f=${Version}", pkg } }
    if code ~= 0 then error(("--control-plane-endpoint vip: Debian's %s is not installed: run `make deps`"):format(pkg), 0) end
    out[pkg] = ("moonadm.lab/%s:%s"):format(pkg, v:gsub("^%d+:", ""):gsub("%-.*$", ""))
  end
  return out
end

local function real_node_mounts(root)
  local m = { { type = "tmpfs", dst = "/run" } }
  for _, mm in ipairs(node_mounts(root)) do m[#m + 1] = mm end
  for _, d in ipairs(REAL_NODE_DIRS) do
    node_dir(root, d, "0755")
    m[#m + 1] = { type = "bind", src = root .. d, dst = d }
  end
  return m
end

-- The cgroup (in every hierarchy) a real node's kubelet uses as its cgroupRoot.
local function cgroup_name(st, node) return ("moonadm-%s-%s"):format(st.name, node.name) end

local function write_hosts(st)
  local lines = { "127.0.0.1	localhost", "::1	localhost ip6-localhost ip6-loopback" }
  for _, n in ipairs(st.nodes) do lines[#lines + 1] = n.ip .. "	" .. n.name end
  local text = table.concat(lines, "\n") .. "\n"
  for _, n in ipairs(st.nodes) do state.write(n.root .. "/etc/hosts", text, "0644", "0755") end
end

local function node_env(extra, runtime)
  local env, replaced = {}, { MOONADM_NODE_RUNTIME = true }
  for _, e in ipairs(extra or {}) do replaced[e:match("^([^=]+)=")] = true end
  for _, e in ipairs(core.environ()) do
    if not replaced[e:match("^([^=]+)=") or ""] then env[#env + 1] = e end
  end
  env[#env + 1] = "MOONADM_NODE_RUNTIME=" .. (runtime or "lab")
  for _, e in ipairs(extra or {}) do env[#env + 1] = e end
  return env
end

local function find_node(st, name)
  for _, n in ipairs(st.nodes or {}) do if n.name == name then return n end end
end

-- Runs argv "on" a node: its network namespace, its root's node dirs at their / paths.
-- On a real-kubelet node: inside the namespaces of its init (network, mount, UTS, PID), with the
-- lab's systemctl first on PATH and the systemd node runtime, as on a real node.
function M.exec_on(st, node, argv, opts)
  opts = opts or {}
  if argv[1] == "moonadm" then argv[1] = core.exe() end
  local bin = st.bin_dir
  local path_env = "PATH=" .. bin .. ":" .. (os.getenv("PATH") or "/usr/bin:/bin")
  local pid, err
  if st.kubelet == "real" then
    local full = { "nsenter", "-t", tostring(math.tointeger(node.init_pid)), "-n", "-m", "-u", "-p",
      "--wd=" .. (os.getenv("PWD") or "/"), "--" }
    for _, a in ipairs(argv) do full[#full + 1] = a end
    pid, err = proc.spawn { argv = full, log = opts.log, env = node_env({ "PATH=" .. st.dir .. "/sbin:" .. bin .. ":" ..
      (os.getenv("PATH") or "/usr/sbin:/usr/bin:/sbin:/bin") }, "systemd") }
  else
    pid, err = proc.spawn { argv = argv, netns = net.netns_path(node.name, st.name), mounts = node_mounts(node.root),
      env = node_env { path_env, "MOONADM_LAB_BIN=" .. bin }, cwd = os.getenv("PWD"), log = opts.log }
  end
  if not pid then error(err, 0) end
  local _, code = proc.wait(pid)
  return code
end

-- Polls fn() until it returns true, or fails after timeout seconds naming what is still missing
-- (fn's second value). Says what it waits for and its timeout when it starts, and, as done(), the
-- time it took when it ends, as kubeadm's waits do.
local function wait_for(what, timeout, fn, done)
  log.info("[lab] Waiting for %s. This can take up to %s", what, duration.format_seconds(timeout))
  local t0 = core.monotonic()
  local deadline = t0 + timeout
  local missing
  while true do
    local ok, v, why = pcall(fn)
    if not ok then error(v, 0) end
    if v then
      log.info("[lab] %s after %s", done or (what .. ": done"), duration.format_seconds(core.monotonic() - t0))
      return v
    end
    missing = why or missing
    if core.monotonic() >= deadline then break end
    core.sleep(0.25)
  end
  error(("timed out after %s waiting for %s%s"):format(duration.format_seconds(timeout), what,
    missing and (": " .. missing) or ""), 0)
end

-- What still keeps the lab from being up, or nil when it is: for every joined node, every static
-- Pod manifest in its etc/kubernetes/manifests must have its mirror Pod (<pod>-<node>, showing
-- the manifest's current hash as the stand-in computes it) in the API, and every Node must be Ready.
function M.not_up(c, st)
  local pods, perr = c:list({ apiVersion = "v1", kind = "Pod" }, { timeout = 5 })
  if not pods then return "listing the Pods: " .. tostring(perr) end
  local nodes, nerr = c:list({ apiVersion = "v1", kind = "Node" }, { timeout = 5 })
  if not nodes then return "listing the Nodes: " .. tostring(nerr) end
  local live, ready = {}, {}
  for _, p in ipairs(pods.items or {}) do live[(p.metadata.namespace or "") .. "/" .. p.metadata.name] = p end
  for _, n in ipairs(nodes.items or {}) do
    local r = "no Ready condition"
    for _, cond in ipairs((n.status or {}).conditions or {}) do
      if cond.type == "Ready" then r = cond.status == "True" or ("Ready=" .. tostring(cond.status)) end
    end
    ready[n.metadata.name] = r
  end
  local no_mirror, not_ready = {}, {}
  for _, n in ipairs(st.nodes) do
    if n.role ~= "spare" then
      local mdir = n.root .. "/etc/kubernetes/manifests"
      local files = fs.list(mdir) or {}
      table.sort(files)
      for _, f in ipairs(files) do
        if not f:match("^%.") and (f:match("%.ya?ml$") or f:match("%.json$")) then
          local fh = io.open(mdir .. "/" .. f, "r")
          local text = fh and fh:read("a")
          if fh then fh:close() end
          local docs = text and yaml.decode(text, f)
          local md = docs and type(docs[1]) == "table" and docs[1].metadata
          if md and md.name then
            local key = (md.namespace or "default") .. "/" .. md.name .. "-" .. n.name:lower()
            local p = live[key]
            local hash = ((p and p.metadata.annotations) or {})["kubernetes.io/config.mirror"]
            if not p then
              no_mirror[#no_mirror + 1] = key
            elseif st.kubelet == "real" then
              -- the real kubelet's hash is its own: the mirror Pod must run, as the kubelet reports it
              local phase = (p.status or {}).phase
              if phase ~= "Running" then no_mirror[#no_mirror + 1] = ("%s (%s)"):format(key, tostring(phase)) end
            elseif hash ~= encoding.sha256_hex(text):sub(1, 32) then
              no_mirror[#no_mirror + 1] = key .. " (of an older manifest)"
            end
          end
        end
      end
      local r = ready[n.name:lower()]
      if r ~= true then
        -- a real kubelet's own words are in its log
        local where = st.kubelet == "real" and ("; kubelet log " .. n.root .. "/var/log/kubelet.log") or ""
        not_ready[#not_ready + 1] = ("%s (%s%s)"):format(n.name, r or "not registered", where)
      end
    end
  end
  -- with the real kubelet the addons run too: every Deployment of kube-system available and every
  -- DaemonSet ready on every node it wants
  local not_running = {}
  if st.kubelet == "real" then
    for _, kind in ipairs { "Deployment", "DaemonSet" } do
      local list, lerr = c:list({ apiVersion = "apps/v1", kind = kind, namespace = "kube-system" }, { timeout = 5 })
      if not list then return ("listing the %ss: %s"):format(kind, tostring(lerr)) end
      for _, o in ipairs(list.items or {}) do
        local want, have
        if kind == "Deployment" then
          want, have = (o.spec or {}).replicas or 1, (o.status or {}).availableReplicas or 0
        else
          want, have = (o.status or {}).desiredNumberScheduled or 0, (o.status or {}).numberReady or 0
          if want == 0 then want = 1 end -- not scheduled yet
        end
        if have < want then
          not_running[#not_running + 1] = ("%s %s (%d/%d ready)"):format(kind, o.metadata.name, math.tointeger(have) or 0,
            math.tointeger(want) or 0)
        end
      end
    end
  end
  local parts = {}
  if #no_mirror > 0 then parts[#parts + 1] = "no mirror Pod for " .. table.concat(no_mirror, ", ") end
  if #not_running > 0 then parts[#parts + 1] = "addons not ready: " .. table.concat(not_running, ", ") end
  if #not_ready > 0 then parts[#parts + 1] = "Nodes not Ready: " .. table.concat(not_ready, ", ") end
  if #parts > 0 then return table.concat(parts, "; ") end
end

local function kubectl(st, kubeconfig, args)
  local argv = { st.bin_dir .. "/kubectl", "--kubeconfig", kubeconfig }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  return proc.run { argv = argv }
end

-- Is pid the init of the real node whose root is root (its command line says so)?
local function is_node_init(pid, root)
  local f = io.open(("/proc/%d/cmdline"):format(math.tointeger(pid) or -1), "rb")
  if not f then return false end
  local cmd = f:read("a"):gsub("%z", " ")
  f:close()
  return cmd:find(" lab node --root " .. root .. " ", 1, true) ~= nil
end

-- The host-wide sysctls a real kubelet sets when protectKernelDefaults is false (kubelet's
-- setupKernelTunables): not per network namespace, so a real-kubelet lab records them before its
-- first kubelet runs and the last lab to go down puts them back.
M.KUBELET_SYSCTLS = { "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes" }
M.SYSCTL_RECORD = "/run/moonadm-lab-sysctls.json"

local function record_sysctls()
  if io.open(M.SYSCTL_RECORD, "r") then return end -- an earlier lab's record holds the originals
  local rec = {}
  for _, k in ipairs(M.KUBELET_SYSCTLS) do
    local f = io.open("/proc/sys/" .. k, "r")
    if f then rec[k] = f:read("l"); f:close() end
  end
  state.write(M.SYSCTL_RECORD, cjson.encode(rec), "0644", "0755")
end

local function restore_sysctls()
  local f = io.open(M.SYSCTL_RECORD, "r")
  if not f then return end
  local ok, rec = pcall(cjson.decode, f:read("a"))
  f:close()
  for k, v in pairs(ok and rec or {}) do
    local w = io.open("/proc/sys/" .. k, "w")
    if w then w:write(v); w:close() end
  end
  os.remove(M.SYSCTL_RECORD)
end

-- Stops everything a lab started, checked gone; removes its namespaces and bridge.
local function teardown(dir, st, name)
  st = st or state.load(dir) or { nodes = {}, name = name }
  local pids = {}
  for _, n in ipairs(st.nodes or {}) do
    if n.kubelet_pid then pids[#pids + 1] = n.kubelet_pid end
    -- a real node's init first: its death ends every process of the node's PID namespace (only if
    -- that PID is still this node's init: after a reboot lab.json's PIDs belong to others)
    if n.init_pid and is_node_init(n.init_pid, n.root) then proc.signal(n.init_pid, "KILL") end
    if n.node_pid and is_node_init(n.node_pid, n.root) then pids[#pids + 1] = n.node_pid end
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
        lab_node.remove_cgroups(cgroup_name(st, n))
        if not lab_node.cgroups_left(cgroup_name(st, n)) then break end
        core.sleep(0.1)
      end
    end
  end
  -- The empty mount points this lab created on the host go, unless another lab still runs: removing
  -- a directory that is a mount point in another namespace would detach that lab's mounts.
  local _, others = proc.run { argv = { "ip", "netns", "list" } }
  if not (others or ""):match("%S") then
    for _, d in ipairs(st.created_dirs or {}) do os.remove(d) end -- only if empty
    restore_sysctls() -- no lab left: no kubelet of ours needs them
  end
  state.remove(dir)
end

-- What a real-kubelet lab node needs from its kubeadm config, set as a user would set it:
-- nodeRegistration.kubeletExtraArgs --node-ip (without it the kubelet looks its own name up in DNS on
-- every pod admission, and no DNS answers here), and a kubeletconfiguration patch of its own with its
-- cgroupRoot (the cluster's KubeletConfiguration is one for all nodes; kubelets side by side on one host
-- would garbage-collect each other's pod cgroups). Returns the patches directory.
local function real_node_registration(st, node, reg)
  reg.kubeletExtraArgs = reg.kubeletExtraArgs or {}
  local args = reg.kubeletExtraArgs
  if args[1] == nil and next(args) ~= nil then -- v1beta3's map form
    args["node-ip"] = args["node-ip"] or node.ip
  else
    local has_ip
    for _, a in ipairs(args) do has_ip = has_ip or a.name == "node-ip" end
    if not has_ip then table.insert(args, { name = "node-ip", value = node.ip }) end
  end
  -- On a cgroup v1 host kubeadm's SystemVerification fails for a v1.35 kubelet even with
  -- failCgroupV1=false, and says to skip it explicitly: the lab does, as such a user must.
  if preflight.cgroups() == "v1" then
    reg.ignorePreflightErrors = reg.ignorePreflightErrors or {}
    local has
    for _, e in ipairs(reg.ignorePreflightErrors) do has = has or e == "SystemVerification" or e == "all" end
    if not has then table.insert(reg.ignorePreflightErrors, "SystemVerification") end
  end
  local dir = st.dir .. "/" .. node.name .. "-patches"
  state.write(dir .. "/kubeletconfiguration+strategic.yaml", ("cgroupRoot: /%s\n"):format(cgroup_name(st, node)), "0644", "0755")
  return dir
end

-- The cluster's KubeletConfiguration of a real-kubelet lab, where the user's config leaves a field out:
-- this machine has cgroup v1, which kubelet v1.35 refuses unless failCgroupV1 is false; no systemd
-- (cgroupfs); the images were imported by hand and can never be pulled again, so image garbage
-- collection and disk-pressure eviction must not remove them; swap may be on.
M.REAL_KUBELET_CONFIG = {
  failCgroupV1 = false, cgroupDriver = "cgroupfs", failSwapOn = false,
  imageGCHighThresholdPercent = 100, imageGCLowThresholdPercent = 99,
  evictionHard = { ["memory.available"] = "1Mi", ["nodefs.available"] = "1%", ["imagefs.available"] = "1%",
    ["nodefs.inodesFree"] = "1%" },
}
M.REAL_POD_SUBNET = "10.244.0.0/16"

-- The config document of this kind in docs, appended (empty) when there is none.
local function document(docs, kind, api_version)
  for _, d in ipairs(docs) do if d.kind == kind then return d end end
  docs[#docs + 1] = { apiVersion = api_version, kind = kind }
  return docs[#docs]
end

local function init_config(st, node, user_config, gates)
  local docs = {}
  if user_config then
    local f = assert(io.open(user_config, "r"))
    local text = f:read("a")
    f:close()
    local d, err = yaml.decode(text, user_config)
    if not d then error(err, 0) end
    docs = d
  end
  local init = document(docs, "InitConfiguration", "kubeadm.k8s.io/v1beta4")
  local cluster = document(docs, "ClusterConfiguration", "kubeadm.k8s.io/v1beta4")
  init.localAPIEndpoint = init.localAPIEndpoint or {}
  init.localAPIEndpoint.advertiseAddress = node.ip
  init.nodeRegistration = init.nodeRegistration or {}
  init.nodeRegistration.name = node.name
  init.nodeRegistration.criSocket = init.nodeRegistration.criSocket or "unix:///var/run/containerd/containerd.sock"
  -- The lab knows its join secrets up front, so it can join the other nodes with them.
  init.bootstrapTokens = init.bootstrapTokens or { { token = st.token } }
  st.token = init.bootstrapTokens[1].token or st.token
  init.certificateKey = init.certificateKey or st.certificate_key
  st.certificate_key = init.certificateKey
  if st.endpoint and not cluster.controlPlaneEndpoint then cluster.controlPlaneEndpoint = st.endpoint end
  -- --kubernetes-version over the config's (a config alone keeps its own)
  if st.kubernetes_version then cluster.kubernetesVersion = st.kubernetes_version end
  if st.external and not cluster.etcd then
    cluster.etcd = { external = { endpoints = st.external.endpoints, caFile = "/etc/kubernetes/pki/etcd/ca.crt",
      certFile = "/etc/kubernetes/pki/apiserver-etcd-client.crt", keyFile = "/etc/kubernetes/pki/apiserver-etcd-client.key" } }
  end
  if st.kubelet == "real" then
    local kc = document(docs, "KubeletConfiguration", "kubelet.config.k8s.io/v1beta1")
    for k, v in pairs(M.REAL_KUBELET_CONFIG) do if kc[k] == nil then kc[k] = v end end
    cluster.networking = cluster.networking or {}
    cluster.networking.podSubnet = cluster.networking.podSubnet or M.REAL_POD_SUBNET
    -- kube-proxy runs in a node's network namespace: nf_conntrack_max is the host's, not its to set
    local kp = document(docs, "KubeProxyConfiguration", "kubeproxy.config.k8s.io/v1alpha1")
    kp.conntrack = kp.conntrack or {}
    if kp.conntrack.maxPerCore == nil then kp.conntrack.maxPerCore = 0 end
    if init.patches then
      error("--config: the real-kubelet lab gives each node a patches directory of its own (its cgroupRoot): " ..
        "leave InitConfiguration.patches out, or use --kubelet standin", 0)
    end
    init.patches = { directory = real_node_registration(st, node, init.nodeRegistration) }
  end
  if gates and next(gates) then
    cluster.featureGates = cluster.featureGates or {}
    for k, v in pairs(gates) do cluster.featureGates[k] = v end
  end
  local path = st.dir .. "/" .. node.name .. "-init.yaml"
  state.write(path, yaml.encode_all(docs), "0600") -- the bootstrap token and the certificate key
  return path
end

-- A JoinConfiguration for a node: token discovery pinned to cp1's CA; control planes also get the
-- certificate key and their own advertise address.
join_config = function(st, node, cp1)
  local f = assert(io.open(cp1.root .. "/etc/kubernetes/pki/ca.crt", "r"))
  local ca = f:read("a")
  f:close()
  local pin = assert(pki.read_cert(ca)):pin()
  local doc = {
    apiVersion = "kubeadm.k8s.io/v1beta4", kind = "JoinConfiguration",
    discovery = { bootstrapToken = { token = st.token, apiServerEndpoint = st.endpoint or (cp1.ip .. ":6443"),
      caCertHashes = { pin } } },
    nodeRegistration = { name = node.name, criSocket = "unix:///var/run/containerd/containerd.sock" },
  }
  if st.kubelet == "real" then doc.patches = { directory = real_node_registration(st, node, doc.nodeRegistration) } end
  if node.role == "control-plane" then
    doc.controlPlane = { localAPIEndpoint = { advertiseAddress = node.ip, bindPort = 6443 },
      certificateKey = st.certificate_key }
  end
  local path = st.dir .. "/" .. node.name .. "-join.yaml"
  state.write(path, yaml.encode(doc), "0600") -- the bootstrap token (and a control plane's certificate key)
  return path
end

-- Other labs' recorded subnets (their lab.json under .lab/), for those that still have a bridge or
-- a namespace on this machine: {{name=, subnet=, dir=}}.
local function other_labs(name, dir)
  local out = {}
  local base = top_dir() .. "/.lab"
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

-- Starts a real-kubelet node: its init (lab/node.lua) as PID 1 of new PID and UTS namespaces, in its
-- network namespace, with its private /run and its directories bound at their canonical paths.
-- Records the init's host PID (the child of `unshare --fork`) for exec_on and teardown.
local function start_real_node(st, n, images)
  local mounts = real_node_mounts(n.root)
  -- the node's installed kubelet package (lab/node.lua): the lab's release
  state.write(n.root .. lab_node.RELEASE, (st.kubernetes_version or releases.DEFAULT) .. "\n", "0644", "0755")
  local argv = { "unshare", "--pid", "--uts", "--fork", "--mount-proc", core.exe(), "lab", "node", "--root", n.root,
    "--node-name", n.name, "--bin-dir", st.bin_dir, "--unit", top_dir() .. "/packaging/10-kubeadm.conf",
    "--images", images, "--cgroup", cgroup_name(st, n) }
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

-- Pod networking follows each Node's pod CIDR, as a CNI DaemonSet would wire it (lab/cni.lua), with
-- the lab's record saved → the nodes still without a pod CIDR | nil, err.
local function wire_pod_network(c, st)
  local nodes, err = c:list({ apiVersion = "v1", kind = "Node" }, { timeout = 5 })
  if not nodes then return nil, "listing the Nodes for their pod CIDRs: " .. tostring(err) end
  local missing = cni.sync(st, nodes)
  state.save(st.dir, st)
  return missing
end

-- A real-kubelet lab's image archive must hold the release's images (what its kubeadm lists; the
-- archive's manifest.json, as lab/build-images.sh writes it): without them each Pod would wait on
-- ErrImageNeverPull instead of saying what to build.
local function check_archive(images, release)
  local code, out = proc.run { argv = { "tar", "-xOf", images, "manifest.json" } }
  local ok, manifest = pcall(cjson.decode, code == 0 and out or "")
  if not ok or type(manifest) ~= "table" then
    error(("%s: no image manifest (manifest.json) in it: rebuild it with `make lab-bins-node`"):format(images), 0)
  end
  local have = {}
  for _, m in ipairs(manifest) do for _, t in ipairs(m.RepoTags or {}) do have[t] = true end end
  local r = releases.must(release)
  local missing = {}
  for _, ref in ipairs { "kube-apiserver:" .. release, "kube-controller-manager:" .. release,
    "kube-scheduler:" .. release, "kube-proxy:" .. release, "etcd:" .. releases.etcd_tag(release),
    "coredns/coredns:" .. r.coredns, "pause:" .. r.pause } do
    if not have["registry.k8s.io/" .. ref] then missing[#missing + 1] = ref end
  end
  if #missing > 0 then
    error(("%s lacks %s's images (%s): build them with `LAB_RELEASES=%s make lab-bins-node`"):format(
      images, release, table.concat(missing, " "), release), 0)
  end
end

-- Waits for every real node's init to report containerd up and the images imported.
local function wait_real_nodes(st)
  wait_for("containerd and the lab's images on every node", 180, function()
    local missing = {}
    for _, n in ipairs(st.nodes) do
      local f = io.open(n.root .. "/lab-node.json", "r")
      local r = f and cjson.decode(f:read("a"))
      if f then f:close() end
      if r and r.ready == false then error(("node %s: %s (log: %s/var/log/moonadm-node.log)"):format(n.name, r.error, n.root), 0) end
      if not (r and r.ready) then
        if not proc.alive(n.init_pid) then
          error(("node %s: its init exited: see %s/var/log/moonadm-node.log"):format(n.name, n.root), 0)
        end
        missing[#missing + 1] = n.name
      end
    end
    if #missing == 0 then return true end
    return false, "not ready yet: " .. table.concat(missing, " ")
  end, "containerd runs and the images are imported on every node")
end

function M.up(flags, set)
  need_root()
  local bin = M.abs(flags["bin-dir"] or M.default_bin())
  local real = flags.kubelet == "real"
  -- the release the lab runs: its manifests name it, the stand-in runs that release's binaries
  if flags["kubernetes-version"] then flags["kubernetes-version"] = "v" .. flags["kubernetes-version"]:gsub("^v", "") end
  local k8s_version = flags["kubernetes-version"] or releases.DEFAULT
  if not releases.of(k8s_version) then error("--kubernetes-version: " .. select(2, releases.of(k8s_version)), 0) end
  local vip = flags["control-plane-endpoint"] == "vip"
  if flags["control-plane-endpoint"] ~= "lb" and not vip then
    error(("--control-plane-endpoint %q: give lb (the lab's balancer) or vip (keepalived + haproxy on the control planes)")
      :format(tostring(flags["control-plane-endpoint"])), 0)
  end
  if vip and not real then
    error("--control-plane-endpoint vip runs keepalived and haproxy as static Pods: it needs --kubelet real", 0)
  end
  if flags.kubelet ~= "real" and flags.kubelet ~= "standin" then
    error(("--kubelet %q: give standin (the lab's stand-in, the default) or real (kubelet and containerd)"):format(flags.kubelet), 0)
  end
  local need = { "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl" }
  if real then for _, b in ipairs { "kubelet", "containerd", "containerd-shim-runc-v2", "ctr", "crictl" } do need[#need + 1] = b end end
  for _, b in ipairs(need) do
    local f = io.open(bin .. "/" .. b, "r")
    if not f then error(("%s/%s is missing: run `make %s` first"):format(bin, b, real and "lab-bins-node" or "lab-bins"), 0) end
    f:close()
  end
  if k8s_version ~= releases.DEFAULT and not fs.exists(bin .. "/images/kube-apiserver:" .. k8s_version) then
    error(("%s/images/kube-apiserver:%s is missing: build the release with `LAB_RELEASES=%s make lab-bins`"):format(
      bin, k8s_version, k8s_version), 0)
  end
  if real and k8s_version ~= releases.DEFAULT and not io.open(("%s/%s/kubelet"):format(bin, k8s_version), "r") then
    error(("%s/%s/kubelet is missing: build the release's node binaries and images with `LAB_RELEASES=%s make lab-bins-node`")
      :format(bin, k8s_version, k8s_version), 0)
  end
  if real then
    -- Debian's runc and CNI plugins (tools/deps.sh): without them containerd fails later, less clearly
    for _, f in ipairs { "/usr/sbin/runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback" } do
      if not fs.exists(f) then error(("%s is missing: run `make deps` (runc, containernetworking-plugins)"):format(f), 0) end
    end
  end
  local images = M.abs(flags.images or M.default_images())
  if real and not fs.exists(images) then
    error(("%s is missing: run `make lab-bins-node` first (it builds the lab's images)"):format(images), 0)
  end
  if real then check_archive(images, k8s_version) end
  local ok, err = net.check()
  if not ok then error(err, 0) end
  local gates
  if flags["feature-gates"] then
    gates, err = config_mod.parse_feature_gates(flags["feature-gates"])
    if not gates then error(err, 0) end
  end
  local dir = flags.dir
  local name = flags.name or net.NAME
  if state.load(dir) or #net.list_nodes(name) > 0 then
    log.info("[lab] cleaning up a previous lab")
    teardown(dir, nil, name)
  end
  if set.subnet and not net.valid_subnet(flags.subnet) then
    error(("--subnet %q: give a /24 as its first three octets, e.g. %s"):format(flags.subnet, net.SUBNET), 0)
  end
  local ncp, nw = flags["control-planes"], flags.workers
  if ncp < 1 then error("--control-planes must be at least 1", 0) end
  if fs.exists(dir) then
    local rok, rerr = fs.remove_tree(dir)
    if not rok then error(("[lab] removing the previous lab's %s: %s"):format(dir, rerr), 0) end
  end
  state.ensure_dir(dir:match("^(.*)/[^/]*$"), "0755")
  state.mkdir(dir, "0700") -- lab.json and the node configs hold the join secrets; the node roots the CA keys
  -- The subnet is chosen (or the given one checked) and its bridge brought up under the machine-wide
  -- lock, with the choice recorded in lab.json first: a concurrent `lab up` sees one or the other.
  local release = net.lock()
  local subnet
  local okc, cerr = pcall(function()
    local addrs, aerr = net.host_addresses()
    if not addrs then error("lab network: " .. aerr, 0) end
    local labs = other_labs(name, dir)
    if set.subnet then
      local why = net.taken(flags.subnet, { lab = name, addresses = addrs, labs = labs })
      if why then
        error(("subnet %s is already taken (%s): give another --subnet, or leave it out and the lab picks a free one")
          :format(flags.subnet, why), 0)
      end
      subnet = flags.subnet
    else
      local perr
      subnet, perr = net.choose(name, { addresses = addrs, labs = labs })
      if not subnet then error(perr, 0) end
      log.info("[lab] %s: subnet %s.0/24 (free; --subnet picks another)", name, subnet)
    end
  end)
  if not okc then release() error(cerr, 0) end
  local st = { name = name, dir = dir, bin_dir = bin, subnet = subnet, nodes = {}, created_dirs = {},
    kubelet = real and "real" or "standin", kubernetes_version = flags["kubernetes-version"] }
  for _, d in ipairs(NODE_DIRS) do
    if not io.open(d, "r") then st.created_dirs[#st.created_dirs + 1] = d end
  end
  if real then
    record_sysctls()
    for _, d in ipairs(REAL_NODE_DIRS) do
      if not io.open(d, "r") then st.created_dirs[#st.created_dirs + 1] = d end
    end
    -- the node's systemctl (lab/systemctl.lua), first on its PATH in exec_on
    state.write(dir .. "/sbin/systemctl", ("#!/bin/sh\nexec '%s' lab systemctl \"$@\"\n"):format(core.exe()), "0755", "0755")
    -- and its `kubelet`: the installed release's (lab/node.lua), as `kubelet --version` on a node says
    state.write(dir .. "/sbin/kubelet", ("#!/bin/sh\nr=$(cat %s 2>/dev/null)\nexec '%s'/${r:+$r/}kubelet \"$@\"\n")
      :format(lab_node.RELEASE, bin), "0755", "0755")
  end
  for i = 1, ncp do st.nodes[#st.nodes + 1] = { name = "cp" .. i, role = "control-plane" } end
  for i = 1, nw do st.nodes[#st.nodes + 1] = { name = "w" .. i, role = "worker" } end
  for i = 1, flags.spares do st.nodes[#st.nodes + 1] = { name = "s" .. i, role = "spare" } end
  for i, n in ipairs(st.nodes) do
    n.ip = ("%s.%d"):format(subnet, 10 + i)
    n.root = dir .. "/" .. n.name
  end
  if flags["external-etcd"] > 0 then
    st.etcd = {}
    for i = 1, flags["external-etcd"] do
      st.etcd[i] = { name = "e" .. i, ip = ("%s.%d"):format(subnet, 200 + i), root = dir .. "/e" .. i }
    end
  end
  state.save(dir, st)
  local okb, berr = pcall(net.bridge_up, subnet, name)
  release()
  if not okb then error(berr, 0) end
  write_hosts(st)
  local okup, uerr = pcall(function()
    for _, n in ipairs(st.nodes) do
      net.node_up(n.name, n.ip, subnet, name)
      state.mkdir(n.root, "0755") -- a node's root is its "/"
      node_dir(n.root, "/var/log", "0755")
      node_dir(n.root, "/etc/kubernetes/manifests", "0700") -- kubeadm's mode for the static Pod dir
      if real then
        start_real_node(st, n, images)
      else
        local pid, serr = proc.spawn { argv = { core.exe(), "lab", "kubelet", "--root", n.root, "--node-ip", n.ip,
          "--bin-dir", bin, "--node-name", n.name, "--kubelet-version", st.kubernetes_version or releases.DEFAULT },
          netns = net.netns_path(n.name, name),
          log = n.root .. "/var/log/moonadm-kubelet.log", new_session = true }
        if not pid then error(serr, 0) end
        n.kubelet_pid = pid
      end
      state.save(dir, st)
    end
    if vip then
      -- no balancer: the control planes' keepalived holds .2 and their haproxy listens on 8443
      st.vip, st.endpoint = { ip = subnet .. ".2", port = VIP_PORT }, subnet .. ".2:" .. VIP_PORT
      state.save(dir, st)
    elseif ncp > 1 then
      local lb = { name = "lb", ip = subnet .. ".2" }
      net.node_up("lb", lb.ip, subnet, name)
      local backends = {}
      for _, n in ipairs(st.nodes) do if n.role == "control-plane" then backends[#backends + 1] = n.ip .. ":6443" end end
      local largv = { core.exe(), "lab", "lb", "--listen", lb.ip .. ":6443" }
      for _, b in ipairs(backends) do largv[#largv + 1] = "--backend"; largv[#largv + 1] = b end
      lb.pid = assert(proc.spawn { argv = largv, netns = net.netns_path("lb", name), log = dir .. "/lb.log", new_session = true })
      st.lb, st.endpoint = lb, lb.ip .. ":6443"
      state.save(dir, st)
    end
    if st.etcd then
      for _, m in ipairs(st.etcd) do net.node_up(m.name, m.ip, subnet, name) end
      local client, endpoints = ext.pki(dir, st.etcd)
      ext.start(st, st.etcd, bin)
      st.external = { endpoints = endpoints }
      -- the first control plane holds the client files where kubeadm's docs put them
      local pkidir = st.nodes[1].root .. "/etc/kubernetes/pki"
      for file, text in pairs { ["etcd/ca.crt"] = client.ca, ["apiserver-etcd-client.crt"] = client.crt,
        ["apiserver-etcd-client.key"] = client.key } do
        state.write(pkidir .. "/" .. file, text, file:match("%.key$") and "0600" or "0644", "0755")
      end
      state.save(dir, st)
    end
    local cp1 = st.nodes[1]
    local all = {}
    for _, n in ipairs(st.nodes) do all[#all + 1] = n.name end
    if real then wait_real_nodes(st) else wait_for(("the kubelet stand-ins of %s at http://127.0.0.1:10248/healthz of each node"):format(table.concat(all, " ")),
      30, function()
        local missing = {}
        for _, n in ipairs(st.nodes) do
          if not n.healthy then
            if not proc.alive(n.kubelet_pid) then
              error("kubelet stand-in of " .. n.name .. " exited: see " .. n.root .. "/var/log/moonadm-kubelet.log", 0)
            end
            n.healthy = proc.run { argv = { "ip", "netns", "exec", net.netns_name(n.name, name), "bash", "-c",
              "exec 3<>/dev/tcp/127.0.0.1/10248" } } == 0
            if not n.healthy then missing[#missing + 1] = n.name end
          end
        end
        if #missing == 0 then return true end
        return false, "not answering yet: " .. table.concat(missing, " ")
      end, "The kubelet stand-ins are healthy") end
    for _, n in ipairs(st.nodes) do n.healthy = nil end
    st.token = pki.token_id() .. "." .. pki.token_secret()
    st.certificate_key = pki.certificate_key()
    local cfgfile = init_config(st, cp1, flags.config and M.abs(flags.config), gates)
    state.save(dir, st)
    log.info("[lab] %s: moonadm init --config %s", cp1.name, cfgfile)
    local iargv = { "moonadm", "init", "--config", cfgfile, "--upload-certs" }
    if st.vip then
      local img = vip_images()
      for _, a in ipairs { "--control-plane-endpoint-vip", "keepalived-haproxy",
        "--control-plane-endpoint-vip-haproxy-image", img.haproxy,
        "--control-plane-endpoint-vip-keepalived-image", img.keepalived } do iargv[#iargv + 1] = a end
    end
    if flags.flow then iargv[#iargv + 1] = "--flow"; iargv[#iargv + 1] = M.abs(flags.flow) end
    local code = M.exec_on(st, cp1, iargv)
    if code == 3 then
      log.warn("[lab] init stopped at a phase that is not implemented yet; the control plane still comes up from the local phases")
    elseif code ~= 0 then
      error(("moonadm init on %s failed (exit %d)"):format(cp1.name, code), 0)
    end
    local conf = cp1.root .. "/etc/kubernetes/super-admin.conf"
    wait_for(("the kube-apiserver of %s to be ready (/readyz)"):format(cp1.name), 240, function()
      local c, out = kubectl(st, conf, { "get", "--raw", "/readyz" })
      if c == 0 and out:match("^ok") then return true end
      return false, (out or ""):gsub("%s+$", ""):sub(-300)
    end, ("The kube-apiserver of %s is ready"):format(cp1.name))
    state.copy(cp1.root .. "/etc/kubernetes/admin.conf", dir .. "/admin.conf", "0600")
    state.copy(conf, dir .. "/super-admin.conf", "0600")
    for i = 2, #st.nodes do
      local n = st.nodes[i]
      local jfile = join_config(st, n, cp1)
      if n.role == "spare" then -- ready for `lab exec s1 -- moonadm join --config FILE` (as a worker)
        log.info("[lab] %s: not joined; its worker join config is %s", n.name, jfile)
        goto continue
      end
      log.info("[lab] %s: moonadm join --config %s", n.name, jfile)
      local jargv = { "moonadm", "join", "--config", jfile }
      if flags["join-flow"] then jargv[#jargv + 1] = "--flow"; jargv[#jargv + 1] = M.abs(flags["join-flow"]) end
      for _, f in ipairs(flags["phase-file"] or {}) do jargv[#jargv + 1] = "--phase-file"; jargv[#jargv + 1] = M.abs(f) end
      for _, a in ipairs(flags["phase-add"] or {}) do jargv[#jargv + 1] = "--phase-add"; jargv[#jargv + 1] = a end
      local jcode = M.exec_on(st, n, jargv)
      if jcode ~= 0 then error(("moonadm join on %s failed (exit %d)"):format(n.name, jcode), 0) end
      ::continue::
    end
    -- "up" only when it is: every static Pod of every joined node has its mirror Pod in the API and
    -- every Node is Ready, read with moonadm's own client and the lab's admin kubeconfig.
    -- An init --flow of the user's may stop before the phases that authorize admin.conf and let the
    -- kubelet bootstrap (upload-config, bootstrap-token): then only /readyz is waited for.
    if flags.flow then
      log.info("[lab] init ran the --flow %s: not waiting for mirror Pods and Ready Nodes (that flow may not make them)", flags.flow)
    else
      local names = {}
      for _, n in ipairs(st.nodes) do if n.role ~= "spare" then names[#names + 1] = n.name end end
      local c, cerr = kclient.from_kubeconfig(dir .. "/admin.conf", { timeout = 5, request_timeout = 5, connect_timeout = 2 })
      if not c then error(("an API client from %s/admin.conf: %s"):format(dir, tostring(cerr)), 0) end
      local okw, werr = pcall(wait_for, ("every static Pod's mirror Pod and every Node Ready (%s)"):format(
        table.concat(names, " ")), flags["ready-timeout"], function()
          if real then
            local wired, werr2 = wire_pod_network(c, st)
            if not wired then return false, werr2 end
          end
          local why = M.not_up(c, st)
          return why == nil, why
        end, "Every static Pod has its mirror Pod and every Node is Ready")
      c:close()
      if not okw then error(werr, 0) end
    end
    st.ready = true
    state.save(dir, st)
  end)
  if not okup then
    log.error("[lab] up failed: " .. tostring(uerr) .. "\n[lab] the lab is left as it is for inspection; `moonadm lab down` removes it")
    return 1
  end
  local named = name ~= net.NAME and (" --name " .. name) or ""
  log.result(("[lab] up: %d control plane(s), %d worker(s) in %s (subnet %s.0/24)\n" ..
    "  kubectl --kubeconfig %s/super-admin.conf get nodes -o wide\n" ..
    "  moonadm lab status%s | moonadm lab exec%s cp1 -- CMD | moonadm lab down%s"):format(ncp, nw, dir, subnet, dir,
    named, named, named))
  return 0
end

function M.down(flags)
  need_root()
  local st = state.load(flags.dir)
  teardown(flags.dir, st, flags.name or net.NAME)
  if not st then
    log.result(("[lab] down: no lab in %s; removed what a lab named %s would have left (namespaces, bridge)"):format(
      flags.dir, flags.name or net.NAME))
    return 0
  end
  log.result("[lab] down: every process stopped, namespaces and bridge removed")
  return 0
end

-- `lab network`: the CNI config and routes of every Node that has a pod CIDR and none yet (a spare
-- joined after `lab up`), until each has them (the controller-manager gives a new Node its CIDR).
function M.network(flags)
  need_root()
  local st = state.load(flags.dir) or error("no lab in " .. flags.dir, 0)
  if st.kubelet ~= "real" then log.result("[lab] a stand-in lab has no pod network to wire") return 0 end
  local c, cerr = kclient.from_kubeconfig(flags.dir .. "/admin.conf", { timeout = 5, request_timeout = 5, connect_timeout = 2 })
  if not c then error(("an API client from %s/admin.conf: %s"):format(flags.dir, tostring(cerr)), 0) end
  local ok, err = pcall(wait_for, "every Node's pod network", 60, function()
    local missing, werr = wire_pod_network(c, st)
    if not missing then return false, werr end
    if #missing == 0 then return true end
    return false, "no pod CIDR yet: " .. table.concat(missing, " ")
  end, "Every Node's pod network is wired")
  c:close()
  if not ok then error(err, 0) end
  return 0
end

function M.status(flags)
  local st = state.load(flags.dir)
  if not st then
    log.result("no lab in " .. flags.dir)
    return 1
  end
  local out = { nodes = {} }
  for _, n in ipairs(st.nodes) do
    local f = io.open(n.root .. "/var/lib/moonadm-lab/kubelet-status.json", "r")
    local ks = f and cjson.decode(f:read("a")) or {}
    if f then f:close() end
    local server
    local kc = fs.read(n.root .. "/etc/kubernetes/kubelet.conf")
    local entries = kc and kubeconfig.current(kc, n.root .. "/etc/kubernetes/kubelet.conf")
    if entries then server = entries.cluster.cluster.server end
    -- a real node's process is its init (containerd and the kubelet run under it; `crictl ps` on the node)
    local pid = n.kubelet_pid or n.init_pid
    out.nodes[#out.nodes + 1] = { name = n.name, role = n.role, ip = n.ip, kubelet_pid = pid,
      kubelet_alive = proc.alive(pid or -1), pods = ks.pods or {}, kubelet_server = server,
      kubelet = st.kubelet or "standin" }
  end
  if st.lb then out.lb = { ip = st.lb.ip, pid = st.lb.pid, alive = proc.alive(st.lb.pid or -1) } end
  if flags.output == "json" then
    log.result(cjson.encode(out))
    return 0
  end
  local lines = { ("lab in %s%s"):format(flags.dir, st.endpoint and (", endpoint " .. st.endpoint) or "") }
  for _, n in ipairs(out.nodes) do
    lines[#lines + 1] = ("%-5s %-13s %-15s %s pid %s (%s)  kubelet.conf server %s"):format(n.name, n.role, n.ip,
      n.kubelet == "real" and "node init" or "kubelet", tostring(math.tointeger(n.kubelet_pid)),
      n.kubelet_alive and "running" or "gone", n.kubelet_server or "-")
    for _, p in ipairs(n.pods) do
      lines[#lines + 1] = ("        %-40s pid %-8s restarts %d"):format(p.pod,
        p.pid == cjson.null and "-" or tostring(math.tointeger(p.pid)), math.tointeger(p.restarts) or 0)
    end
  end
  if out.lb then lines[#lines + 1] = ("lb    %-15s pid %d (%s)"):format(out.lb.ip, math.tointeger(out.lb.pid), out.lb.alive and "running" or "gone") end
  log.result(table.concat(lines, "\n"))
  return 0
end

-- args: the node's name; cmd: the command line to run on it.
function M.exec(flags, node_name, cmd)
  need_root()
  local st = state.load(flags.dir) or error("no lab in " .. flags.dir, 0)
  local node = find_node(st, node_name or "") or error(("no node %q in the lab"):format(node_name or ""), 0)
  if #cmd == 0 then error("lab exec: no command after --", 0) end
  local code = M.exec_on(st, node, cmd)
  -- a node that (re)joined a real-kubelet lab (with moonadm or kubeadm) may have a new pod CIDR:
  -- wire it as `lab up` does
  local line = table.concat(cmd, " ")
  if st.kubelet == "real" and code == 0 and not flags["no-network"] and
      (line:match("moonadm%S* join") or line:match("kubeadm%S* join")) then
    local c = kclient.from_kubeconfig(flags.dir .. "/admin.conf", { timeout = 5, request_timeout = 5, connect_timeout = 2 })
    local deadline = core.monotonic() + 60
    while c do
      local missing, werr = wire_pod_network(c, st)
      if not missing then log.warn("[lab] %s", werr) break end
      if #missing == 0 then break end
      if core.monotonic() > deadline then
        log.warn("[lab] no pod CIDR yet for %s: its pods have no network until `lab exec` runs again", table.concat(missing, " "))
        break
      end
      core.sleep(0.5)
    end
    if c then c:close() end
  end
  return code
end

return M
