-- reset phase "remove-etcd-member": this control plane's etcd member leaves the cluster (found by
-- its peer URL in the live member list; the last member is kept at once; already gone is fine),
-- then the etcd data dir is emptied — at once when etcd no longer runs here, else by cleanup-node
-- once etcd has stopped (a running etcd would write into it again). kubeadm's messages.
-- Beyond kubeadm, it never costs etcd its quorum: when the member cannot be removed (through the
-- cluster, then through the local etcd), the phase fails before anything is stopped or deleted,
-- naming what is at stake, unless --unsafe-wipe-etcd-data says to delete the data anyway
-- (scripts/etcd/local_member.lua holds the logic).
local lazy = require "framework.lazy"
local data = lazy.require "flows.reset.data"
local clean = lazy.require "node.clean"
local etcd = lazy.require "etcd.local_member"
local fs = require "moonadm.fs"
local log = require "framework.log"

local M = {
  name = "remove-etcd-member",
  flags = { "dry-run", "kubeconfig", "unsafe-wipe-etcd-data" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Remove a local etcd member.",
  long = "Remove a local etcd member for a control plane node.",
  -- for cleanup-node: {external = true} | {data_dir =, wipe_ok = the member is out of the cluster}
  data = { "etcd_removal" },
}

function M.run(ctx)
  local r = data.get(ctx)
  log.v(1, "[reset] Checking for etcd config")
  local dir, why = etcd.data_dir(r.cluster)
  if not dir then
    log.info("[reset] No etcd config found. Assuming external etcd")
    log.info("[reset] Please, manually reset etcd to prevent further issues")
    log.v(1, "[reset] %s", tostring(why))
    ctx.data.etcd_removal = { external = true }
    return
  end
  local removal = { data_dir = dir }
  ctx.data.etcd_removal = removal
  local has_data = not clean.is_empty(dir)
  if ctx.dry_run then
    if r.cluster or has_data then
      log.info("[reset] Would remove the etcd member on this node from the etcd cluster%s",
        r.cluster and "" or " (through the local etcd)")
      log.info("[reset] Would delete contents of the etcd data directory: %s", dir)
    end
    return
  end
  if has_data and etcd.removed_before(dir) then
    log.info("[reset] This node's etcd member was removed from the cluster by an earlier reset (%s/%s)", dir, etcd.REMOVED_MARKER)
    removal.wipe_ok = true
  elseif r.cluster or has_data then
    -- without the cluster's configuration there is a member to remove only where there is data
    local how, detail, count = etcd.remove_member(ctx, r)
    if how ~= "failed" then
      removal.wipe_ok = true
      if how == "removed" and has_data then etcd.mark_removed(dir, detail) end
    elseif has_data then
      etcd.refuse_or_warn(ctx, dir, detail, count)
      removal.wipe_ok = true
    end
    if how == "failed" then
      log.warn("[reset] Failed to remove etcd member: %s, please manually remove this etcd member using etcdctl",
        tostring(detail))
    end
  end
  if not has_data then return end
  if fs.exists("/etc/kubernetes/manifests/etcd.yaml") then
    -- The kubelet still runs etcd: cleanup-node empties the dir after etcd has stopped.
    log.v(1, "[reset] etcd still runs from its manifest: its data directory %s is emptied once it has stopped", dir)
    return
  end
  etcd.clean_data_dir(dir)
end

return M
