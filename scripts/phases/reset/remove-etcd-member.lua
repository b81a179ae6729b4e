-- reset phase "remove-etcd-member": this control plane's etcd member leaves the cluster (found by
-- its peer URL in the live member list; the last member is kept at once; already gone is fine),
-- then the etcd data dir is emptied — at once when etcd no longer runs here, else by cleanup-node
-- once etcd has stopped (a running etcd would write into it again). kubeadm's messages.
-- Beyond kubeadm, it never costs etcd its quorum: when the member cannot be removed (through the
-- cluster, then through the local etcd), the phase fails before anything is stopped or deleted,
-- naming what is at stake, unless --unsafe-wipe-etcd-data says to delete the data anyway.
local data = require "reset.data"
local clean = require "reset.clean"
local etcd = require "reset.etcd"
local fs = require "moonadm.fs"
local log = require "log"

local M = {
  name = "remove-etcd-member",
  flags = { "dry-run", "kubeconfig" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Remove a local etcd member.",
  long = "Remove a local etcd member for a control plane node.",
}

function M.run(ctx)
  local r = data.get(ctx)
  log.v(1, "[reset] Checking for etcd config")
  local dir, why = etcd.data_dir(r.cluster)
  if not dir then
    log.info("[reset] No etcd config found. Assuming external etcd")
    log.info("[reset] Please, manually reset etcd to prevent further issues")
    log.v(1, "[reset] %s", tostring(why))
    r.etcd_external = true
    return
  end
  r.etcd_data_dir = dir
  if ctx.dry_run then
    if r.cluster then
      log.info("[reset] Would remove the etcd member on this node from the etcd cluster")
      log.info("[reset] Would delete contents of the etcd data directory: %s", dir)
    elseif not clean.is_empty(dir) then
      log.info("[reset] Would remove the etcd member on this node from the etcd cluster (through the local etcd)")
      log.info("[reset] Would delete contents of the etcd data directory: %s", dir)
    end
    return
  end
  -- Without the cluster's configuration there is a member to remove only where there is data.
  if r.cluster or not clean.is_empty(dir) then
    local how, detail, count = etcd.remove_member(ctx, r)
    r.etcd_member = how
    if how == "failed" and not clean.is_empty(dir) then M.refuse_or_warn(ctx, dir, detail, count) end
    if how == "failed" then
      log.warn("[reset] Failed to remove etcd member: %s, please manually remove this etcd member using etcdctl",
        tostring(detail))
    end
  end
  if clean.is_empty(dir) then return end
  if fs.exists("/etc/kubernetes/manifests/etcd.yaml") then
    -- The kubelet still runs etcd: cleanup-node empties the dir after etcd has stopped.
    log.v(1, "[reset] etcd still runs from its manifest: its data directory %s is emptied once it has stopped", dir)
    r.etcd_data_dir_pending = true
    return
  end
  M.clean_data_dir(dir)
end

M.UNSAFE_FLAG = "unsafe-wipe-etcd-data"

-- The member is (or may be) still in the cluster and its data is here: deleting it would leave
-- the cluster a member short for its quorum. Refuse, unless the flag says so.
function M.refuse_or_warn(ctx, dir, detail, count)
  local risk = count and ("this member is still in the cluster: removing its data leaves %d of %d members")
      :format(count - 1, count)
    or "this member may still be in the etcd cluster (its membership could not be read): removing its data " ..
      "can leave the cluster without a quorum"
  if ctx.flags and ctx.flags[M.UNSAFE_FLAG] then
    log.warn("[reset] --%s: deleting the etcd data directory %s although %s", M.UNSAFE_FLAG, dir, risk)
    return
  end
  error(("refusing to delete the etcd data directory %s: %s.\nThe etcd member could not be removed: %s.\n" ..
    "Nothing was stopped or deleted. Remove this member from a healthy one (etcdctl member remove ID) or bring " ..
    "the cluster back, then run the reset again; --%s deletes the data anyway."):format(dir, risk, tostring(detail),
    M.UNSAFE_FLAG), 0)
end

function M.clean_data_dir(dir)
  local n, err = clean.clean_dir(dir)
  if not n then
    log.warn("[reset] Failed to delete contents of the etcd directory: %q, error: %s", dir, tostring(err))
  elseif n > 0 then
    log.info("[reset] Deleted contents of the etcd data directory: %s", dir)
  end
end

return M
