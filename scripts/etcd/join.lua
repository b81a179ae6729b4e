-- A joining control plane's local etcd member (kubeadm's etcd-join, and control-plane-join/etcd in
-- the old order): endpoints from the etcd pods' annotations (KEP-2506), health first (check-etcd),
-- then add this member as a learner (idempotent by peer URL), write the etcd manifest with the
-- returned members as --initial-cluster and --initial-cluster-state=existing, wait for it to join,
-- and promote it once it has caught up.
local cnet = require "config.net"
local config = require "config"
local core = require "moonadm.core"
local duration = require "config.duration"
local cadmin = require "cluster.admin"
local endpoints = require "etcd.endpoints"
local log = require "framework.log"
local manifests = require "manifests"
local members = require "etcd.members"
local nodeview = require "node.view"
local manifests_etcd = require "manifests.etcd"

local M = {}

local function local_etcd(ctx)
  return nodeview.is_control_plane(ctx) and not ((ctx.cfg.cluster or {}).etcd or {}).external
end

function M.client(ctx)
  if ctx.data.etcd then return ctx.data.etcd end
  local timeouts = ctx.cfg.join.timeouts or {}
  local timeout = config.duration_seconds(timeouts.etcdAPICall or "2m0s") or 120
  local urls, err = endpoints.endpoints_from_pods(cadmin.client(ctx), {
    timeout = config.duration_seconds(timeouts.kubernetesAPICall or "1m0s") or 60 })
  if not urls then error("[etcd] finding the etcd endpoints from the etcd pods: " .. tostring(err), 0) end
  local m, merr = members.new { endpoints = urls, cert_dir = config.cert_dir(ctx.cfg.cluster),
    client = "healthcheck", timeout = timeout }
  if not m then error("[etcd] " .. tostring(merr), 0) end
  -- kubeadm's NewFromCluster then Sync(): the members' own client URLs replace the pods' list, so
  -- a stale etcd mirror pod of a reset node does not count.
  local synced = {}
  local list, lerr = m:list()
  if not list then m:close(); error("[etcd] error syncing endpoints with etcd: " .. tostring(lerr), 0) end
  for _, mem in ipairs(list) do
    for _, u in ipairs(mem.client_urls or {}) do synced[#synced + 1] = u end
  end
  table.sort(synced)
  table.sort(urls)
  if #synced > 0 and table.concat(synced, ",") ~= table.concat(urls, ",") then
    m:close()
    m, merr = members.new { endpoints = synced, cert_dir = config.cert_dir(ctx.cfg.cluster),
      client = "healthcheck", timeout = timeout }
    if not m then error("[etcd] " .. tostring(merr), 0) end
  end
  ctx.data.etcd = m
  return m
end

function M.check(ctx)
  if not local_etcd(ctx) then return end
  log.info("[check-etcd] Checking that the etcd cluster is healthy")
  local ok, err = M.client(ctx):check_health()
  if not ok then error("[check-etcd] the etcd cluster is not healthy: " .. tostring(err), 0) end
end

function M.join(ctx)
  if not local_etcd(ctx) then return end
  local addr = nodeview.advertise_address(ctx)
  local peer, client_url = cnet.etcd_peer_url(addr), cnet.etcd_client_url(addr)
  local name = nodeview.name(ctx)
  local m = M.client(ctx)
  if ctx.dry_run then
    log.info("[dryrun] Would add etcd member: %s=%s", name, peer)
    return
  end
  local cluster, member = m:add_learner(peer, name, { client_url = client_url })
  if not cluster then error("[etcd] " .. tostring(member), 0) end
  local initial = {}
  for _, e in ipairs(cluster) do initial[#initial + 1] = { name = e.name, url = e.peer_url } end
  ctx:mkdir(manifests_etcd.data_dir(ctx.cfg.cluster), "0700")
  log.info('[etcd] Creating static Pod manifest for "etcd"')
  manifests.create(ctx, "etcd", { initial_cluster = initial, existing = true })
  -- A learner that never catches up must not stay behind: it would count in every later quorum
  -- check and block the next join with the same peer URL. Remove it, then say how to retry.
  local function fail(what, err)
    local how, rerr = m:remove(peer)
    local cleanup = how and ("the learner %s was removed again"):format(peer)
      or ("removing the learner %s failed too: %s"):format(peer, tostring(rerr))
    error(("[etcd] %s: %s; %s. Fix the cause and run the same join again (add --resume to keep the work done)")
      :format(what, tostring(err), cleanup), 0)
  end
  local report, werr = m:wait_for_member(peer)
  if not report then fail("the new etcd member did not join", werr) end
  -- the learner is promoted once it has caught up with the leader: retried until m.timeout
  log.info("[etcd] Waiting for the learner %s to catch up with the leader and be promoted to a voting member. " ..
    "This can take up to %s", peer, duration.format_seconds(m.timeout))
  local t0 = core.monotonic()
  local promoted, perr = m:promote(peer)
  if not promoted then fail("the new etcd member could not be promoted", perr) end
  log.info("[etcd] The learner %s is a voting member after %s", peer, duration.format_seconds(core.monotonic() - t0))
end

return M
