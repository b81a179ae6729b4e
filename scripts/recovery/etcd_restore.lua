-- A stacked etcd cluster restored from a snapshot (issue 43), the way k3s/RKE2's cluster-reset-restore
-- and Talos' bootstrap --recover-from do it: on one control plane the snapshot becomes a cluster of
-- its member alone, then the other control planes join again (`reset` + `join --control-plane`, the
-- same path as after `etcd recover`). Each step is one node's, so nothing has to be coordinated
-- across nodes while the API is down, and no running member is ever split from its peers: the restore
-- refuses while any other member answers (they leave first, with `moonadm reset`, which removes their
-- members one by one with the quorum whole).
-- Stages, written down in STATE/plan.json before each is left, so a run killed anywhere goes on when
-- run again with the same snapshot:
--   stopping  the apiserver's and etcd's manifests are copied into STATE and taken out of the manifests
--             dir; the kubelet stops both (their ports stay free)
--   restored  etcdutl wrote a new data dir from the snapshot (revisions bumped, the old ones compacted,
--             so every watcher relists); it replaced the data dir's contents, the old ones kept beside it
--   etcd      etcd's manifest is back: a cluster of one member, leading itself
--   (done)    the apiserver's manifest is back and healthy; STATE is removed
--   how = restore.run(ctx, {file=, yes=, etcdutl=})  -- "restored"; raises otherwise
local cjson = require "cjson"
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local yaml = require "moonadm.yaml"
local log = require "framework.log"
local capi = require "cluster.api"
local config = require "config"
local cnet = require "config.net"
local manifests = require "manifests"
local installed = require "manifests.installed"
local members = require "etcd.members"
local etcdutl = require "etcd.etcdutl"
local image_tool = require "etcd.image_tool"
local endpoints = require "etcd.endpoints"
local snapshot = require "etcd.snapshot"
local data_dir = require "etcd.data_dir"
local nodeview = require "node.view"
local control_plane = require "upgrade.control_plane"
local quorum = require "recovery.etcd_quorum"

local M = {
  STATE = "/etc/kubernetes/tmp/moonadm-etcd-restore",
  RESTORED = "moonadm.io/etcd-restored-from", -- on etcd's manifest: the snapshot's sha256 and the time
  PREFIX = "[etcd/restore]",
  STOP_TIMEOUT = 120, -- seconds for the kubelet to stop a component whose manifest left
  QUIET = 3,          -- seconds a stopped component's ports must stay free (not between two restarts)
}
local COMPONENTS = { "kube-apiserver", "etcd" } -- stopped in this order, started in the other

local function fail(fmt, ...) error(M.PREFIX .. " " .. fmt:format(...), 0) end

local function plan_path() return M.STATE .. "/plan.json" end

local function read_plan()
  local text = fs.read(plan_path())
  if not text then return nil end
  local ok, plan = pcall(cjson.decode, text)
  if not ok or type(plan) ~= "table" or type(plan.stage) ~= "string" then
    fail("%s is not a restore plan moonadm wrote: move it away to start anew", fs.path(plan_path()))
  end
  return plan
end

local function save_plan(plan, stage)
  plan.stage = stage
  local ok, err = fs.write(plan_path(), cjson.encode(plan) .. "\n", "0600")
  if not ok then fail("writing %s: %s", plan_path(), err) end
end

-- This node's etcd manifest and the facts the restore takes from it (the member as it runs).
local function etcd_facts()
  local pod, err = installed.read("etcd")
  if not pod then
    local kept = fs.read(M.STATE .. "/etcd.yaml")
    if not kept then fail("%s: a restore runs on a control plane with a stacked etcd member", err) end
    pod = assert(yaml.decode(kept, M.STATE .. "/etcd.yaml"))[1]
  end
  local f = {
    name = installed.flag(pod, "name"),
    peer_url = installed.flag(pod, "initial-advertise-peer-urls"),
    data_dir = installed.flag(pod, "data-dir") or "/var/lib/etcd",
    initial_cluster = installed.flag(pod, "initial-cluster") or "",
    image = type(pod.spec.containers) == "table" and type(pod.spec.containers[1]) == "table" and
      pod.spec.containers[1].image or nil,
  }
  if not f.name or not f.peer_url then
    fail("%s has no --name or --initial-advertise-peer-urls: not etcd's static Pod manifest", manifests.path("etcd"))
  end
  if installed.flag(pod, "wal-dir") then
    fail("the etcd manifest sets --wal-dir: a restore writes the WAL inside the data dir, which this member would " ..
      "not read. Restore by hand (etcdutl snapshot restore --wal-dir), or drop --wal-dir first")
  end
  f.peer_url = f.peer_url:match("^[^,]+")
  return f
