-- Node runtime `lab`: the node's kubelet is the lab's stand-in (`moonadm lab kubelet`), started by
-- `moonadm lab up` before any flow runs and watching the node's manifests and kubelet files by
-- itself. Starting or restarting it is therefore a nudge, and its health is its healthz endpoint on
-- 127.0.0.1:10248 inside the node's network namespace — exactly where kubeadm's wait looks.
local healthz = require "kubelet.healthz"
local log = require "framework.log"
local releases = require "config.releases"

local M = { name = "lab" }

-- The images the stand-in runs: the static Pods' (it runs no addon).
M.RUNS = { ["kube-apiserver"] = true, ["kube-controller-manager"] = true, ["kube-scheduler"] = true, etcd = true }

-- The lab's bin dir, as `lab exec` tells a node's commands (nil outside a lab).
function M.bin_dir() return os.getenv("MOONADM_LAB_BIN") end

local function host_exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

-- image "registry.k8s.io/kube-apiserver:v1.35.4" -> "kube-apiserver"
function M.image_binary(image)
  local last = (image or ""):match("([^/]+)$") or ""
  return (last:gsub("[:@].*$", ""))
end

-- image "registry.k8s.io/kube-apiserver:v1.36.3" -> "kube-apiserver:v1.36.3" (nil without a tag)
local function image_key(image)
  local last = (image or ""):match("([^/]+)$") or ""
  last = last:gsub("@.*$", "")
  if last:find(":", 1, true) then return last end
end

-- The binary of the release an image names: bin_dir/images/<name>:<tag>, which lab/build-bins.sh
-- links for every release it built (so a manifest rewritten from :v1.35.4 to :v1.36.3 runs the new
-- release). nil when the lab has no images/ folder (an older .lab/bin: the command's name is used);
-- nil, message when it has one but not this tag, as a pull of an image nobody built would fail.
function M.image_path(bin_dir, image)
  local dir = bin_dir .. "/images"
  if not host_exists(dir) then return nil end
  local key = image_key(image)
  if not key then return nil end
  local path = dir .. "/" .. key
  if host_exists(path) then return path end
  -- the default release is also at the top of bin_dir (an images/ folder made by building another
  -- release alone may not have it)
  local tag = key:match(":(.*)$")
  if tag == releases.DEFAULT or tag == releases.etcd_tag(releases.DEFAULT) then return nil end
  return nil, ("the lab has no binary for image %s (%s is missing): build its release with "
    .. "`LAB_RELEASES=<release> make lab-bins`"):format(image, path)
end

-- The ImagePull check on a stand-in node: the images it would run, each with a binary → nil, or
-- the message of the first it has not (nil outside a lab: nothing to tell).
function M.image_missing(image)
  local bin = M.bin_dir()
  if not bin or not M.RUNS[M.image_binary(image)] then return nil end
  local _, err = M.image_path(bin, image)
  return err
end

-- One probe of the stand-in's healthz (kubelet/healthz.lua).
function M.kubelet_healthy(_ctx, host, port)
  return healthz.probe(host or "127.0.0.1", port or 10248)
end

function M.start_kubelet(ctx)
  -- The stand-in is single-threaded: while it waits on the API it answers healthz a little late.
  local healthy = false
  for _ = 1, 10 do
    healthy = M.kubelet_healthy(ctx)
    if healthy then break end
  end
  if not healthy then
    log.warn("[kubelet-start] the lab's kubelet stand-in does not answer on 127.0.0.1:10248: is this node in a lab (`moonadm lab exec NODE -- ...`)?")
  end
  return true
end

M.restart_kubelet = M.start_kubelet

function M.stop_kubelet()
  -- The stand-in keeps running between flows, as a real kubelet service would after `systemctl stop`
  -- only through `moonadm lab down`.
  return true
end

return M
