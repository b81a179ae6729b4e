-- The node's cleanup (kubeadm's cleanup-node, with what moonadm adds): the kubelet stopped through
-- the node runtime, mounts under /var/lib/kubelet unmounted, the runtime's pods removed through the
-- CRI, the static pod manifests removed and
-- the components waited for, kubeadm's directories emptied and kubeconfig files deleted in
-- kubeadm's order, the local etcd's data dir emptied once etcd has stopped, and moonadm's journal
-- dir removed. Best effort: a failure warns and the cleanup goes on. --dry-run touches nothing.
local clean = require "node.clean"
local core = require "moonadm.core"
local duration = require "config.duration"
local etcd = require "etcd.local_member"
local fs = require "moonadm.fs"
local log = require "framework.log"
local manifests = require "manifests.installed"
local proc = require "moonadm.proc"
local wait = require "node.wait_stopped"
local C = require "config.constants"
local cri = require "cri.client"
local cri_socket = require "cri.socket"

local M = {
  KUBELET_DIR = "/var/lib/kubelet",
  TMP_DIR = "/etc/kubernetes/tmp",
  JOURNAL_DIR = "/var/lib/moonadm",
  DEFAULT_CERT_DIR = C.certificates_dir,
  -- kubeadm's resetConfigDir order
  FILES = { "/etc/kubernetes/admin.conf", "/etc/kubernetes/super-admin.conf", "/etc/kubernetes/kubelet.conf",
    "/etc/kubernetes/bootstrap-kubelet.conf", "/etc/kubernetes/controller-manager.conf",
    "/etc/kubernetes/scheduler.conf" },
}

function M.stop_kubelet(ctx, rt)
  if rt.name == "lab" then
    -- The stand-in is the node's machine-level service: it keeps running (the lab needs it to
    -- join again); the manifests' removal stops the pods, and without kubelet.conf it goes idle.
    log.info("[reset] Node runtime \"lab\": the kubelet stand-in keeps running; removing the manifests stops its pods")
    return
  end
  if ctx.dry_run then log.info("[reset] Would stop the kubelet service") return end
  log.info("[reset] Stopping the kubelet service")
  local ok, err = pcall(rt.stop_kubelet, ctx)
  if not ok then
    log.warn("[reset] The kubelet service could not be stopped by moonadm: [%s]", tostring(err))
    log.warn("[reset] Please ensure kubelet is stopped manually")
  end
end

-- Unmounts every mount below /var/lib/kubelet (deepest first). Returns whether the dir may be
-- cleaned (no mount left below it, and it is a directory, not a symbolic link).
function M.unmount_kubelet_dir(ctx, mountinfo)
  local st = fs.stat(M.KUBELET_DIR)
  if st and st.type == "link" then
    log.warn("[reset] %s is a symbolic link: not cleaning it (clean its target yourself)", M.KUBELET_DIR)
    return false
  end
  if ctx.dry_run then
    log.info("[reset] Would unmount mounted directories in %q", M.KUBELET_DIR)
    return true
  end
  log.info("[reset] Unmounting mounted directories in %q", M.KUBELET_DIR)
  local ok_all = true
  for _, mp in ipairs(clean.mounts_under(fs.path(M.KUBELET_DIR), mountinfo)) do
    local code, out = proc.run { argv = { "umount", mp } }
    if code ~= 0 then
      ok_all = false
      log.warn("[reset] Failed to unmount %s: %s", mp, tostring(out):gsub("%s+$", ""))
    end
  end
  if not ok_all then log.warn("[reset] Not cleaning %s: mounts remain below it", M.KUBELET_DIR) end
  return ok_all
end

