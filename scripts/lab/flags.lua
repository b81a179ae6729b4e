-- `lab up`'s options checked before the lab starts anything (their spec and help are the command
-- line's, commands/lab.lua): the release, the endpoint and kubelet modes, the binaries, images and
-- Debian packages those need, the feature gates; and, once a previous lab is gone, the subnet's
-- form and the node counts. Each refusal says what to give or what to build.
local cjson = require "cjson"
local config_mod = require "config"
local fs = require "moonadm.fs"
local net = require "lab.net"
local paths = require "lab.paths"
local proc = require "moonadm.proc"
local releases = require "config.releases"

local M = {}

-- --control-plane-endpoint and --kubelet, and the one pairing of them that cannot work.
local function check_modes(flags, real)
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
  return vip
end

-- The lab's binaries in bin (a real-kubelet lab's node binaries too), of the release it runs.
local function check_binaries(bin, real, release)
  local need = { "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl" }
  if real then for _, b in ipairs { "kubelet", "containerd", "containerd-shim-runc-v2", "ctr", "crictl" } do need[#need + 1] = b end end
  for _, b in ipairs(need) do
    local f = io.open(bin .. "/" .. b, "r")
    if not f then error(("%s/%s is missing: run `make %s` first"):format(bin, b, real and "lab-bins-node" or "lab-bins"), 0) end
    f:close()
  end
  if release ~= releases.DEFAULT and not fs.exists(bin .. "/images/kube-apiserver:" .. release) then
    error(("%s/images/kube-apiserver:%s is missing: build the release with `LAB_RELEASES=%s make lab-bins`"):format(
      bin, release, release), 0)
  end
  if real and release ~= releases.DEFAULT and not io.open(("%s/%s/kubelet"):format(bin, release), "r") then
    error(("%s/%s/kubelet is missing: build the release's node binaries and images with `LAB_RELEASES=%s make lab-bins-node`")
      :format(bin, release, release), 0)
  end
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

-- What a real-kubelet node runs besides the lab's binaries: Debian's runc and CNI plugins
-- (tools/deps.sh; without them containerd fails later, less clearly) and the image archive.
local function check_real_node(images, release)
  for _, f in ipairs { "/usr/sbin/runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback" } do
    if not fs.exists(f) then error(("%s is missing: run `make deps` (runc, containernetworking-plugins)"):format(f), 0) end
  end
  if not fs.exists(images) then
    error(("%s is missing: run `make lab-bins-node` first (it builds the lab's images)"):format(images), 0)
  end
  check_archive(images, release)
end

-- Checks flags (normalizing --kubernetes-version to its "v" form) → the options up runs with:
-- {bin = the binaries' dir, real = --kubelet real, vip = --control-plane-endpoint vip,
-- images = the archive's path, gates = the parsed --feature-gates or nil, release = the release}.
function M.check(flags)
  local bin = paths.abs(flags["bin-dir"] or paths.default_bin())
  local real = flags.kubelet == "real"
  -- the release the lab runs: its manifests name it, the stand-in runs that release's binaries
  if flags["kubernetes-version"] then flags["kubernetes-version"] = "v" .. flags["kubernetes-version"]:gsub("^v", "") end
  local release = flags["kubernetes-version"] or releases.DEFAULT
  if not releases.of(release) then error("--kubernetes-version: " .. select(2, releases.of(release)), 0) end
  local vip = check_modes(flags, real)
  check_binaries(bin, real, release)
  local images = paths.abs(flags.images or paths.default_images())
  if real then check_real_node(images, release) end
  local ok, err = net.check()
  if not ok then error(err, 0) end
  local gates
  if flags["feature-gates"] then
    gates, err = config_mod.parse_feature_gates(flags["feature-gates"])
    if not gates then error(err, 0) end
  end
  return { bin = bin, real = real, vip = vip, images = images, gates = gates, release = release }
end

-- The lab's shape: a given --subnet's form (set: the flags given) and at least one control plane.
function M.check_shape(flags, set)
  if set.subnet and not net.valid_subnet(flags.subnet) then
    error(("--subnet %q: give a /24 as its first three octets, e.g. %s"):format(flags.subnet, net.SUBNET), 0)
  end
  if flags["control-planes"] < 1 then error("--control-planes must be at least 1", 0) end
end

return M
