-- The lab's commands (`moonadm lab up|down|status|network|exec`, whose command line is
-- commands/lab.lua): each node a directory (its root) plus a network namespace with its own address
-- on the lab's bridge, its kubelet stand-in running static pods as host processes (or, with
-- --kubelet real, containerd and the real kubelet); `up` runs the stock init on the first node and
-- join on the others — the same flows a real node runs — and `down` stops exactly what lab.json
-- records. The pieces: lab/flags.lua (up's options checked), lab/network.lua (subnet, addresses,
-- endpoint), lab/node_start.lua (the nodes started), lab/join.lua (init and joins),
-- lab/readiness.lua (the waits), lab/teardown.lua (down); files through lab.state.
local cjson = require "cjson"
local cni = require "lab.cni"
local core = require "moonadm.core"
local ext = require "lab.external_etcd"
local fs = require "moonadm.fs"
local join = require "lab.join"
local kubeconfig = require "kube.kubeconfig"
local lab_flags = require "lab.flags"
local log = require "framework.log"
local net = require "lab.net"
local network = require "lab.network"
local node_exec = require "lab.node_exec"
local node_start = require "lab.node_start"
local proc = require "moonadm.proc"
local readiness = require "lab.readiness"
local state = require "lab.state"
local sysctls = require "lab.sysctls"
local teardown = require "lab.teardown"

local M = {}

local function need_root()
  if core.getuid() ~= 0 then error("the lab needs root (network namespaces, bind mounts)", 0) end
end

local function find_node(st, name)
  for _, n in ipairs(st.nodes or {}) do if n.name == name then return n end end
end

-- The lab's directory, empty, made anew: lab.json and the node configs hold the join secrets; the
-- node roots the CA keys.
local function fresh_dir(dir)
  if fs.exists(dir) then
    local rok, rerr = fs.remove_tree(dir)
    if not rok then error(("[lab] removing the previous lab's %s: %s"):format(dir, rerr), 0) end
  end
  state.ensure_dir(dir:match("^(.*)/[^/]*$"), "0755")
  state.mkdir(dir, "0700")
end

-- The lab's state before anything runs: its nodes and addresses on subnet, the host dirs it makes;
-- a real-kubelet lab's sysctls recorded and its node tools written.
local function new_state(flags, opts, subnet)
  local st = { name = flags.name or net.NAME, dir = flags.dir, bin_dir = opts.bin, subnet = subnet, nodes = {},
    created_dirs = node_start.missing_host_dirs(opts.real), kubelet = opts.real and "real" or "standin",
    kubernetes_version = flags["kubernetes-version"] }
  if opts.real then
    sysctls.record()
    sysctls.raise_inotify()
    node_start.write_tools(st)
  end
  network.add_nodes(st, flags)
  return st
end

-- The subnet is chosen (or the given one checked) and its bridge brought up under the machine-wide
-- lock, with the choice recorded in lab.json first: a concurrent `lab up` sees one or the other.
local function lay_out(flags, set, opts)
  local subnet, release = network.claim_subnet(flags, set, flags.name or net.NAME, flags.dir)
  local st = new_state(flags, opts, subnet)
  state.save(st.dir, st)
  local okb, berr = pcall(net.bridge_up, subnet, st.name)
  release()
  if not okb then error(berr, 0) end
  return st
end

-- Everything after the network: nodes, endpoint, external etcd, init and joins, the waits.
local function bring_up(st, flags, opts)
  node_start.start_all(st, opts.images)
  network.endpoint_up(st, opts.vip)
  if st.etcd then ext.up(st) end
  readiness.wait_kubelets(st)
  join.init(st, flags, opts.gates)
  join.others(st, flags)
  -- An init --flow of the user's may stop before the phases that authorize admin.conf and let the
  -- kubelet bootstrap (upload-config, bootstrap-token): then only /readyz is waited for.
  if flags.flow then
    log.info("[lab] init ran the --flow %s: not waiting for mirror Pods and Ready Nodes (that flow may not make them)", flags.flow)
  else
    readiness.wait_up(st, flags["ready-timeout"])
  end
  st.ready = true
  state.save(st.dir, st)
end

function M.up(flags, set)
  need_root()
  local opts = lab_flags.check(flags)
  local dir, name = flags.dir, flags.name or net.NAME
  if state.load(dir) or #net.list_nodes(name) > 0 then
    log.info("[lab] cleaning up a previous lab")
    teardown.run(dir, nil, name)
  end
  lab_flags.check_shape(flags, set)
  fresh_dir(dir)
  local st = lay_out(flags, set, opts)
  network.write_hosts(st)
  local okup, uerr = pcall(bring_up, st, flags, opts)
  if not okup then
    log.error("[lab] up failed: " .. tostring(uerr) .. "\n[lab] the lab is left as it is for inspection; `moonadm lab down` removes it")
    return 1
  end
  local named = name ~= net.NAME and (" --name " .. name) or ""
  -- admin.conf, the day-to-day credential; an init --flow of the user's may not have authorized it
  local hint_conf = flags.flow and "super-admin.conf" or "admin.conf"
  log.result(("[lab] up: %d control plane(s), %d worker(s) in %s (subnet %s.0/24)\n" ..
    "  kubectl --kubeconfig %s/%s get nodes -o wide\n" ..
    "  moonadm lab status%s | moonadm lab exec%s cp1 -- CMD | moonadm lab down%s"):format(flags["control-planes"],
    flags.workers, dir, st.subnet, dir, hint_conf, named, named, named))
  return 0
end

function M.down(flags)
  need_root()
  local st = state.load(flags.dir)
  teardown.run(flags.dir, st, flags.name or net.NAME)
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
  local c, cerr = readiness.admin_client(flags.dir)
  if not c then error(("an API client from %s/admin.conf: %s"):format(flags.dir, tostring(cerr)), 0) end
  local ok, err = pcall(readiness.wait_for, "every Node's pod network", 60, function()
    local missing, werr = cni.wire(c, st)
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
  local code = node_exec.exec_on(st, node, cmd)
  -- a node that (re)joined a real-kubelet lab (with moonadm or kubeadm) may have a new pod CIDR:
  -- wire it as `lab up` does
  local line = table.concat(cmd, " ")
  if st.kubelet == "real" and code == 0 and not flags["no-network"] and
      (line:match("moonadm%S* join") or line:match("kubeadm%S* join")) then
    local c = readiness.admin_client(flags.dir)
    local deadline = core.monotonic() + 60
    while c do
      local missing, werr = cni.wire(c, st)
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