-- Stops and removes every pod sandbox of the node's runtime (and with them their containers), as
-- kubeadm does after the kubelet has stopped; only where there is a runtime (the systemd node runtime).
function M.remove_containers(ctx, rt)
  if rt.name ~= "systemd" then return end
  if fs.root() ~= "/" then
    -- the host's runtime is not this node's: its pods are not this reset's to remove
    log.warn("[reset] the node root is %s, not /: not removing the host's containers", fs.root())
    return
  end
  if ctx.dry_run then log.info("[dryrun] Would remove Kubernetes-managed containers") return end
  log.v(1, "[reset] Removing Kubernetes-managed containers")
  local sock = ctx.cfg and ctx.cfg.reset and ctx.cfg.reset.criSocket
  local err
  if not sock or sock == "" then
    local ok, s = pcall(cri_socket.socket, ctx)
    if ok then sock = s else err = s end
  end
  local c, pods, n
  if sock then c, err = cri.new(sock) end
  if c then pods, err = c:pods() end
  if pods then
    local ids = {}
    for _, p in ipairs(pods) do ids[#ids + 1] = p.id end
    n, err = c:remove_pods(ids)
  end
  if not n then log.warn("[reset] Failed to remove containers: %s", tostring(err)) return end
  log.v(1, "[reset] Removed %d pod sandboxes", n)
end

-- Removes the static pod manifests; in the lab, waits until the stand-in has stopped their pods.
function M.remove_manifests(ctx, rt, opts)
  local files = manifests.files()
  if #files == 0 then return end
  if ctx.dry_run then
    log.info("[reset] Would remove the static pod manifests %s", clean.list_text(files))
    return
  end
  local names = {}
  for _, f in ipairs(files) do
    local ok, err = clean.remove(f)
    if ok == nil then log.warn("[reset] Failed to remove %s: %s", f, tostring(err)) end
    names[#names + 1] = f:match("([^/]+)%.ya?ml$") or f:match("([^/]+)$")
  end
  log.info("[reset] Removed the static pod manifests %s", clean.list_text(files))
  if rt.name == "lab" or wait.status_pods() then
    local t0 = core.monotonic()
    local wopts = setmetatable({ force = true }, { __index = opts and opts.wait })
    log.info("[reset] Waiting for the control plane components to stop. This can take up to %s",
      duration.format_seconds(wopts.timeout or wait.TIMEOUT))
    local ok, still = wait.until_stopped(names, wopts)
    if ok then
      log.info("[reset] The static pods stopped after %s", duration.format_seconds(core.monotonic() - t0))
    else
      log.warn("[reset] still running %s after their manifests were removed: %s",
        duration.format_seconds(core.monotonic() - t0), table.concat(still, ", "))
    end
  end
end

-- Is /var/lib/moonadm this node's own? In the lab (root /, node dirs bind-mounted into the
-- command's mount namespace) a directory that is not bound is the machine's, shared by every node.
function M.journal_dir_is_nodes(rt, mountinfo)
  if rt.name ~= "lab" or fs.root() ~= "/" then return true end
  return clean.is_mount_point(M.JOURNAL_DIR, mountinfo)
end

-- opts: {etcd = remove-etcd-member's finding (nil when it did not run), mountinfo =, wait =}.
function M.run(ctx, r, rt, opts)
  opts = opts or {}
  local removal = opts.etcd or {}
  -- The etcd data dir is read before the manifests go (the etcd manifest may name it).
  local etcd_dir = not removal.external and (removal.data_dir or etcd.data_dir(r.cluster)) or nil

  M.stop_kubelet(ctx, rt)
  local dirs = { manifests.DIR }
  if M.unmount_kubelet_dir(ctx, opts.mountinfo) then dirs[#dirs + 1] = M.KUBELET_DIR end
  M.remove_containers(ctx, rt)
  M.remove_manifests(ctx, rt, opts)

  if r.cert_dir ~= M.DEFAULT_CERT_DIR then
    log.warn("[reset] WARNING: Cleaning a non-default certificates directory: %q", r.cert_dir)
  end
  dirs[#dirs + 1] = r.cert_dir
  if r.cleanup_tmp_dir then dirs[#dirs + 1] = M.TMP_DIR end
  if ctx.dry_run then
    log.info("[reset] Would delete contents of directories: %s", clean.list_text(dirs))
  else
    log.info("[reset] Deleting contents of directories: %s", clean.list_text(dirs))
    clean.clean_dirs(dirs)
  end

  if etcd_dir and not clean.is_empty(etcd_dir) then
    if ctx.dry_run then
      log.info("[reset] Would delete contents of the etcd data directory: %s", etcd_dir)
    elseif etcd.wipe_allowed(ctx, removal.wipe_ok, etcd_dir) then
      etcd.clean_data_dir(etcd_dir)
    else
      -- remove-etcd-member did not run (skipped, or `reset phase cleanup-node` alone): the member
      -- may still be in the cluster, and its data is what it would come back with
      log.warn("[reset] Keeping the etcd data directory %s: this node's etcd member was not removed from the " ..
        "cluster (the remove-etcd-member phase did not run); --%s deletes it", etcd_dir, etcd.UNSAFE_FLAG)
    end
  end

  if ctx.dry_run then
    log.info("[reset] Would delete files: %s", clean.list_text(M.FILES))
  else
    log.info("[reset] Deleting files: %s", clean.list_text(M.FILES))
    for _, f in ipairs(M.FILES) do
      local ok, err = clean.remove(f)
      if ok == nil then log.warn("[reset] Failed to remove file: %q [%s]", f, tostring(err)) end
    end
  end

  if fs.stat(M.JOURNAL_DIR) then
    if not M.journal_dir_is_nodes(rt, opts.mountinfo) then
      log.warn("[reset] %s is the lab machine's, shared by every lab node (not bound into this node): not removed",
        M.JOURNAL_DIR)
    elseif ctx.dry_run then
      log.info("[reset] Would delete moonadm's journal directory %s", M.JOURNAL_DIR)
    elseif clean.is_mount_point(fs.path(M.JOURNAL_DIR), opts.mountinfo) then
      -- a node's own journal bound in (a real-kubelet lab node): its contents go, the mount point stays
      clean.clean_dirs({ M.JOURNAL_DIR })
      log.info("[reset] Deleted the contents of moonadm's journal directory %s", M.JOURNAL_DIR)
    else
      local ok, err = clean.remove(M.JOURNAL_DIR)
      if ok == nil then log.warn("[reset] Failed to remove %s: %s", M.JOURNAL_DIR, tostring(err))
      else log.info("[reset] Deleted moonadm's journal directory %s", M.JOURNAL_DIR) end
    end
  end
end

return M
