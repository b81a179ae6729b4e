-- Static Pod manifests: `require "manifests"`. Builds each control-plane component's Pod from the
-- configuration, applies the user's patches, encodes it stably (same config, same bytes) and writes
-- it atomically with mode 0600, optionally keeping a backup of the previous file.
local yaml = require "moonadm.yaml"
local fs = require "moonadm.fs"
local log = require "framework.log"
local pod = require "manifests.pod"
local manifests_apiserver = require "manifests.apiserver"
local controller_manager = require "manifests.controller_manager"
local manifests_scheduler = require "manifests.scheduler"
local manifests_etcd = require "manifests.etcd"
local patches = require "manifests.patches"

local M = {}

M.DIR = pod.MANIFESTS_DIR

M.builders = {
  ["kube-apiserver"] = function(ctx) return manifests_apiserver.build(ctx) end,
  ["kube-controller-manager"] = function(ctx) return controller_manager.build(ctx) end,
  ["kube-scheduler"] = function(ctx) return manifests_scheduler.build(ctx) end,
  ["etcd"] = function(ctx, opts) return manifests_etcd.build(ctx, opts) end,
}

function M.path(component)
  return ("%s/%s.yaml"):format(M.DIR, component)
end

-- The Pod table of a component, patched with the user's patches for that target.
function M.generate(ctx, component, opts)
  local build = M.builders[component]
  if not build then error("unknown control-plane component " .. tostring(component), 0) end
  local p = build(ctx, opts)
  return patches.apply_for(ctx, component, p)
end

function M.encode(p)
  return yaml.encode(p)
end

-- Writes a static Pod manifest. opts.backup_dir: copy an existing manifest there first (upgrade).
-- Returns changed (bool), the text, and the backup path if one was made.
function M.write(ctx, component, p, opts)
  opts = opts or {}
  local text = M.encode(p)
  local path = M.path(component)
  ctx:mkdir(M.DIR, "0700")
  local backup
  if opts.backup_dir and ctx:exists(path) and not ctx.dry_run then
    backup = ("%s/%s.yaml"):format(opts.backup_dir, component)
    local ok, err = fs.mkdir(opts.backup_dir, "0700")
    if ok then ok, err = fs.copy(path, backup) end
    if not ok then error(("backing up %s to %s: %s"):format(path, backup, err), 0) end
  end
  local changed = ctx:write(path, text, "0600")
  return changed, text, backup
end

-- Generates and writes one component; logs as kubeadm does.
function M.create(ctx, component, opts)
  local p = M.generate(ctx, component, opts)
  return M.write(ctx, component, p, opts)
end

-- A control-plane component as init's control-plane phase and a control-plane join write it,
-- with kubeadm's lines ("Using manifest folder" once per run).
function M.create_logged(ctx, component)
  if not ctx.data.manifest_dir_logged then
    log.info("[control-plane] Using manifest folder %q", M.DIR)
    ctx.data.manifest_dir_logged = true
  end
  log.info("[control-plane] Creating static Pod manifest for %q", component)
  return M.create(ctx, component)
end

return M
