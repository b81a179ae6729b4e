-- The local etcd member on reset: where its data lives, and its removal from the cluster.
--   dir, how = etcd.data_dir(cluster)   -- how: "cluster" | "manifest" | "default"; nil, why: external
--   how, detail, members = etcd.remove_member(ctx, r, opts)
--     how: "removed" | "not_found" | "last_member" | "failed"; members: the member count, when read
-- The member is found by its peer URL https://<advertise>:2380 in the LIVE member list, asked of
-- the endpoints the etcd pods advertise (KEP-2506 annotations), never of a stored list; when the
-- cluster cannot be read (or those endpoints fail), of the local etcd itself, with this node's
-- certificates. The last member is recognised at once (etcd.members refuses it without retrying).
local endpoints = require "etcd.endpoints"
local config = require "config"
local C = require "config.constants"
local log = require "log"
local manifests = require "reset.manifests"
local members_mod = require "etcd.members"

local M = {
  DEFAULT_DATA_DIR = "/var/lib/etcd",
  VOLUME = "etcd-data",
  ENDPOINTS_TIMEOUT = 30,
  LOCAL_TIMEOUT = 15, -- the local etcd answers at once or not at all
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

function M.peer_url(advertise)
  if advertise:find(":", 1, true) then return ("https://[%s]:2380"):format(advertise) end
  return ("https://%s:2380"):format(advertise)
end

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
  local why = {}
  if r.client or opts.endpoints then
    local eps, err = opts.endpoints
    if not eps then eps, err = endpoints.endpoints_from_pods(r.client, { timeout = M.ENDPOINTS_TIMEOUT }) end
    if eps then
      log.v(1, "[etcd] endpoints from the etcd pods: %s", table.concat(eps, ", "))
      local how, detail, count = remove_through(ctx, r, peer, eps, opts)
      if how ~= "failed" then return how, detail, count end
      why[#why + 1] = "through the cluster's etcd endpoints: " .. tostring(detail)
    else
      why[#why + 1] = tostring(err)
    end
  else
    why[#why + 1] = "the cluster's configuration could not be read"
  end
  -- The local etcd answers for the whole cluster (a member list is linearizable): it finds this
  -- member even when the API or a load balancer in front of it does not answer.
  local leps = opts.local_endpoints or M.local_endpoints()
  log.info("[etcd] Finding this node's etcd member through the local etcd at %s", table.concat(leps, ", "))
  local how, detail, count = remove_through(ctx, r, peer, leps,
    { members = opts.members, timeout = opts.timeout or M.LOCAL_TIMEOUT })
  if how ~= "failed" then return how, detail, count end
  why[#why + 1] = "through the local etcd: " .. tostring(detail)
  return "failed", table.concat(why, "; "), count
end

return M
