-- Runs the reference kubeadm (.lab/bin/kubeadm, v1.35.4; another release's with bin_for) isolated, and moonadm on the same config,
-- and returns the files each wrote: used by the differential specs (tests/spec/diff_*_spec.lua).
--
-- kubeadm writes to the real /etc/kubernetes, /var/lib/kubelet and /var/lib/etcd: each run gets a
-- private mount namespace (moonadm.proc) in which /etc/kubernetes and /var/lib are bind mounts of a
-- scratch dir, so nothing reaches the host and the files can be read afterwards.
local proc = require "moonadm.proc"
local h = require "helpers"

local M = {}

M.bin = os.getenv("MOONADM_REFERENCE_KUBEADM") or (h.lab_bin .. "/kubeadm")
M.VERSION = "v1.35.4"
-- /var/lib as a whole (not /var/lib/kubelet and /var/lib/etcd), so that kubeadm creates those two
-- dirs itself and their modes can be compared; kubeadm reads nothing else under /var/lib.
M.BIND_DIRS = { "/etc/kubernetes", "/var/lib" }

-- The reference kubeadm of a release: the default release's at .lab/bin, another's in its folder
-- (lab/build-bins.sh with LAB_RELEASES).
function M.bin_for(release)
  if not release or release == M.VERSION then return M.bin end
  return h.lab_bin .. "/" .. release .. "/kubeadm"
end

-- busted's `test` (it, describe) for tests that need the reference kubeadm of release (default
-- the lab's), or `pending` where it is not built and need not be (helpers.when_built).
function M.when_built(release, test, pending)
  return h.when_built(M.bin_for(release), "make lab-bins-for-specs", test, pending)
end

-- Raises (a failing spec, never a silent pass) when the reference binary is missing or of another version.
function M.require(release)
  local bin, want = M.bin_for(release), release or M.VERSION
  local f = io.open(bin, "rb")
  if not f then
    error(("the reference kubeadm %s is missing: %s (build it with `LAB_RELEASES=%s make lab-bins`)"):format(
      want, bin, want), 0)
  end
  f:close()
  local code, out = proc.run { argv = { bin, "version", "-o", "short" } }
  if code ~= 0 or not out:find(want, 1, true) then
    error(("%s is not kubeadm %s: %s"):format(bin, want, tostring(out)), 0)
  end
end

-- Every file and directory under dir: {[relpath] = {type = "file"|"dir", mode = "600", data = ...}}.
function M.snapshot(dir, skip)
  local out = {}
  local p = io.popen("cd " .. h.q(dir) .. " && find . -mindepth 1 \\( -type f -o -type d \\) -printf '%y %m %P\\n' | sort -k3")
  for line in p:lines() do
    local t, mode, rel = line:match("^(%a) (%d+) (.+)$")
    if rel and not (skip and skip(rel)) then
      local e = { type = t == "d" and "dir" or "file", mode = mode }
      if t == "f" then e.data = h.read(dir .. "/" .. rel) end
      out[rel] = e
    end
  end
  p:close()
  return out
end

-- Copies a fixture config to dir/config.yaml, replacing @PATCHES@ with the fixture patches dir
-- and, given a release, its kubernetesVersion with that release.
function M.config(fixture, dir, release)
  local text = assert(h.read(fixture), "no fixture " .. fixture)
  text = text:gsub("@PATCHES@", h.top .. "/tests/spec/fixtures/diff/patches")
  if release then text = text:gsub("\nkubernetesVersion: v[%d.]+", "\nkubernetesVersion: " .. release) end
  local path = dir .. "/config.yaml"
  h.write(path, text)
  return path
end

-- Runs kubeadm's phases: phases = list of argument lists after `init phase` (a number instead of a
-- list: sleep that many seconds); opts.env: the whole environment, as a list of "NAME=value";
-- opts.release: whose kubeadm (default the lab's default release). Returns
-- {root = scratch dir, files = snapshot, out = {[i] = {args, code, output}}}. kubeadm sees the
-- machine's own /etc, /usr, PATH and network; only the three state dirs are private.
function M.run_kubeadm(config, phases, scratch, opts)
  opts = opts or {}
  local root = scratch .. "/kubeadm"
  local mounts = {}
  for _, d in ipairs(M.BIND_DIRS) do
    h.sh_ok("mkdir -p " .. h.q(root .. d))
    mounts[#mounts + 1] = { type = "bind", src = root .. d, dst = d }
  end
  local outs = {}
  for i, args in ipairs(phases) do
    if type(args) == "number" then os.execute("sleep " .. args); goto next end
    local argv = { M.bin_for(opts.release), "init", "phase" }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    argv[#argv + 1] = "--config"
    argv[#argv + 1] = config
    local code, output = proc.run { argv = argv, mounts = mounts, env = opts.env }
    assert(code, output)
    outs[i] = { args = args, code = code, output = output }
    ::next::
  end
  return { root = root, out = outs, files = M.snapshot(root) }
end

-- Runs moonadm's same phases into a scratch root (--root, --node-runtime none); opts.env: extra
-- environment {NAME = value}; opts.mkdirs: dirs to create under the root first (not compared).
function M.run_moonadm(config, phases, scratch, opts)
  opts = opts or {}
  local root = scratch .. "/moonadm"
  h.sh_ok("mkdir -p " .. h.q(root))
  for _, d in ipairs(opts.mkdirs or {}) do h.sh_ok("mkdir -p " .. h.q(root .. d)) end
  local outs = {}
  for i, args in ipairs(phases) do
    if type(args) == "number" then os.execute("sleep " .. args); goto next end
    local argv = { "init", "phase" }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    for _, a in ipairs { "--root", root, "--config", config, "--node-runtime", opts.runtime or "none" } do
      argv[#argv + 1] = a
    end
    local code, out, err = h.moonadm(argv, opts.env)
    outs[i] = { args = args, code = code, output = out .. err }
    ::next::
  end
  local made = {}
  for _, d in ipairs(opts.mkdirs or {}) do made[d:sub(2)] = true end
  return { root = root, out = outs, files = M.snapshot(root, function(rel)
    -- moonadm's journal, and the dirs the test created to mirror the host, are not outputs
    if rel:match("^var/lib/moonadm") then return true end
    for d in pairs(made) do
      if rel == d or d:sub(1, #rel + 1) == rel .. "/" then return true end
    end
    return false
  end) }
end

-- The host's distro CA dirs (kubeadm mounts those that exist on the host; moonadm looks under its
-- --root, the node's view): the test mirrors them under moonadm's root.
function M.host_ca_dirs()
  local out = {}
  for _, d in ipairs(require("manifests.pod").CA_CERT_DIRS) do
    local p = io.popen("test -d " .. h.q(d) .. " && echo y")
    if p:read("l") == "y" then out[#out + 1] = d end
    p:close()
  end
  return out
end

-- Preflight: the check names kubeadm mentions. kubeadm prints only failing checks; at --v=5 it logs
-- a line for each check it runs, which this maps to the check's Name() (cmd/kubeadm/app/preflight).
M.PREFLIGHT_LOG = {
  { "validating Kubernetes and kubeadm version", function() return "KubernetesVersion" end },
  { "validating if the firewall is enabled and active", function() return "Firewalld" end },
  { "validating availability of port (%d+)", function(p) return "Port-" .. p end },
  { "validating the existence of file (%S+)", function(p) return "FileAvailable-" .. p:gsub("/", "-") end },
  { "validating if the connectivity type is via proxy or direct", function() return "HTTPProxy" end },
  { "validating http connectivity to first IP address in the CIDR", function() return "HTTPProxyCIDR" end },
  { "validating the container runtime version compatibility", function() return "ContainerRuntimeVersion" end },
  { "validating the container runtime$", function() return "CRI" end },
  { "validating whether swap is enabled or not", function() return "Swap" end },
  { "validating the presence of executable (%S+)", function(x) return "FileExisting-" .. x end },
  { "running system verification checks", function() return "SystemVerification" end },
  { "checking whether the given node name is valid and reachable", function() return "Hostname" end },
  { "validating kubelet version", function() return "KubeletVersion" end },
  { 'validating if the "(%S+)" service is enabled and active', function(s) return "Service-" .. s end },
  { "validating the contents of file (%S+)", function(p) return "FileContent-" .. p:gsub("/", "-") end },
  { "validating the existence and emptiness of directory (%S+)", function(p) return "DirAvailable-" .. p:gsub("/", "-") end },
}

-- Returns the set {[name] = true} of the checks named in kubeadm's output (warnings, errors and
-- the --v=5 log lines), and the raw output.
function M.preflight_names(config, scratch)
  local r = M.run_kubeadm(config, { { "preflight", "--ignore-preflight-errors=all", "--v=5" } }, scratch)
  local names = {}
  local text = r.out[1].output
  for line in text:gmatch("[^\n]+") do
    local n = line:match("%[WARNING ([^%]]+)%]") or line:match("%[ERROR ([^%]]+)%]")
    if n then names[n] = true end
    local msg = line:match("^I%d+ [%d:.]+%s+%d+ [%w_]+%.go:%d+%] (.*)$")
    if msg then
      for _, m in ipairs(M.PREFLIGHT_LOG) do
        local s, _, cap = msg:find("^" .. m[1])
        if s then names[m[2](cap)] = true; break end
      end
    end
  end
  return names, text
end

-- Does this moonadm have `init phase addon ... --print-manifest`?
function M.moonadm_has_print_manifest(config)
  local code, out, err = h.moonadm { "init", "phase", "addon", "coredns", "--print-manifest", "--config", config }
  return code == 0 and out:find("kind: Deployment", 1, true) ~= nil, out .. err
end

return M
