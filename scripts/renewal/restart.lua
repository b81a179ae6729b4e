-- After certificates are renewed, what kubeadm's docs tell users to do by hand: restart the
-- control-plane static Pods that read them, one at a time. A static Pod restarts when its manifest
-- changes, so each manifest is rewritten (atomically: a kill leaves the old or the new one, both
-- whole) with one annotation, RESTARTED, set to the time; then the new mirror Pod's hash and the
-- component's health are awaited before the next. etcd restarts only when the members left running
-- keep a quorum (every other member healthy, and a majority without this one): the renewal never
-- costs the cluster its etcd quorum. The components still to restart are written down (PENDING)
-- before any certificate is renewed and struck off one by one, so a run killed in between leaves
-- them for the next run, which restarts them although nothing is due any more.
local fs = require "moonadm.fs"
local yaml = require "moonadm.yaml"
local log = require "framework.log"
local capi = require "cluster.api"
local config = require "config"
local manifests = require "manifests"
local members = require "etcd.members"
local nodeview = require "node.view"
local control_plane = require "upgrade.control_plane"
local unode = require "upgrade.node"

local M = {}

M.RESTARTED = "moonadm.io/restarted-at"
M.PENDING = "/etc/kubernetes/tmp/moonadm-restart-pending"
M.PREFIX = "[certs/restart]"

