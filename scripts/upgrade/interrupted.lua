-- An etcd rollback cut short (the process killed) between stopping etcd — its manifest removed,
-- upgrade/control_plane.lua's stop_etcd — and writing the previous manifest back leaves a local etcd
-- without a manifest, so no API server answers and no later command could read the cluster. The
-- rollback marks its backup dir while the manifest is away; the next upgrade, before it reads
-- anything from the cluster, puts that backup's etcd manifest back and drops a data dir restore's
-- staging copy (the data dir itself is whole at every instant: etcd/data_dir.lua).
local fs = require "moonadm.fs"
local yaml = require "moonadm.yaml"
local args = require "kube.args"
local log = require "framework.log"
local manifests = require "manifests"
local data_dir = require "etcd.data_dir"

local M = {}

M.TMP = "/etc/kubernetes/tmp"
M.MARK = "etcd-rollback-in-progress"

-- Finishes an interrupted etcd rollback, if one is marked; a no-op otherwise (and under --dry-run).
function M.recover(ctx)
  local path = manifests.path("etcd")
  if ctx.dry_run or fs.exists(path) then return end
  local dirs = fs.list(M.TMP) or {}
  table.sort(dirs)
  for i = #dirs, 1, -1 do
    local dir = M.TMP .. "/" .. dirs[i]
    local backup, mark = dir .. "/etcd.yaml", dir .. "/" .. M.MARK
    if dirs[i]:match("^kubeadm%-backup%-manifests%-") and fs.exists(mark) and fs.exists(backup) then
      log.warn("[upgrade/rollback] %s is missing: a rollback was cut short; restoring it from %s", path, backup)
      local text, rerr = fs.read(backup)
      local ok, err
      if text then ok, err = fs.write(path, text, "0600") end
      if not ok then error(("[upgrade/rollback] restoring %s from %s: %s"):format(path, backup, err or rerr), 0) end
      local docs = yaml.decode(text, backup)
      local pod = docs and docs[1]
      local c = type(pod) == "table" and type(pod.spec) == "table" and type(pod.spec.containers) == "table"
        and pod.spec.containers[1]
      local ddir = type(c) == "table" and args.of_container(c, "data-dir") or "/var/lib/etcd"
      if fs.exists(ddir .. "/" .. data_dir.STAGING) then fs.remove_tree(ddir .. "/" .. data_dir.STAGING) end
      fs.remove(mark)
      return
    end
  end
end

return M
