-- Lost-quorum recovery of a stacked etcd (issue 43): on the one control plane whose member survives,
-- `moonadm etcd recover --yes` makes its data the whole cluster, as etcd's disaster-recovery guide
-- does by hand: the member restarts once with --force-new-cluster (a single-member cluster with the
-- member's own data, ID and keys), then again without it. Never while this member or another has a
-- leader: the quorum stands, or this node is the one cut off, and a forced cluster would split it.
-- The lost control planes then rejoin with `reset` + `join`. The state is the manifest itself, so a run killed anywhere converges when run
-- again: with the flag in the manifest the run goes on from the restart; without it and with a
-- quorum there is nothing to do.
--   how = recover.run(ctx, {yes=, settle=}) -- how: "recovered" | "quorum" (nothing to do); raises
--   m, ep = recover.local_member(ctx); st = recover.wait_single(m, timeout [, after_term]) (restore's too)
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local log = require "framework.log"
local capi = require "cluster.api"
local config = require "config"
local cnet = require "config.net"
local manifests = require "manifests"
local installed = require "manifests.installed"
local members = require "etcd.members"
local nodeview = require "node.view"
local control_plane = require "upgrade.control_plane"
local restart = require "renewal.restart"

local M = {
  FLAG = "--force-new-cluster",
  RECOVERED = "moonadm.io/etcd-recovered-at", -- set on the manifest without the flag: when it was recovered
  PREFIX = "[etcd/recover]",
  SETTLE = 5, -- seconds the member must show no leader before its quorum counts as lost
}

local function manifest_path() return manifests.path("etcd") end

-- The etcd manifest (manifests.installed reads it): the Pod and its container's command list.
local function read_manifest()
  local pod, err = installed.read("etcd")
  if not pod then
    error(("%s %s: `etcd recover` runs on a control plane with a stacked etcd member"):format(M.PREFIX, err), 0)
  end
  local c = type(pod.spec.containers) == "table" and pod.spec.containers[1]
  if type(c) ~= "table" or type(c.command) ~= "table" then
    error(("%s %s: not etcd's static Pod manifest (no container command)"):format(M.PREFIX, manifest_path()), 0)
  end
  return pod, c.command
end

local function has_flag(command)
  for i, a in ipairs(command) do
    if a == M.FLAG or a == M.FLAG .. "=true" then return i end
  end
end

local function write_manifest(pod)
  local text = manifests.encode(pod)
  local ok, err = fs.write(manifest_path(), text, "0600")
  if not ok then error(("%s writing %s: %s"):format(M.PREFIX, manifest_path(), err), 0) end
  return text
end

-- A client of this node's own member only (never another: it may be the one that is gone).
function M.local_member(ctx)
  local ep = cnet.etcd_client_url(nodeview.advertise_address(ctx))
  local m, err = members.new { endpoints = { ep }, cert_dir = fs.path(config.cert_dir(ctx.cfg.cluster)),
    dial_timeout = 2, request_timeout = 3, timeout = 3 }
  if not m then error(("%s %s"):format(M.PREFIX, err), 0) end
  return m, ep
end

-- The member's status, watched for `settle` seconds (longer than etcd's election timeout): the last
-- status and the leader seen, if any. Only a member that shows no leader the whole time has lost its
-- quorum: one with a leader may still fail etcd's /health (an alarm, a defragmentation, a slow disk)
-- with its quorum whole, and a forced cluster there would split the cluster in two.
local function watch(m, ep, settle)
  local deadline = core.monotonic() + settle
  while true do
    local st, err = m:status()
    if not st then
      error(("%s this node's etcd member does not answer at %s: %s. Recovery takes its data from the running "
        .. "member: its manifest must be in place and the kubelet running it"):format(M.PREFIX, ep, err), 0)
    end
    if st.leader ~= "0" then return st, st.leader end
    if core.monotonic() >= deadline then return st, nil end
    core.sleep(0.5)
  end
end

-- Waits until the member is the only one and its own leader, in a raft term above `after` when given
-- (a restarted member campaigns anew: the term tells the new process from the one before).
function M.wait_single(m, timeout, after)
  return capi.poll("this member to lead a cluster of its own", timeout, 0.5, function()
    local st, err = m:status()
    if not st then return nil, err end
    if st.leader ~= st.member_id then return nil, "its leader is " .. tostring(st.leader) end
    if after and not (math.type(st.raft_term) == "integer" and st.raft_term > after) then
      return nil, ("still raft term %s: not restarted yet"):format(tostring(st.raft_term))
    end
    local list, lerr = m:list()
    if not list then return nil, lerr end
    if #list ~= 1 then return nil, ("%d members"):format(#list) end
    return st
  end)
end

-- The other members, asked each on its own: the first that has a leader (this node is the one cut
-- off, and forcing a cluster here would split it in two), or nil. The member list comes from this
-- member's own store (the gateway's list is not linearizable: it answers without a quorum).
local function other_with_leader(ctx, m, me)
  local list, err = m:list_local()
  if not list then
    error(("%s listing the members this member knows: %s. Not recovering without knowing that none of the others " ..
      "still has a quorum"):format(M.PREFIX, tostring(err)), 0)
  end
  local cdir = fs.path(config.cert_dir(ctx.cfg.cluster))
  for _, o in ipairs(list) do
    if o.id ~= me and #o.client_urls > 0 then
      local c, cerr = members.new { endpoints = { o.client_urls[1] }, cert_dir = cdir, dial_timeout = 2,
        request_timeout = 3, timeout = 3 }
      if not c then error(("%s %s"):format(M.PREFIX, tostring(cerr)), 0) end
      local st, serr = c:status()
      c:close()
      if st and st.leader ~= "0" then return o, st end
      log.info("%s Member %s (%s): %s", M.PREFIX, o.name ~= "" and o.name or o.id_hex, o.client_urls[1],
        st and ("no leader, raft index " .. tostring(st.raft_index)) or ("does not answer: " .. tostring(serr)))
    end
  end