end

-- The node's address as its kube-apiserver manifest (live, or kept by a run under way) says: the
-- health checks and the stopped-port checks use it, never a guess from the default route.
local function pin_address(ctx)
  local pod = installed.read("kube-apiserver")
  if not pod then
    local kept = fs.read(M.STATE .. "/kube-apiserver.yaml")
    local docs = kept and yaml.decode(kept, M.STATE .. "/kube-apiserver.yaml")
    pod = docs and docs[1]
  end
  local ep = type(pod) == "table" and nodeview.endpoint_of_apiserver(pod)
  if ep then
    ctx.cfg.init = ctx.cfg.init or {}
    ctx.cfg.init.localAPIEndpoint = ep
  end
end

-- Every other member this node can name: those its member knows (when it answers) and those its
-- manifest's --initial-cluster lists; each asked on its own. The first that answers, or nil.
local function other_running(ctx, m, facts, me)
  local urls, seen = {}, {}
  local function add(name, client_url)
    if name ~= facts.name and not seen[client_url] then
      seen[client_url] = true
      urls[#urls + 1] = { name = name, url = client_url }
    end
  end
  if m then
    local list, lerr = m:list_local()
    if not list then
      fail("listing the members this node's etcd knows: %s. Not restoring without knowing that no other member " ..
        "still runs", tostring(lerr))
    end
    for _, o in ipairs(list) do
      if o.id ~= me and #o.client_urls > 0 then add(o.name ~= "" and o.name or o.id_hex, o.client_urls[1]) end
    end
  else
    -- this member is down: the members the cluster's etcd Pods advertise, when an apiserver answers
    local okc, c = pcall(capi.from_kubeconfig, ctx, capi.ADMIN_CONF, { timeout = 3, request_timeout = 3,
      connect_timeout = 2 })
    local urls_seen, uerr = nil, not okc and c or nil
    if okc then urls_seen, uerr = endpoints.endpoints_from_pods(c, { timeout = 3 }) end
    if urls_seen then
      for _, u in ipairs(urls_seen) do add(u, u) end
    else
      log.info("%s The etcd Pods could not be listed through the API (%s): asking the members the etcd manifest " ..
        "names", M.PREFIX, tostring(uerr))
    end
  end
  for name, peer in facts.initial_cluster:gmatch("([^=,]+)=([^,]+)") do
    local host = peer:match("^https?://(%[[^%]]+%])") or peer:match("^https?://([^:/]+)")
    if host then add(name, "https://" .. host .. ":2379") end
  end
  local cdir = fs.path(config.cert_dir(ctx.cfg.cluster))
  for _, o in ipairs(urls) do
    local c, err = members.new { endpoints = { o.url }, cert_dir = cdir, dial_timeout = 2, request_timeout = 3, timeout = 3 }
    local st
    if c then
      st, err = c:status()
      c:close()
    end
    if st then return o end
    log.v(1, "%s member %s at %s does not answer: %s", M.PREFIX, o.name, o.url, tostring(err))
  end
end

-- What the restore would lose, and whether it may go on: refuses while another member runs, and
-- without --yes when the cluster is newer than the snapshot (or cannot be seen).
local function decide(ctx, opts, facts, snap)
  local ep = cnet.etcd_client_url(nodeview.advertise_address(ctx))
  local m, err = members.new { endpoints = { ep }, cert_dir = fs.path(config.cert_dir(ctx.cfg.cluster)),
    dial_timeout = 2, request_timeout = 3, timeout = 3 }
  local st
  if m then st, err = m:status() end
  local other = other_running(ctx, st and m, facts, st and st.member_id)
  if m then m:close() end
  if other then
    fail("etcd member %s at %s still runs: a restore here would leave it and its apiserver serving the data the " ..
      "restore replaces. Take that control plane out first (`moonadm reset` on it removes its member), then run " ..
      "this again; it rejoins afterwards with `moonadm join --control-plane`", other.name, other.url)
  end
  if st then
    log.info("%s This node's member %s (etcd %s) is at revision %s; the snapshot at revision %s", M.PREFIX,
      st.member_id, st.version, tostring(st.revision), tostring(snap.revision))
  else
    log.info("%s This node's etcd does not answer at %s (%s): the cluster's newest revision cannot be seen", M.PREFIX,
      ep, tostring(err))
  end
  if opts.yes then return end
  if not st then
    fail("Not restoring without --yes: etcd does not answer, so whether it holds newer data than the snapshot " ..
      "(revision %d) cannot be checked. Run again with --yes to replace it with the snapshot", snap.revision)
  end
  if math.type(st.revision) == "integer" and st.revision > snap.revision then
    fail("Not restoring without --yes: the cluster is at revision %d, %d revisions newer than the snapshot (%d). " ..
      "Every change since the snapshot is lost. Take a snapshot of it first (moonadm etcd snapshot save FILE); run " ..
      "again with --yes to go on", st.revision, st.revision - snap.revision, snap.revision)
  end
end

-- The component's ports: etcd's client and peer ports, the apiserver's --secure-port.
local function ports(component, pod)
  if component == "etcd" then return { 2379, 2380 } end
  return { tonumber(pod and installed.flag(pod, "secure-port") or "") or 6443 }
end

-- Waits until the kubelet stopped the component.
local function wait_stopped(ctx, component, pod)
  local ok, err = control_plane.wait_stopped(ctx, component, ports(component, pod), M.STOP_TIMEOUT, M.QUIET)
  if not ok then fail("%s: run this again once it stopped", err) end
end

-- Stage "stopping": copies of both manifests in STATE, then each taken out and its process awaited.
local function stop(ctx)
  for _, c in ipairs(COMPONENTS) do
    local live, kept = manifests.path(c), M.STATE .. "/" .. c .. ".yaml"
    local text = fs.read(live)
    if text then -- the live manifest is the one to come back (a kept copy of another run is older)
      local ok, err = fs.write(kept, text, "0600")
      if not ok then fail("keeping %s in %s: %s", live, kept, err) end
      ok, err = fs.remove(live)
      if not ok then fail("taking %s out: %s", live, err) end
      log.info("%s Took %s out of the manifests dir (kept in %s): the kubelet stops %s", M.PREFIX, live, kept, c)
    elseif not fs.read(kept) then
      fail("neither %s nor %s exists: this node runs no %s to restore", live, kept, c)
    end
  end
  for _, c in ipairs(COMPONENTS) do
    local docs = yaml.decode(fs.read(M.STATE .. "/" .. c .. ".yaml") or "", c)
    wait_stopped(ctx, c, docs and docs[1])
    log.info("%s %s stopped", M.PREFIX, c)
  end
end

-- Stage "restored": etcdutl writes a data dir beside the live one, which then takes its place.
local function restore_data(plan, facts, tool)
  local ddir = facts.data_dir
  local fresh = ddir .. ".moonadm-restored"
  local ok, err = fs.remove_tree(fresh) -- what a killed run's etcdutl left: made anew
  if not ok then fail("removing the stale %s: %s", fresh, err) end
  log.info("%s Restoring %s into a new data dir with %s (member %s, %s; revisions bumped by %d)", M.PREFIX,
    plan.snapshot, tool.what, facts.name, facts.peer_url, etcdutl.BUMP)
  ok, err = etcdutl.restore(tool, { file = plan.snapshot, data_dir = fresh, name = facts.name,
    peer_url = facts.peer_url, token = plan.token })
  if not ok then fail("%s", err) end
  local keep = ddir .. "-before-restore-" .. plan.stamp
  if fs.exists(keep) then keep = keep .. "-" .. os.time() end
  ok, err = fs.mkdir(ddir, "0700")
  if not ok then fail("creating %s: %s", ddir, err) end
  -- a staging dir a killed run left may hold the data from before (swapped out, not yet moved): kept too
  local staging = ddir .. "/" .. data_dir.STAGING
  if fs.exists(staging) then
    ok, err = data_dir.move_tree(staging, keep .. "-unfinished")
    if not ok then fail("keeping %s (left by a killed run) in %s: %s", staging, keep .. "-unfinished", err) end
    log.info("%s Kept %s, left by a killed run, in %s-unfinished", M.PREFIX, staging, keep)
  end
  ok, err = data_dir.restore(ddir, fresh, nil, keep)
  if not ok then fail("putting the restored data in place: %s", err) end
  ok, err = fs.remove_tree(fresh)
  if not ok then log.warn("%s removing %s: %s", M.PREFIX, fresh, err) end
  log.info("%s %s holds the snapshot's data; what it held before is kept in %s", M.PREFIX, ddir, keep)
end

-- Puts a component's kept manifest back (etcd's with the RESTORED annotation).
local function put_back(c, plan)
  local kept = M.STATE .. "/" .. c .. ".yaml"
  local text = fs.read(kept)
  if not text and fs.exists(manifests.path(c)) then return end -- put back by a run killed before it said so
  if not text then fail("%s is gone: the manifest of %s to put back", kept, c) end
  if c == "etcd" then
    local pod = assert(yaml.decode(text, kept))[1]
    pod.metadata = type(pod.metadata) == "table" and pod.metadata or {}
    pod.metadata.annotations = type(pod.metadata.annotations) == "table" and pod.metadata.annotations or {}
    pod.metadata.annotations[M.RESTORED] = ("sha256:%s %s"):format(plan.sha256, plan.stamp)
    text = manifests.encode(pod)
  end
  local ok, err = fs.write(manifests.path(c), text, "0600")
  if not ok then fail("writing %s: %s", manifests.path(c), err) end
  log.info("%s Put %s back: the kubelet starts %s", M.PREFIX, manifests.path(c), c)
