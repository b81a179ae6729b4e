-- The local etcd member on reset: where its data lives, and its removal from the cluster.
--   dir, how = etcd.data_dir(cluster)   -- how: "cluster" | "manifest" | "default"; nil, why: external
--   how, detail, members = etcd.remove_member(ctx, r, opts)
--     how: "removed" | "not_found" | "last_member" | "failed"; members: the member count, when read
-- The member is found by its peer URL https://<advertise>:2380 in the LIVE member list, asked of
-- the endpoints the etcd pods advertise (KEP-2506 annotations), never of a stored list; when the
-- cluster cannot be read (or those endpoints fail), of the local etcd itself, with this node's
-- certificates. The last member is recognised at once (etcd.members refuses it without retrying).
local cnet = require "config.net"
local clean = require "node.clean"
local endpoints = require "etcd.endpoints"
local config = require "config"
local C = require "config.constants"
local fs = require "moonadm.fs"
local log = require "framework.log"
local manifests = require "manifests.installed"
local members_mod = require "etcd.members"

local M = {
  DEFAULT_DATA_DIR = "/var/lib/etcd",
  VOLUME = "etcd-data",
  ENDPOINTS_TIMEOUT = 30,
  LOCAL_TIMEOUT = 15, -- the local etcd answers at once or not at all
  -- written into the data dir once the member is out of the cluster, while etcd still runs: a reset
  -- killed before the data went knows on its next run that the data may go (it goes with it)
  REMOVED_MARKER = ".moonadm-member-removed",
  UNSAFE_FLAG = "unsafe-wipe-etcd-data",
}

function M.is_external(cluster)
  return cluster ~= nil and cluster.etcd ~= nil and cluster.etcd.external ~= nil
end

-- kubeadm's getEtcdDataDir: the cluster's etcd.local.dataDir; else the etcd manifest's etcd-data
-- hostPath; else (no manifest) the default. An unreadable manifest or one without the volume: nil
-- (kubeadm then assumes an external etcd).
function M.data_dir(cluster)
  if cluster and cluster.etcd and cluster.etcd["local"] and cluster.etcd["local"].dataDir then
    return cluster.etcd["local"].dataDir, "cluster"
  end
  if M.is_external(cluster) then return nil, "external etcd in the cluster's configuration" end
  log.v(1, "[reset] No kubeadm config, using etcd pod spec to get data directory")
  local pod, err = manifests.read("etcd")
  if not pod then
    if err and err:match("^no ") then return M.DEFAULT_DATA_DIR, "default" end
    return nil, err
  end
  local dir = manifests.host_path(pod, M.VOLUME)
  if not dir or dir == "" then return nil, "invalid etcd pod manifest: no " .. M.VOLUME .. " hostPath volume" end
  return dir, "manifest"
end

function M.peer_url(advertise) return cnet.etcd_peer_url(advertise) end

local function etcd_timeout(ctx)
  local t = ctx.cfg and ctx.cfg.reset and ctx.cfg.reset.timeouts and ctx.cfg.reset.timeouts.etcdAPICall
  return config.duration_seconds(t or C.timeouts.etcdAPICall) or members_mod.DEFAULT_TIMEOUT
end

