-- `moonadm lab up|down|status|exec|kubelet|lb`: the command line of the lab (flags, help,
-- dispatch). What a lab is and does lives in scripts/lab/: cluster.lua (up, down, status, network,
-- exec, and the pieces they are made of), kubelet.lua (the kubelet stand-in), lb.lua (the
-- control-plane endpoint's balancer), node.lua and systemctl.lua (a real-kubelet node's init).
local cluster = require "lab.cluster"
local core = require "moonadm.core"
local flags_mod = require "framework.argv"
local kubelet = require "lab.kubelet"
local lab_lb = require "lab.lb"
local log = require "framework.log"
local net = require "lab.net"
local node_exec = require "lab.node_exec"
local paths = require "lab.paths"
local readiness = require "lab.readiness"
local releases = require "config.releases"
local lab_node = require "lab.node"
local lab_systemctl = require "lab.systemctl"

local M = {}

local common_flags = {
  { name = "dir", type = "string", help = "Where the lab's nodes live (default .lab/cluster, or .lab/NAME)" },
  { name = "name", type = "string", help = "The lab's name: prefixes its namespaces and names its bridge (default moonadm)" },
  { name = "output", short = "o", type = "string", default = "text", help = "text or json" },
  { name = "scripts", type = "string", help = "A scripts dir whose files win over the embedded ones" },
  { name = "insecure-scripts", type = "bool", help = "Run a scripts dir others could have changed (development only)" },
  { name = "v", short = "v", type = "int", default = 0, help = "number for the log level verbosity" },
}

