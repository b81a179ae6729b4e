-- The control-plane phase of `upgrade apply|node` (kubeadm's StaticPodControlPlane): local etcd
-- first (its data dir backed up), then kube-apiserver, kube-controller-manager, kube-scheduler.
-- For each component whose manifest changes: renew its certificates, keep the old manifest in
-- /etc/kubernetes/tmp/kubeadm-backup-manifests-<timestamp>/, replace the manifest atomically, wait
-- until its mirror pod shows the new kubernetes.io/config.hash and the component is healthy. On a
-- failure the manifests replaced so far are restored from the backup, the old components are
-- waited for, and the run fails with the reason and how to retry. etcd's manifest (and data) is
-- restored only when etcd itself failed: an upgraded etcd serves the previous API server, and across
-- a minor the older etcd may refuse the newer one's data (kubeadm's rollbackOldManifests keeps it
-- too). A rerun converges: what was upgraded compares equal and is skipped. --dry-run prints each
-- manifest's diff.
local cnet = require "config.net"
local core = require "moonadm.core"
local fs = require "moonadm.fs"
local api = require "moonadm.api"
local log = require "framework.log"
local manifests = require "manifests"
local capi = require "cluster.api"
local wait = require "cluster.wait"
local unode = require "upgrade.node"
local certs = require "upgrade.certs"
local difflib = require "upgrade.difflib"

local M = {}

local function errors_msg(e) return require("framework.errors").message(e) end
local nodeview = require "node.view"
local encoding = require "moonadm.encoding"
local members = require "etcd.members"
local manifests_etcd = require "manifests.etcd"
local config = require "config"
local data_dir = require "etcd.data_dir"
local interrupted = require "upgrade.interrupted"
local net = require "moonadm.net"

M.TMP = "/etc/kubernetes/tmp"
M.COMPONENTS = { "kube-apiserver", "kube-controller-manager", "kube-scheduler" }
M.HASH = "kubernetes.io/config.hash"
M.INTERVAL = 0.25

function M.timestamp() return os.date("%Y-%m-%d-%H-%M-%S") end

-- What the lab's kubelet stand-in puts in kubernetes.io/config.hash: the manifest's content hash.
function M.content_hash(text) return encoding.sha256_hex(text):sub(1, 32) end

local function mirror(c, component, node)
  return c:get({ apiVersion = "v1", kind = "Pod", namespace = "kube-system", name = component .. "-" .. node },
    { timeout = 3 })
end

local function hash_of(pod) return pod and ((pod.metadata or {}).annotations or {})[M.HASH] end

-- A client with short per-request timeouts: the apiserver may be restarting under it.
local function poll_client(ctx)
  if ctx.data.upgrade_poll_client then return ctx.data.upgrade_poll_client end
  local path = fs.exists(capi.ADMIN_CONF) and capi.ADMIN_CONF or unode.KUBELET_CONF
  local c = capi.from_kubeconfig(ctx, path, { timeout = 3, request_timeout = 3, connect_timeout = 1 })
  ctx.data.upgrade_poll_client = c
  return c
end

-- The hash the component's mirror pod shows before its manifest changes, waiting until the kubelet
-- shows one (kubeadm's WaitForStaticPodSingleHash): a mirror the kubelet has yet to re-create (the
-- API server was away) would otherwise leave nothing to tell the new hash from. prefix: the log lines'.
function M.wait_mirror(ctx, component, node, timeout, prefix)
  local c = poll_client(ctx)
  local first, first_err = mirror(c, component, node)
  local h = hash_of(first)
  if h then return h end
  log.v(1, "%s the mirror Pod of %s on %s: %s", prefix or "[upgrade/staticpods]", component, node,
    first and ("no " .. M.HASH) or tostring(first_err)) -- the poll below retries it
  log.info("%s Waiting for the kubelet to show the mirror Pod of %s on %s. This can take up to %s",
    prefix or "[upgrade/staticpods]", component, node, capi.go_duration(timeout))
  return capi.poll(("the mirror Pod of %s on %s (is the kubelet running and reaching the API server?)")
    :format(component, node), timeout, M.INTERVAL, function()
      local pod, err = mirror(c, component, node)
      local ph = hash_of(pod)
      if ph then return ph end
      return nil, pod and ("it has no " .. M.HASH) or tostring(err)
    end)
end