-- The local etcd's client URLs: its manifest's --advertise-client-urls, else where kubeadm's etcd
-- also listens (https://127.0.0.1:2379).
function M.local_endpoints()
  local pod = manifests.read("etcd")
  local out = {}
  for u in ((pod and manifests.flag(pod, "advertise-client-urls")) or ""):gmatch("[^,%s]+") do out[#out + 1] = u end
  if #out == 0 then out[1] = "https://127.0.0.1:2379" end
  return out
end

-- One try through the given endpoints: how, detail, member count (when the list was read).
local function remove_through(ctx, r, peer, eps, opts)
  local m, merr = (opts.members or members_mod).new { endpoints = eps, cert_dir = r.cert_dir, client = "healthcheck",
    timeout = opts.timeout or etcd_timeout(ctx) }
  if not m then return "failed", merr end
  local list, lerr = m:list()
  if not list then m:close() return "failed", lerr end
  local me = members_mod.find(list, peer)
  if me then log.v(2, "[etcd] get the member id from peer: %s: %s", peer, tostring(me.id_hex)) end
  local how, rerr, kind = m:remove(peer)
  m:close()
  if not how and me and kind ~= "last_member" then
    -- A member removed through its own etcd stops at once, and may do so before it answers: the
    -- remaining members say whether the removal happened.
    local others = {}
    for _, x in ipairs(list) do
      if x ~= me then for _, u in ipairs(x.client_urls or {}) do others[#others + 1] = u end end
    end
    local o = #others > 0 and (opts.members or members_mod).new { endpoints = others, cert_dir = r.cert_dir,
      client = "healthcheck", timeout = opts.timeout or etcd_timeout(ctx) }
    if o then
      local after, aerr = o:list()
      o:close()
      if after and not members_mod.find(after, peer) then how = "removed"
      elseif not after then log.v(1, "[etcd] the remaining members could not be asked: %s", tostring(aerr)) end
    end
  end
  if how == "removed" then
    log.info("[etcd] Removed etcd member %s (%s) from the cluster", me and me.id_hex or "?", peer)
    return "removed", peer, #list
  elseif how == "not_found" then
    log.info("[etcd] No etcd member with peer URL %s in the cluster: already removed", peer)
    return "not_found", peer, #list
  elseif kind == "last_member" then
    log.info("[etcd] This is the only remaining etcd member in the etcd cluster, skip removing it")
    return "last_member", peer, #list
  end
  return "failed", rerr, me and #list or nil
end

-- Removes this node's member. r: ctx.data.reset (client, advertise, cert_dir). opts: {members=,
-- endpoints=, local_endpoints=, timeout=} for tests. Never raises: a failure is "failed" with its
-- message; the caller decides what a failure allows (remove-etcd-member keeps the data).
function M.remove_member(ctx, r, opts)
  opts = opts or {}
  if not r.advertise then
    return "failed", "this node's advertise address is unknown (no kube-apiserver pod or manifest, no etcd manifest)"
  end
  local peer = M.peer_url(r.advertise)
  local why, first_count = {}, nil
  -- The local etcd answers for the whole cluster (a member list is linearizable): it finds this
  -- member even when the API or a load balancer in front of it does not answer. Only a kubeadm
  -- etcd (its static pod manifest here): another etcd on this machine is not this node's member.
  local has_local = opts.local_endpoints ~= nil or manifests.read("etcd") ~= nil
  -- Through the endpoints the etcd pods advertise, looked up for at most `timeout` seconds:
  -- how, detail, count, and whether the lookup itself failed.
  local function through_cluster(timeout)
    local eps, err = opts.endpoints
    if not eps then eps, err = endpoints.endpoints_from_pods(r.client, { timeout = timeout }) end
    if not eps then return "failed", tostring(err), nil, true end
    log.v(1, "[etcd] endpoints from the etcd pods: %s", table.concat(eps, ", "))
    local how, detail, count = remove_through(ctx, r, peer, eps, opts)
    if how ~= "failed" then return how, detail, count end
    return "failed", "through the cluster's etcd endpoints: " .. tostring(detail), count
  end
  -- With a local etcd to ask, the etcd pods are looked up once, not waited for: right after an init
  -- the API may not list the etcd pod yet (its mirror pod comes with the kubelet's next sync), and
  -- the local etcd answers at once. They are waited for only if the local etcd fails too.
  local lookup_failed = false
  if r.client or opts.endpoints then
    local how, detail, count, lookup = through_cluster(has_local and 0 or M.ENDPOINTS_TIMEOUT)
    if how ~= "failed" then return how, detail, count end
    why[#why + 1], first_count, lookup_failed = detail, count, lookup
  else
    why[#why + 1] = "the cluster's configuration could not be read"
  end
  if not has_local then
    why[#why + 1] = "no local etcd manifest (/etc/kubernetes/manifests/etcd.yaml) to find the local etcd by"
    return "failed", table.concat(why, "; "), first_count
  end
  local leps = opts.local_endpoints or M.local_endpoints()
  log.info("[etcd] Finding this node's etcd member through the local etcd at %s", table.concat(leps, ", "))
  local how, detail, count = remove_through(ctx, r, peer, leps,
    { members = opts.members, timeout = opts.timeout or M.LOCAL_TIMEOUT })
  if how ~= "failed" then return how, detail, count end
  why[#why + 1] = "through the local etcd: " .. tostring(detail)
  if lookup_failed then
    log.info("[etcd] Waiting for the etcd pods' endpoints (up to %ds)", M.ENDPOINTS_TIMEOUT)
    local how2, detail2, count2 = through_cluster(M.ENDPOINTS_TIMEOUT)
    if how2 ~= "failed" then return how2, detail2, count2 end
    why[#why + 1] = detail2
    first_count = first_count or count2
  end
  return "failed", table.concat(why, "; "), first_count or count
end

-- Did an earlier reset take this member out of the cluster (its marker in the data dir)?
function M.removed_before(dir) return fs.exists(dir .. "/" .. M.REMOVED_MARKER) end

function M.mark_removed(dir, detail)
  local ok, err = fs.write(dir .. "/" .. M.REMOVED_MARKER, ("removed from the etcd cluster by moonadm reset at %s: %s\n")
    :format(os.date("!%Y-%m-%dT%H:%M:%SZ"), tostring(detail)), tonumber("600", 8))
  if not ok then log.warn("[reset] could not note the member's removal in %s: %s", dir, tostring(err)) end
end

-- May the data dir go? Only when this member is out of the cluster (removed now or before, never
-- there, the last one), or the user said so.
-- removed: remove-etcd-member found the member out of the cluster.
function M.wipe_allowed(ctx, removed, dir)
  if removed or M.removed_before(dir) then return true end
  return ctx.flags ~= nil and ctx.flags[M.UNSAFE_FLAG] == true
end

-- The member is (or may be) still in the cluster and its data is here: deleting the data would
-- leave the cluster a member short for its quorum. Refuses (raises) unless the flag says so.
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

-- Empties the data dir (kept itself, as kubeadm's CleanDir); a failure warns.
function M.clean_data_dir(dir)
  local n, err = clean.clean_dir(dir)
  if not n then
    log.warn("[reset] Failed to delete contents of the etcd directory: %q, error: %s", dir, tostring(err))
  elseif n > 0 then
    log.info("[reset] Deleted contents of the etcd data directory: %s", dir)
  end
end

return M
