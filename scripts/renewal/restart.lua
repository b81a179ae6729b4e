-- After certificates are renewed, what kubeadm's docs tell users to do by hand: restart the
-- control-plane static Pods that read them, one at a time. A static Pod restarts when its manifest
-- changes, so each manifest is rewritten (atomically: a kill leaves the old or the new one, both
-- whole) with one annotation, RESTARTED, set to the time; then the new mirror Pod's hash and the
-- component's health are awaited before the next. etcd restarts only when the members left running
-- keep a quorum (every other member healthy, and a majority without this one): the renewal never
-- costs the cluster its etcd quorum. The components still to restart are written down (PENDING)
-- before any certificate is renewed and struck off one by one, so a run killed in between leaves
-- them for the next run, which restarts them although nothing is due any more.
-- In an HA cluster this node's kube-apiserver, which talks to its local etcd member alone, is taken
-- out while that member restarts (its manifest kept in ASIDE, its port closed: the endpoint's
-- balancer sends every request to the other apiservers meanwhile) and comes back with its own restart
-- once etcd is healthy; a run that died in between puts what it set aside back first.
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
local args = require "kube.args"

local M = {}

M.RESTARTED = "moonadm.io/restarted-at"
M.PENDING = "/etc/kubernetes/tmp/moonadm-restart-pending"
M.ASIDE = "/etc/kubernetes/tmp/moonadm-restart-aside" -- the manifests out while etcd restarts
M.STOP_TIMEOUT, M.STOP_QUIET = 120, 1
M.PREFIX = "[certs/restart]"
M.WHAT = "renewed certificates" -- what a restart loads, as its log line says (run's opts.what)

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
function M.etcd_quorum_kept(ctx) -- → true, members | nil, why
  local cdir = fs.path(config.cert_dir(ctx.cfg.cluster))
  local mine = members.new { endpoints = { "https://127.0.0.1:2379" }, cert_dir = cdir, dial_timeout = 2,
    request_timeout = 5, timeout = 10 }
  if not mine then return nil, "the local etcd member does not answer at https://127.0.0.1:2379" end
  local list, err = mine:list()
  mine:close()
  if not list then return nil, "listing the etcd members: " .. tostring(err) end
  if #list == 1 then return true, 1 end
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
  return true, #list
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
function M.restart_one(ctx, component, node, what)
  local path = manifests.path(component)
  local text = stamped(path)
  local before = control_plane.wait_mirror(ctx, component, node, capi.timeout(ctx, "upgradeManifests"), M.PREFIX)
  log.info("%s Restarting %s to load its %s", M.PREFIX, component, what or M.WHAT)
  local ok, err = fs.write(path, text, "0600")
  if not ok then error(("writing %s: %s"):format(path, err), 0) end
  control_plane.wait_hash(ctx, component, node, text, before, capi.timeout(ctx, "upgradeManifests"), M.PREFIX)
  control_plane.wait_healthy(ctx, component, capi.timeout(ctx, "controlPlaneComponentHealthCheck"), M.PREFIX)
end

-- The manifests an earlier run set aside while etcd restarted, and died: each put back (etcd first).
function M.put_back_aside()
  for _, c in ipairs { "etcd", "kube-apiserver" } do
    local aside = M.ASIDE .. "/" .. c .. ".yaml"
    local text = fs.read(aside)
    if text then
      local path = manifests.path(c)
      if not fs.exists(path) then
        local ok, err = fs.write(path, text, "0600")
        if not ok then error(("putting %s back from %s: %s"):format(path, aside, err), 0) end
        log.info("%s Put %s back: an earlier run had taken it out while etcd restarted", M.PREFIX, path)
      end
      local ok, err = fs.remove(aside)
      if not ok and fs.exists(aside) then error(("removing %s: %s"):format(aside, err), 0) end
    end
  end
end

-- Takes a component's manifest out (its stamped text kept aside first) and waits until it stopped.
local function take_out(ctx, c, text, ports)
  local path, aside = manifests.path(c), M.ASIDE .. "/" .. c .. ".yaml"
  local ok, err = fs.mkdir(M.ASIDE, "0700")
  if ok then ok, err = fs.write(aside, text, "0600") end
  if ok then ok, err = fs.remove(path) end
  if not ok then error(("setting %s aside in %s: %s"):format(path, aside, err), 0) end
  ok, err = control_plane.wait_stopped(ctx, c, ports, M.STOP_TIMEOUT, M.STOP_QUIET)
  if not ok then error(err, 0) end
end

local function put_in(c, text)
  local ok, err = fs.write(manifests.path(c), text, "0600")
  if not ok then error(("writing %s: %s"):format(manifests.path(c), err), 0) end
end

-- etcd restarted with this node's kube-apiserver out of the way (it reads this member alone, and would
-- fail requests the balancer sends it while the member is away), then the apiserver's own restart.
-- Both manifests leave and come back: their ports closing and their health tell the restarts, as the
-- mirror Pods cannot while this node's kubelet may report through this node's apiserver; the mirror
-- Pods are awaited once the apiserver is back.
local function etcd_with_apiserver_aside(ctx, node, what)
  local timeout = capi.timeout(ctx, "upgradeManifests")
  local health = capi.timeout(ctx, "controlPlaneComponentHealthCheck")
  local api_text, etcd_text = stamped(manifests.path("kube-apiserver")), stamped(manifests.path("etcd"))
  local api_before = control_plane.wait_mirror(ctx, "kube-apiserver", node, timeout, M.PREFIX)
  local etcd_before = control_plane.wait_mirror(ctx, "etcd", node, timeout, M.PREFIX)
  local pod = yaml.decode(api_text, "kube-apiserver")[1]
  local port = tonumber(args.of_container(pod.spec.containers[1], "secure-port") or "") or 6443
  log.info("%s Taking kube-apiserver out while etcd restarts: the other control planes' apiservers serve meanwhile",
    M.PREFIX)
  take_out(ctx, "kube-apiserver", api_text, { port })
  log.info("%s Restarting etcd to load its %s", M.PREFIX, what)
  take_out(ctx, "etcd", etcd_text, { 2379, 2380 })
  put_in("etcd", etcd_text)
  control_plane.wait_healthy(ctx, "etcd", health, M.PREFIX)
  log.info("%s Restarting kube-apiserver to load its %s", M.PREFIX, what)
  put_in("kube-apiserver", api_text)
  control_plane.wait_healthy(ctx, "kube-apiserver", health, M.PREFIX)
  control_plane.wait_hash(ctx, "kube-apiserver", node, api_text, api_before, timeout, M.PREFIX)
  control_plane.wait_hash(ctx, "etcd", node, etcd_text, etcd_before, timeout, M.PREFIX)
  local ok, err = fs.remove_tree(M.ASIDE)
  if not ok then error(("removing %s: %s"):format(M.ASIDE, err), 0) end
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
-- quorum meanwhile; opts.what: what the restart loads, for the log ("renewed certificates"). Returns the list restarted and the list skipped ({component, why}).
function M.run(ctx, components, opts)
  opts = opts or {}
  M.put_back_aside() -- first: this_node reads the apiserver's manifest
  local node = M.this_node(ctx)
  local done, skipped, with_etcd = {}, {}, {}
  local apiserver_next = false
  for _, c in ipairs(components) do apiserver_next = apiserver_next or c == "kube-apiserver" end
  for _, c in ipairs(components) do
    local ok, why, size = true, nil, nil -- size: the etcd cluster's members, once known
    if c == "etcd" and not opts.force then
      ok, why = M.etcd_quorum_kept(ctx)
      if ok then size, why = why, nil end
    end
    if with_etcd[c] then
      done[#done + 1] = c
    elseif ok then
      if c == "etcd" and apiserver_next and size and size > 1 and fs.exists(manifests.path("kube-apiserver"))
        and fs.exists(manifests.path("etcd")) then
        local hok, herr = pcall(etcd_with_apiserver_aside, ctx, node, opts.what or M.WHAT)
        if not hok then -- what was set aside comes back before the error is told
          local pok, perr = pcall(M.put_back_aside)
          error(tostring(herr) .. (pok and "" or ("; putting the manifests back: " .. tostring(perr))), 0)
        end
        strike("kube-apiserver")
        with_etcd["kube-apiserver"] = true
      elseif fs.exists(manifests.path(c)) then
        M.restart_one(ctx, c, node, opts.what)
      end
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