-- Waits until the component's mirror pod shows the new hash: the lab's content hash, or (a real
-- kubelet's own hash) any hash other than the one before the change. prefix: the log lines'.
function M.wait_hash(ctx, component, node, text, before, timeout, prefix)
  prefix = prefix or "[upgrade/staticpods]"
  local want = M.content_hash(text)
  local c = poll_client(ctx)
  log.info("%s Waiting for the kubelet to restart the component", prefix)
  log.info("%s This can take up to %s", prefix, capi.go_duration(timeout))
  local t0 = core.monotonic()
  local h = capi.poll(("the mirror pod of %s to show the new %s"):format(component, M.HASH), timeout, M.INTERVAL,
    function()
      local pod, err = mirror(c, component, node)
      local h = hash_of(pod)
      if h and (h == want or (before and h ~= before)) then return h end
      return nil, pod and ("hash is still " .. tostring(h)) or tostring(err)
    end)
  log.info("%s The kubelet restarted %s after %s", prefix, component, capi.go_duration(core.monotonic() - t0))
  return h
end

-- The component's health endpoint (apiserver /livez, controller-manager /healthz, scheduler
-- /livez, etcd: the cluster's health through the healthcheck client) until healthy or timeout.
function M.wait_healthy(ctx, component, timeout, prefix)
  prefix = prefix or "[upgrade/staticpods]"
  log.info("%s Waiting for %s to be healthy. This can take up to %s", prefix, component, capi.go_duration(timeout))
  local t0 = core.monotonic()
  local function healthy()
    log.info("%s %s is healthy after %s", prefix, component, capi.go_duration(core.monotonic() - t0))
    return true
  end
  if component == "etcd" then
    local cdir = config.cert_dir(ctx.cfg.cluster)
    local adv = nodeview.advertise_address(ctx)
    local ep = cnet.etcd_client_url(adv)
    capi.poll("etcd to be healthy", timeout, M.INTERVAL, function()
      local m, err = members.new { endpoints = { ep }, cert_dir = fs.path(cdir), dial_timeout = 1, request_timeout = 2 }
      if not m then return nil, err end
      local ok, herr = m:check_health()
      m:close()
      return ok, herr
    end)
    return healthy()
  end
  local comps = wait.components(function(f) return ctx:read(manifests.DIR .. "/" .. f) end)
  for _, comp in ipairs(comps) do
    if comp.name == component then
      local h = assert(api.new { server = comp.server, insecure = true, connect_timeout = 1, timeout = 2,
        user_agent = "moonadm/upgrade" })
      local ok, err = pcall(capi.poll, ("%s to be healthy at %s"):format(component, comp.url), timeout, M.INTERVAL,
        function()
          local resp, rerr = h:request { method = "GET", path = comp.path, timeout = 2 }
          if resp and resp.status == 200 then return true end
          return nil, resp and ("HTTP " .. resp.status) or rerr
        end)
      h:close()
      if not ok then error(err, 0) end
      return healthy()
    end
  end
end

-- Waits for a component after its manifest changed: the new mirror pod hash, then health.
-- `restored`: the manifest is the previous one, put back by a rollback.
function M.wait_component(ctx, component, node, text, before, restored)
  M.wait_hash(ctx, component, node, text, before, capi.timeout(ctx, "upgradeManifests"))
  M.wait_healthy(ctx, component, capi.timeout(ctx, "controlPlaneComponentHealthCheck"))
  if restored then log.info("[upgrade/rollback] Component %q runs its previous manifest again", component)
  else log.info("[upgrade/staticpods] Component %q upgraded successfully!", component) end
end

-- Which replaced manifests a rollback restores: all but an upgraded etcd that did not fail.
function M.restored(st)
  local out = {}
  for _, r in ipairs(st.replaced) do
    if r.component ~= "etcd" or st.etcd_failed then out[#out + 1] = r end
  end
  return out
end

-- Stops the local etcd before its data dir is touched: its manifest leaves the manifests dir (the
-- backup keeps it) and the kubelet stops the pod; done once its client and peer ports stayed free
-- for ETCD_STOP_QUIET seconds (a crash-looping etcd may be between two starts at one check).
M.ETCD_STOP_TIMEOUT, M.ETCD_STOP_QUIET = 90, 3

-- Waits until a component whose manifest left has stopped: its ports on the advertise address free
-- for `quiet` seconds (a crash-looping one may be between two starts at one look). → true | nil, err.
function M.wait_stopped(ctx, component, ports, timeout, quiet)
  local adv = nodeview.advertise_address(ctx)
  local deadline, quiet_since = core.monotonic() + timeout, nil
  while true do
    local busy = false
    for _, p in ipairs(ports) do busy = busy or net.port_free(adv, p) == false end
    local now = core.monotonic()
    if busy then quiet_since = nil else quiet_since = quiet_since or now end
    if quiet_since and now - quiet_since >= quiet then return true end
    if now > deadline then
      return nil, ("%s still listens on %s port %s %ds after its manifest was taken out (is the kubelet running?)")
        :format(component, adv, table.concat(ports, "/"), timeout)
    end
    core.sleep(math.min(M.INTERVAL, 0.25))
  end
end

function M.stop_etcd(ctx, st)
  local ok, err = fs.write(st.backup_dir .. "/" .. interrupted.MARK, "", "0600")
  if not ok then return nil, err end
  ok, err = fs.remove(manifests.path("etcd"))
  if not ok then return nil, ("removing %s: %s"):format(manifests.path("etcd"), err) end
  log.info("[upgrade/rollback] Waiting for the kubelet to stop etcd (its ports %s:2379 and 2380 free for %ds)",
    nodeview.advertise_address(ctx), M.ETCD_STOP_QUIET)
  ok, err = M.wait_stopped(ctx, "etcd", { 2379, 2380 }, M.ETCD_STOP_TIMEOUT, M.ETCD_STOP_QUIET)
  if not ok then return nil, err .. ": not touching its data while it runs" end
  return true
end

-- Puts the etcd data backed up before the upgrade back in place (kubeadm's rollbackEtcdData), with
-- etcd stopped; the failed data is kept beside the backup. → true | nil, err.
function M.restore_etcd_data(ctx, st)
  local ddir = manifests_etcd.data_dir(ctx.cfg.cluster)
  local failed = st.etcd_backup .. "-failed"
  local ok, err = M.stop_etcd(ctx, st)
  if not ok then return nil, err end
  log.info("[upgrade/rollback] Restoring the etcd data dir %s from %s (the data it had is kept in %s)", ddir,
    st.etcd_backup, failed)
  return data_dir.restore(ddir, st.etcd_backup, st.etcd_backup_files, failed)
end

-- Restores etcd's data when etcd itself failed, then the replaced manifests from the backup.
function M.rollback(ctx, st, reason)
  log.warn("[upgrade/staticpods] %s; rolling back the static Pod manifests from %s", reason, st.backup_dir)
  local errs = {}
  local restored = M.restored(st)
  if st.etcd_failed and st.etcd_backup and (st.etcd_backup_files or 0) > 0 then
    local ok, err = M.restore_etcd_data(ctx, st)
    if not ok then
      errs[#errs + 1] = ("restoring the etcd data: %s; the backup of the etcd data is in %s"):format(err, st.etcd_backup)
    end
  end
  for i = #restored, 1, -1 do
    local r = restored[i]
    local ok, err = fs.write(manifests.path(r.component), r.old, "0600")
    if not ok then errs[#errs + 1] = ("restoring %s: %s"):format(r.component, err)
    else log.info("[upgrade/rollback] Restored %s from %s", manifests.path(r.component), r.backup) end
  end
  if fs.exists(manifests.path("etcd")) then fs.remove(st.backup_dir .. "/" .. interrupted.MARK) end
  -- wait for the old components, so the error is raised with the control plane back up
  for i = #restored, 1, -1 do
    local r = restored[i]
    local ok, err = pcall(M.wait_component, ctx, r.component, st.node, r.old, r.new_hash_seen, true)
    if not ok then errs[#errs + 1] = ("%s after the rollback: %s"):format(r.component, errors_msg(err)) end
  end
  return errs
end

-- What the user reads after a rollback: what stays upgraded, and how to retry.
function M.retry_hint(ctx, st, component)
  local kept = ""
  for _, r in ipairs(st.replaced) do
    if r.component == "etcd" and not st.etcd_failed then
      kept = ("etcd stays on its new image %s, which serves the previous control plane; "):format(r.image)
    end
  end
  local cmd = st.upgrade_node and "moonadm upgrade node" or
    ("moonadm upgrade apply " .. tostring(ctx.cfg.cluster.kubernetesVersion))
  return ("\n%sfind why %s did not become healthy (its container's log: crictl ps -a --name %s; crictl logs ID), "
    .. "fix that (the ClusterConfiguration in the kubeadm-config ConfigMap, or --patches), then run %q again: "
    .. "what was already upgraded is skipped"):format(kept, component, component, cmd)
end

-- Upgrades one component; returns whether it changed. Raises after a rollback on failure.
local function upgrade_component(ctx, st, component)
  local path = manifests.path(component)
  local old = ctx:read(path)
  local p = manifests.generate(ctx, component)
  local new = manifests.encode(p)
  if old == new then
    log.info("[upgrade/staticpods] Current and new manifests of %s are equal, skipping upgrade", component)
    return false
  end
  if ctx.dry_run then
    log.info("[upgrade/staticpods] Would update the static Pod manifest of %s:", component)
    log.result(difflib.unified(old, new, path, path .. " (new)"))
    if st.renew then certs.renew(ctx, certs.names(ctx.cfg.cluster, component)) end
    return true
  end
  local c = poll_client(ctx)
  -- the mirror pod's hash before the change (none yet: any hash the kubelet shows will do)
  local pod, perr = mirror(c, component, st.node)
  if not pod and perr.code ~= 404 then
    error(("[upgrade/staticpods] reading the mirror pod of %s on %s: %s"):format(component, st.node, tostring(perr)), 0)
  end
  local before = hash_of(pod)
  if st.renew then certs.renew(ctx, certs.names(ctx.cfg.cluster, component)) end
  log.info("[upgrade/staticpods] Moving new manifest to %q and backing up old manifest to %q", path,
    st.backup_dir .. "/" .. component .. ".yaml")
  local _, _, backup = manifests.write(ctx, component, p, { backup_dir = st.backup_dir })
  local rec = { component = component, old = old, backup = backup, image = p.spec.containers[1].image }
  st.replaced[#st.replaced + 1] = rec
  local ok, err = pcall(M.wait_component, ctx, component, st.node, new, before)
  if not ok then
    rec.new_hash_seen = M.content_hash(new)
    if component == "etcd" then st.etcd_failed = true end
    local reason = ("the upgrade of %s failed: %s"):format(component, errors_msg(err))
    local rerrs = M.rollback(ctx, st, reason)
    local tail = #rerrs > 0 and ("\nthe rollback also failed:\n\t" .. table.concat(rerrs, "\n\t"))
      or ("\nthe previous manifests were restored from %s and the control plane is healthy again"):format(st.backup_dir)
    error(("[upgrade/staticpods] %s%s%s"):format(reason, tail, M.retry_hint(ctx, st, component)), 0)
  end
  return true
end

-- The whole phase. opts.node: `upgrade node` (skips when this is not a control-plane node).
function M.run(ctx, opts)
  opts = opts or {}
  if not nodeview.runs_control_plane(ctx) then
    log.info("[upgrade/control-plane] Skipping phase. Not a control plane node.")
    return
  end
  local part = unode.part(ctx)
  local cluster = ctx.cfg.cluster
  local st = { node = ctx.cfg.init.nodeRegistration.name, replaced = {},
    renew = part.certificateRenewal ~= false, ts = M.timestamp(), upgrade_node = opts.node }
  st.backup_dir = ("%s/kubeadm-backup-manifests-%s"):format(M.TMP, st.ts)
  log.info("[upgrade/staticpods] Writing new Static Pod manifests to %q", manifests.DIR)
  if not st.renew then log.info("[upgrade/staticpods] Certificate renewal is disabled (--certificate-renewal=false)") end
  if not ctx.dry_run then
    local ok, err = fs.mkdir(st.backup_dir, "0700")
    if not ok then error(("creating %s: %s"):format(st.backup_dir, err), 0) end
  end
  local local_etcd = not (cluster.etcd and cluster.etcd.external)
  if local_etcd and part.etcdUpgrade ~= false and ctx:exists(manifests.path("etcd")) then
    local ddir = manifests_etcd.data_dir(cluster)
    local old = ctx:read(manifests.path("etcd"))
    local new = manifests.encode(manifests.generate(ctx, "etcd"))
    if old ~= new and not ctx.dry_run then
      st.etcd_backup = ("%s/kubeadm-backup-etcd-%s/etcd"):format(M.TMP, st.ts)
      log.info("[upgrade/etcd] Backing up the etcd data dir %s to %s", ddir, st.etcd_backup)
      local n, err = data_dir.backup(ddir, st.etcd_backup)
      if not n then error(("[upgrade/etcd] %s: refusing to upgrade etcd"):format(err), 0) end
      st.etcd_backup_files = n
    end
    upgrade_component(ctx, st, "etcd")
  elseif local_etcd and part.etcdUpgrade == false then
    log.info("[upgrade/etcd] Skipping the etcd upgrade (etcdUpgrade is false)")
  end
  local changed = 0
  for _, comp in ipairs(M.COMPONENTS) do
    if upgrade_component(ctx, st, comp) then changed = changed + 1 end
  end
  if st.renew then certs.renew(ctx, certs.names(cluster, "admin"), "[upgrade]") end
  if not ctx.dry_run and #st.replaced == 0 then fs.remove_tree(st.backup_dir) end
  log.info("[upgrade/control-plane] The control plane instance for this node was successfully upgraded!")
  return st
end

return M