end

function M.run(ctx, opts)
  local facts = etcd_facts()
  pin_address(ctx)
  image_tool.remove_stale()
  local tool, terr = etcdutl.find { explicit = opts.etcdutl, image = facts.image, ctx = ctx }
  if not tool then fail("%s", terr) end
  local file = opts.file:sub(1, 1) == "/" and opts.file or ((os.getenv("PWD") or "/") .. "/" .. opts.file)
  local f, ferr = snapshot.status(file)
  if not f then fail("%s", ferr) end
  if not f.ok then fail("%s cannot be restored: %s", file, table.concat(f.problems, "; ")) end
  local plan = read_plan()
  if plan and plan.sha256 ~= f.sha256 then
    fail("a restore from %s (sha256 %s) is under way on this node, at stage %q: run `moonadm etcd snapshot " ..
      "restore %s` to finish it first", plan.snapshot, plan.sha256, plan.stage, plan.snapshot)
  end
  if not plan then
    local snap, serr = etcdutl.status(tool, file)
    if not snap then fail("%s", serr) end
    log.info("%s %s: etcd %s snapshot at revision %d, %d keys, sha256 %s", M.PREFIX, file, tostring(snap.version),
      snap.revision, snap.total_key or 0, f.sha256)
    for _, c in ipairs(COMPONENTS) do
      if not fs.exists(manifests.path(c)) then
        fail("%s is missing: this node runs no %s to stop for the restore", manifests.path(c), c)
      end
    end
    decide(ctx, opts, facts, snap)
    local stamp = os.date("!%Y%m%dT%H%M%SZ")
    plan = { snapshot = file, sha256 = f.sha256, revision = snap.revision, stamp = stamp,
      -- a cluster token of its own: members of the cluster before (same names and URLs) are refused as
      -- another cluster's, never mistaken for this one's
      token = "moonadm-restore-" .. stamp:lower() }
    local ok, err = fs.mkdir(M.STATE, "0700")
    if not ok then fail("creating %s: %s", M.STATE, err) end
    save_plan(plan, "stopping")
  else
    log.info("%s Going on with the restore of %s begun at %s (stage %q)", M.PREFIX, plan.snapshot, plan.stamp, plan.stage)
  end
  if plan.stage == "stopping" then
    stop(ctx)
    restore_data(plan, facts, tool)
    save_plan(plan, "restored")
  end
  local m <close>, _ = quorum.local_member(ctx)
  local timeout = capi.timeout(ctx, "upgradeManifests")
  if plan.stage == "restored" then
    put_back("etcd", plan)
    save_plan(plan, "etcd")
  end
  local t0 = core.monotonic()
  local st = quorum.wait_single(m, timeout)
  log.info("%s etcd member %s leads a cluster of its own at revision %s, after %s", M.PREFIX, st.member_id,
    tostring(st.revision), capi.go_duration(core.monotonic() - t0))
  control_plane.wait_healthy(ctx, "etcd", capi.timeout(ctx, "controlPlaneComponentHealthCheck"), M.PREFIX)
  put_back("kube-apiserver", plan)
  control_plane.wait_healthy(ctx, "kube-apiserver", capi.timeout(ctx, "controlPlaneComponentHealthCheck"), M.PREFIX)
  -- the plan goes first: a kill in between leaves kept copies no rerun reads as a restore under way
  local ok, err = fs.remove(plan_path())
  if ok then ok, err = fs.remove_tree(M.STATE) end
  if not ok then log.warn("%s removing %s: %s", M.PREFIX, M.STATE, err) end
  log.info("%s The cluster holds the snapshot's data (revision %d): one etcd member, %s. The other control planes " ..
    "join again with `moonadm reset` then `moonadm join --control-plane` (a certificate key from `moonadm init " ..
    "phase upload-certs --upload-certs`)", M.PREFIX, plan.revision, facts.name)
  return "restored"
end

return M