end

function M.run(ctx, opts)
  opts = opts or {}
  local node = restart.this_node(ctx)
  local pod, command = read_manifest()
  -- (with the flag in the manifest the decision was made: the kubelet may have restarted etcd with it
  -- already, and going on, --yes or not, is the only way back to a member that never forces again)
  local m <close>, ep = M.local_member(ctx)
  local forced = has_flag(command)
  if not forced then
    local st, leader = watch(m, ep, opts.settle or M.SETTLE)
    if leader then
      local list, lerr = m:list_local()
      if not list then log.v(1, "%s listing the members: %s", M.PREFIX, tostring(lerr)) end
      log.info("%s etcd has a leader, member %s%s: its quorum stands. Nothing to recover (a member lost a moment " ..
        "ago: the leader steps down within seconds; run this again then)", M.PREFIX, leader,
        list and (", in a cluster of " .. #list .. " members") or "")
      return "quorum"
    end
    log.info("%s This node's member %s (etcd %s) has had no leader for %ds: the cluster lost its quorum, or this " ..
      "node is cut off from it", M.PREFIX, st.member_id, st.version, opts.settle or M.SETTLE)
    local alive = other_with_leader(ctx, m, st.member_id)
    if alive then
      error(("%s Member %s at %s has a leader: this node is cut off from the cluster, the cluster has not " ..
        "lost its quorum. Recovering here would split it in two: mend this node's network instead (or reset it " ..
        "and join it again)"):format(M.PREFIX, alive.name, alive.client_urls[1]), 0)
    end
    log.info("%s Its data: raft index %s, applied %s, %s bytes", M.PREFIX, tostring(st.raft_index),
      tostring(st.raft_applied_index), tostring(st.db_size))
    if not opts.yes then
      error(("%s Not recovering without --yes: this member's data becomes the whole cluster, and writes the " ..
        "lost members acknowledged that it had not received yet are lost with them. Take a snapshot first " ..
        "(moonadm etcd snapshot save FILE); run again with --yes to go on"):format(M.PREFIX), 0)
    end
    command[#command + 1] = M.FLAG
    write_manifest(pod)
    log.info("%s Restarting etcd with %s: a cluster of this member alone, with its data", M.PREFIX, M.FLAG)
  else
    log.info("%s The etcd manifest already has %s (an earlier run): going on", M.PREFIX, M.FLAG)
  end
  local timeout = capi.timeout(ctx, "upgradeManifests")
  local t0 = core.monotonic()
  local ok, st = pcall(M.wait_single, m, timeout)
  if not ok then
    error(("%s %s. The etcd manifest still has %s: run `moonadm etcd recover` again (it goes on) before any " ..
      "node joins"):format(M.PREFIX, tostring(st), M.FLAG), 0)
  end
  log.info("%s Member %s leads a cluster of its own after %s (raft term %s)", M.PREFIX, st.member_id,
    capi.go_duration(core.monotonic() - t0), tostring(st.raft_term))
  -- The flag goes at once: its work is done, and a later restart must never force a cluster again.
  table.remove(command, has_flag(command))
  pod.metadata = type(pod.metadata) == "table" and pod.metadata or {}
  pod.metadata.annotations = type(pod.metadata.annotations) == "table" and pod.metadata.annotations or {}
  pod.metadata.annotations[M.RECOVERED] = os.date("!%Y-%m-%dT%H:%M:%SZ")
  write_manifest(pod)
  log.info("%s Restarting etcd without %s", M.PREFIX, M.FLAG)
  t0 = core.monotonic()
  M.wait_single(m, timeout, st.raft_term)
  log.info("%s etcd restarted without %s after %s", M.PREFIX, M.FLAG, capi.go_duration(core.monotonic() - t0))
  control_plane.wait_healthy(ctx, "etcd", capi.timeout(ctx, "controlPlaneComponentHealthCheck"), M.PREFIX)
  -- the operator's next step is kubectl: the API this node serves is back before we say so
  control_plane.wait_healthy(ctx, "kube-apiserver", capi.timeout(ctx, "controlPlaneComponentHealthCheck"), M.PREFIX)
  log.info("%s etcd has a quorum again: one member, %s. The other control planes rejoin with `moonadm reset` " ..
    "then `moonadm join --control-plane` (a new certificate key from `moonadm init phase upload-certs " ..
    "--upload-certs`)", M.PREFIX, node)
  return "recovered"
end

return M