-- Which component reads which renewed certificate (kubeadm's certificate names and kubeconfigs).
M.READER = {
  ["etcd-server"] = "etcd", ["etcd-peer"] = "etcd",
  apiserver = "kube-apiserver", ["apiserver-kubelet-client"] = "kube-apiserver",
  ["apiserver-etcd-client"] = "kube-apiserver", ["front-proxy-client"] = "kube-apiserver",
  ["controller-manager.conf"] = "kube-controller-manager", ["scheduler.conf"] = "kube-scheduler",
}
-- etcd first (the apiserver dials it), then the apiserver, then its clients.
M.ORDER = { "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler" }

-- The components to restart for the renewed names, in M.ORDER, those with a manifest on this node.
function M.components(renewed)
  local want = {}
  for _, name in ipairs(renewed) do
    if M.READER[name] then want[M.READER[name]] = true end
  end
  local out = {}
  for _, c in ipairs(M.ORDER) do
    if want[c] and fs.exists(manifests.path(c)) then out[#out + 1] = c end
  end
  return out
end

-- The components an earlier run renewed certificates for and did not restart (M.ORDER's order).
function M.pending()
  local text = fs.read(M.PENDING)
  local set = {}
  for c in (text or ""):gmatch("[%w-]+") do set[c] = true end
  local out = {}
  for _, c in ipairs(M.ORDER) do if set[c] then out[#out + 1] = c end end
  return out
end

-- Writes the list down (none: the file goes).
local function write_pending(list)
  if #list == 0 then
    local ok, err = fs.remove(M.PENDING)
    if not ok and fs.exists(M.PENDING) then error(("removing %s: %s"):format(M.PENDING, err), 0) end
    return
  end
  local ok, err = fs.mkdir(M.PENDING:match("^(.*)/"), "0700")
  if ok then ok, err = fs.write(M.PENDING, table.concat(list, "\n") .. "\n", "0600") end
  if not ok then error(("writing %s: %s"):format(M.PENDING, err), 0) end
end

-- Adds components to the pending list (before their certificates are renewed); returns the whole list.
function M.mark(components)
  local set, list = {}, {}
  for _, c in ipairs(M.pending()) do set[c] = true end
  for _, c in ipairs(components) do set[c] = true end
  for _, c in ipairs(M.ORDER) do if set[c] then list[#list + 1] = c end end
  write_pending(list)
  return list
end

local function strike(component)
  local left = {}
  for _, c in ipairs(M.pending()) do if c ~= component then left[#left + 1] = c end end
  write_pending(left)
end

-- Whether the etcd members other than this node's keep a quorum while it restarts: nil and why
-- when not. A single member restarts (nothing else could serve meanwhile; kubeadm's docs do the same).
function M.etcd_quorum_kept(ctx)
  local cdir = fs.path(config.cert_dir(ctx.cfg.cluster))
  local mine = members.new { endpoints = { "https://127.0.0.1:2379" }, cert_dir = cdir, dial_timeout = 2,
    request_timeout = 5, timeout = 10 }
  if not mine then return nil, "the local etcd member does not answer at https://127.0.0.1:2379" end
  local list, err = mine:list()
  mine:close()
  if not list then return nil, "listing the etcd members: " .. tostring(err) end
  if #list == 1 then return true end
  local me = nodeview.name(ctx)
  local others = {}
  for _, m in ipairs(list) do
    if m.name ~= me then
      if m.is_learner or #m.client_urls == 0 then
        return nil, ("etcd member %s is a learner or has not started: not restarting this one meanwhile"):format(m.name)
      end
      others[#others + 1] = m.client_urls[1]
    end
  end
  if #others < #list // 2 + 1 then
    return nil, ("the etcd cluster has %d members: without this one, %d are fewer than a quorum of %d"):format(
      #list, #others, #list // 2 + 1)
  end
  local c, cerr = members.new { endpoints = others, cert_dir = cdir, dial_timeout = 2, request_timeout = 5, timeout = 10 }
  if not c then return nil, tostring(cerr) end
  local ok, herr = c:check_health()
  c:close()
  if not ok then return nil, "another etcd member is not healthy: " .. tostring(herr) end
  return true
end

-- The manifest with RESTARTED set to now: the text to write.
local function stamped(path)
  local text, err = fs.read(path)
  if not text then error(("reading %s: %s"):format(path, err), 0) end
  local docs, derr = yaml.decode(text, path)
  local pod = docs and docs[1]
  if type(pod) ~= "table" or type(pod.metadata) ~= "table" then
    error(("%s: not a Pod manifest%s"):format(path, derr and (": " .. derr) or ""), 0)
  end
  pod.metadata.annotations = type(pod.metadata.annotations) == "table" and pod.metadata.annotations or {}
  pod.metadata.annotations[M.RESTARTED] = os.date("!%Y-%m-%dT%H:%M:%SZ")
  return manifests.encode(pod)
end

-- Restarts one component and waits for it: the new mirror Pod, then health.
function M.restart_one(ctx, component, node)
  local path = manifests.path(component)
  local text = stamped(path)
  local before = control_plane.wait_mirror(ctx, component, node, capi.timeout(ctx, "upgradeManifests"), M.PREFIX)
  log.info("%s Restarting %s to load its renewed certificates", M.PREFIX, component)
  local ok, err = fs.write(path, text, "0600")
  if not ok then error(("writing %s: %s"):format(path, err), 0) end
  control_plane.wait_hash(ctx, component, node, text, before, capi.timeout(ctx, "upgradeManifests"), M.PREFIX)
  control_plane.wait_healthy(ctx, component, capi.timeout(ctx, "controlPlaneComponentHealthCheck"), M.PREFIX)
end

-- This node as its files name it: the node name from kubelet.conf's client certificate, the
-- advertise address from the local kube-apiserver manifest (the mirror Pods and health checks use both).
function M.this_node(ctx)
  local name = nodeview.name_from_kubelet_conf(fs.read(unode.KUBELET_CONF), fs.read)
  local init = ctx.cfg.init or {}
  ctx.cfg.init = init
  init.nodeRegistration = init.nodeRegistration or {}
  if name then init.nodeRegistration.name = name end
  local ep = unode.local_endpoint(ctx)
  if ep then init.localAPIEndpoint = ep end
  return nodeview.name(ctx)
end

-- Restarts the components one at a time. opts.force: restart etcd even when the others would lack a
-- quorum meanwhile. Returns the list restarted and the list skipped ({component, why}).
function M.run(ctx, components, opts)
  opts = opts or {}
  local node = M.this_node(ctx)
  local done, skipped = {}, {}
  for _, c in ipairs(components) do
    local ok, why = true, nil
    if c == "etcd" and not opts.force then ok, why = M.etcd_quorum_kept(ctx) end
    if ok then
      if fs.exists(manifests.path(c)) then M.restart_one(ctx, c, node) end
      strike(c)
      done[#done + 1] = c
    else
      log.warn("%s Not restarting etcd now: %s (it keeps serving its current certificate, still valid; run this " ..
        "again later, or with --force)", M.PREFIX, why)
      skipped[#skipped + 1] = { component = c, why = why }
    end
  end
  return done, skipped
end

return M