local function with_common(extra)
  local spec = {}
  for _, f in ipairs(common_flags) do spec[#spec + 1] = f end
  for _, f in ipairs(extra) do spec[#spec + 1] = f end
  return spec
end

-- Each subcommand's whole flag spec, as it parses it (and as its --help shows it).
M.flags = {
  up = with_common {
    { name = "control-planes", type = "int", default = 1, help = "Number of control-plane nodes" },
    { name = "workers", type = "int", default = 0, help = "Number of worker nodes" },
    { name = "external-etcd", type = "int", default = 0, help = "Run an external etcd cluster of N members (e1..eN) and use it instead of stacked etcd" },
    { name = "spares", type = "int", default = 0, help = "Nodes s1..sN with a kubelet but not joined (for experiments: `lab exec s1 -- moonadm join ...`)" },
    { name = "feature-gates", type = "string", help = "Feature gates for the init ClusterConfiguration" },
    { name = "kubernetes-version", type = "string", help = "The Kubernetes release the lab runs (default " ..
      releases.DEFAULT .. "; another is built with LAB_RELEASES=<release> make lab-bins)" },
    { name = "config", type = "string", help = "A kubeadm config file for init (address and name are filled in)" },
    { name = "flow", type = "string", help = "A flow file for init (see docs/scripting.md)" },
    { name = "join-flow", type = "string", help = "A flow file for the joins" },
    { name = "phase-add", type = "list", help = "NAME:after=X|before=X|replace=X for the joins (site phases)" },
    { name = "phase-file", type = "list", help = "Site phase files for the joins" },
    { name = "bin-dir", type = "string", help = "Where the lab's binaries are (default .lab/bin)" },
    { name = "subnet", type = "string", help = "The lab's /24, as its first three octets (default: a free one, " ..
      net.SUBNET .. " for the default lab, else one picked from the name in " .. net.POOL .. ".0.0/16)" },
    { name = "ready-timeout", type = "int", default = 180, help = "Seconds to wait for every mirror Pod and every Node Ready before `lab up` fails" },
    { name = "kubelet", type = "string", default = "standin", help = "standin (the lab's kubelet stand-in: fast, no runtime) or real (the real kubelet and containerd per node; `make lab-bins-node`)" },
    { name = "images", type = "string", help = "The image archive each real node imports (default .lab/images.tar)" },
    { name = "control-plane-endpoint", type = "string", default = "lb", help = "lb (the lab's own load balancer at .2, with several control planes) or vip (keepalived + haproxy static Pods hold .2:8443 on the control planes: moonadm init --control-plane-endpoint-vip; needs --kubelet real)" },
  },
  down = with_common {},
  status = with_common {},
  network = with_common {},
  exec = with_common {
    { name = "no-network", type = "bool", default = false, help = "After a join on a real-kubelet lab, do not wire the node's pod network (`lab network` does it later); the exit comes as the command ends (benchmarks time the join alone)" },
  },
  kubelet = {
    { name = "root", type = "string", help = "The node's root directory" },
    { name = "node-ip", type = "string", help = "The node's address" },
    { name = "bin-dir", type = "string", help = "Where the static pods' binaries are" },
    { name = "node-name", type = "string", help = "The node's name (default the hostname)" },
    { name = "kubelet-version", type = "string", help = "The kubelet version the Node reports (default " ..
      releases.DEFAULT .. ")" },
    { name = "healthz-port", type = "int", default = 10248, help = "The healthz port on 127.0.0.1" },
    { name = "scripts", type = "string" }, { name = "insecure-scripts", type = "bool" },
    { name = "v", short = "v", type = "int", default = 0 },
  },
  node = {
    { name = "root", type = "string", help = "The node's root directory" },
    { name = "node-name", type = "string", help = "The node's name" },
    { name = "bin-dir", type = "string", help = "Where containerd, ctr and the kubelet are" },
    { name = "unit", type = "string", help = "The kubelet's systemd drop-in (kubeadm's 10-kubeadm.conf)" },
    { name = "images", type = "string", help = "The image archive to import" },
    { name = "cgroup", type = "string", help = "The node's cgroup (its kubelet's cgroupRoot)" },
    { name = "scripts", type = "string" }, { name = "insecure-scripts", type = "bool" },
  },
  lb = {
    { name = "listen", type = "string", help = "IP:PORT to listen on" },
    { name = "backend", type = "list", help = "IP:PORT of a kube-apiserver (repeatable)" },
    { name = "scripts", type = "string" }, { name = "insecure-scripts", type = "bool" },
  },
}

-- Help data for `moonadm lab ... --help` (scripts/framework/cli.lua renders it in cobra's shape).
M.help = {
  [""] = {
    short = "A real Kubernetes control plane on this machine, made by moonadm's init and join",
    long = "Each lab node is a root directory plus a network namespace with its own address on the lab's bridge;\n" ..
      "a kubelet stand-in runs its static pods as host processes. `lab up` runs the stock init on the first\n" ..
      "node and join on the others. Needs root.",
    runnable = false, flags = with_common {},
  },
  ["up"] = {
    short = "Bring a lab up: init on cp1, join on the others, then wait until it is up",
    long = "Bring a lab up: per node a root directory, a network namespace and a kubelet stand-in; `moonadm init`\n" ..
      "on cp1 and `moonadm join` on the others (behind a load balancer with more than one control plane).\n" ..
      "It says \"up\" only when every static Pod manifest of every node has its mirror Pod in the API and every\n" ..
      "Node is Ready (with an init --flow of your own: only when the kube-apiserver is ready). Without --subnet\n" ..
      "the lab picks a free /24 by itself. A previous lab of the same name is\n" ..
      "removed first.",
    example = "  # An HA lab: three control planes behind a load balancer, two workers\n" ..
      "  moonadm lab up --control-planes 3 --workers 2\n\n" ..
      "  # A second lab next to the first: it picks a free subnet by itself\n" ..
      "  moonadm lab up --name demo2 --workers 1",
    args = "", flags = M.flags.up,
  },
  ["down"] = { short = "Stop every process of a lab and remove its namespaces and bridge",
    example = "  moonadm lab down --name demo2", args = "", flags = M.flags.down },
  ["status"] = { short = "Show a lab's nodes, their static pods and PIDs",
    example = "  moonadm lab status -o json", args = "", flags = M.flags.status },
  ["network"] = { short = "Wire pod networking for the Nodes that joined after `lab up` (a spare joined by hand)",
    example = "  moonadm lab exec s1 -- moonadm join --config .lab/cluster/s1-join.yaml\n  moonadm lab network",
    args = "", flags = M.flags.network },
  ["exec"] = { short = "Run a command as if on a lab node (its network namespace, its node directories)",
    example = "  moonadm lab exec cp1 -- moonadm certs check-expiration", args = "NODE -- CMD [ARGS...]",
    flags = M.flags.exec },
  ["kubelet"] = { short = "The lab's kubelet stand-in for one node (started by `lab up`)",
    args = "", flags = M.flags.kubelet },
  ["node"] = { short = "A real-kubelet lab node's init: containerd and the kubelet service (started by `lab up --kubelet real`)",
    args = "", flags = M.flags.node },
  ["systemctl"] = { short = "The systemctl of a real-kubelet lab node (its kubelet service)", args = "VERB [kubelet]",
    flags = {} },
  ["lb"] = { short = "The lab's TCP load balancer in front of the kube-apiservers (started by `lab up`)",
    args = "", flags = M.flags.lb },
}

-- `sub`: the subcommand, for those that take no argument (`lab down demo2` once took down the default
-- lab, not demo2, and said every process had stopped).
local function parse(spec, argv, sub)
  local flags, args, set = flags_mod.parse(spec, argv)
  if not flags then error(args, 0) end
  if sub and args[1] then
    error(("moonadm lab %s takes no argument, got %q: a lab is named with --name (moonadm lab %s --name %s)"):format(
      sub, args[1], sub, args[1]), 0)
  end
  flags.dir = paths.abs(flags.dir or paths.default_dir(flags.name))
  log.setup { verbosity = flags.v }
  return flags, args, set
end

function M.up(argv)
  local flags, _, set = parse(M.flags.up, argv, "up")
  return cluster.up(flags, set)
end

function M.down(argv) return cluster.down((parse(M.flags.down, argv, "down"))) end

function M.status(argv) return cluster.status((parse(M.flags.status, argv, "status"))) end

function M.network(argv) return cluster.network((parse(M.flags.network, argv, "network"))) end

function M.exec(argv)
  local sep
  for i, a in ipairs(argv) do if a == "--" then sep = i break end end
  if not sep then error("usage: moonadm lab exec NODE [--dir DIR] -- CMD [ARGS...]", 0) end
  local flags, args = parse(M.flags.exec, table.move(argv, 1, sep - 1, 1, {}))
  return cluster.exec(flags, args[1], table.move(argv, sep + 1, #argv, 1, {}))
end

-- (for specs: a lab's readiness and running a command on a node)
M.not_up = readiness.not_up
M.exec_on = node_exec.exec_on

function M.kubelet(argv)
  local flags = flags_mod.parse(M.flags.kubelet, argv)
  if not flags or not flags.root or not flags["node-ip"] or not flags["bin-dir"] then
    error("usage: moonadm lab kubelet --root DIR --node-ip IP --bin-dir DIR [--node-name NAME]", 0)
  end
  local ok_api, node_api = pcall(require, "lab.node_api")
  local k = kubelet.new { root = paths.abs(flags.root), node_ip = flags["node-ip"], bin_dir = paths.abs(flags["bin-dir"]),
    node_name = flags["node-name"] or core.hostname(), kubelet_version = flags["kubelet-version"] }
  k:run { healthz_port = flags["healthz-port"], api = ok_api and node_api.new or nil }
  return 0
end

function M.node(argv)
  local flags = flags_mod.parse(M.flags.node, argv)
  if not flags then error("usage: moonadm lab node --root DIR --node-name NAME --bin-dir DIR --unit FILE --images TAR --cgroup NAME", 0) end
  for _, f in ipairs { "root", "node-name", "bin-dir", "unit", "images", "cgroup" } do
    if not flags[f] then error("lab node: --" .. f .. " is required", 0) end
  end
  lab_node.new { root = flags.root, node_name = flags["node-name"], bin_dir = flags["bin-dir"], unit = flags.unit,
    images = flags.images, cgroup = flags.cgroup }:run()
  return 0
end

function M.lb(argv)
  local flags = flags_mod.parse(M.flags.lb, argv)
  if not flags or not flags.listen or not flags.backend then
    error("usage: moonadm lab lb --listen IP:PORT --backend IP:PORT [--backend ...]", 0)
  end
  lab_lb.run(flags.listen, flags.backend)
  return 0
end

function M.main(argv)
  local sub = argv[1]
  local rest = table.move(argv, 2, #argv, 1, {})
  local f = ({ up = M.up, down = M.down, status = M.status, network = M.network, exec = M.exec, kubelet = M.kubelet, lb = M.lb, node = M.node,
    systemctl = lab_systemctl.main })[sub]
  if not f then
    io.stderr:write("usage: moonadm lab up|down|status|network|exec [--dir DIR] [-o json]\n")
    return 1
  end
  return f(rest)
end

return M
