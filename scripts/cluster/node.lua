-- This node's Node object: wait until the kubelet has registered it (polling within the API-call
-- timeout, as kubeadm's PatchNode retries), then patch it with optimistic concurrency. Also the
-- mark-control-plane labels and taints.
local core = require "moonadm.core"
local config = require "config"
local json = require "kube.json"
local shape = require "kube.shape"
local log = require "framework.log"
local capi = require "cluster.api"
local cadmin = require "cluster.admin"
local cri = require "cri.socket"
local nodeview = require "node.view"

local M = {}

M.LABELS = { "node-role.kubernetes.io/control-plane", "node.kubernetes.io/exclude-from-external-load-balancers" }
M.DEFAULT_TAINT = { key = "node-role.kubernetes.io/control-plane", effect = "NoSchedule" }
M.CRI_SOCKET_ANNOTATION = "kubeadm.alpha.kubernetes.io/cri-socket"

function M.name(ctx) return nodeview.name(ctx) end

-- Every Node as upgrade reads it, sorted by name: {{node=, version= (the kubelet's, or nil), ready=,
-- control_plane=}} | nil, why. Each is shape-checked (the name a DNS subdomain, at most 253 bytes)
-- before anything prints or sorts it.
function M.kubelets(c)
  local list, err = c:list { apiVersion = "v1", kind = "Node" }
  if not list then return nil, "listing the Nodes: " .. tostring(err) end
  local out = {}
  for i, n in ipairs(list.items) do
    local name, why = shape.name(n)
    local version, verr = shape.get(n, "status.nodeInfo.kubeletVersion", "string")
    local labels, lerr = shape.strings(n, "metadata.labels")
    local conds, cerr = shape.get(n, "status.conditions", "array")
    why = why or verr or lerr or cerr
    local ready = false
    for j, cond in ipairs(conds or {}) do
      local ctype, terr = shape.get(cond, "type", "string")
      local status, serr = shape.get(cond, "status", "string")
      if terr or serr then why = why or ("status.conditions[%d]: %s"):format(j - 1, terr or serr) end
      if ctype == "Ready" then ready = status == "True" end
    end
    if why then
      return nil, ("listing the Nodes: Node %d of the list%s: %s: the API server's answer is not a Node list")
        :format(i, name and (" (" .. name .. ")") or "", why)
    end
    out[i] = { node = name, version = version, ready = ready,
      control_plane = labels["node-role.kubernetes.io/control-plane"] ~= nil }
  end
  table.sort(out, function(a, b) return a.node < b.node end)
  return out
end

-- What the patches below read of a live Node, shape-checked: its resourceVersion | nil, why.
function M.check(node)
  local _, why = shape.name(node)
  local rv, rwhy = shape.need(node, "metadata.resourceVersion", "string")
  local _, awhy = shape.strings(node, "metadata.annotations")
  local _, lwhy = shape.strings(node, "metadata.labels")
  local taints, twhy = shape.get(node, "spec.taints", "array")
  why = why or rwhy or awhy or lwhy or twhy
  for i, t in ipairs(taints or {}) do
    if why then break end
    for _, f in ipairs { "key", "value", "effect" } do
      local _, fwhy = shape.get(t, f, "string")
      if fwhy then why = ("spec.taints[%d]: %s"):format(i - 1, fwhy) break end
    end
  end
  if why then return nil, why end
  return rv
end

-- mutate(node) returns a merge patch (carrying metadata.resourceVersion is added here) or nil when
-- nothing is to change. Retries on 404 (not registered yet) and 409 until the API-call timeout.
function M.patch(ctx, c, mutate, prefix)
  local name = M.name(ctx)
  if ctx.dry_run then
    log.info("[dryrun] Would patch Node %q", name)
    return
  end
  local timeout = capi.timeout(ctx, "kubernetesAPICall")
  local t0 = core.now()
  local deadline = t0 + timeout
  local waited = false
  local last
  while true do
    local node, err = c:get({ apiVersion = "v1", kind = "Node", name = name }, { timeout = 5 })
    local rv, why
    if node then rv, why = M.check(node) end
    if node and not rv then
      error(("reading Node %q: the API server's answer is not a Node: %s"):format(name, why), 0)
    end
    if node then
      local p = mutate(node)
      if not p then return node, "unchanged" end
      p.metadata = p.metadata or {}
      p.metadata.resourceVersion = rv
      local got, perr = c:patch({ apiVersion = "v1", kind = "Node", name = name }, p, { type = "merge" })
      if got then
        if waited then log.info("%sThe kubelet registered Node %q after %s", prefix and (prefix .. " ") or "", name, capi.go_duration(core.now() - t0)) end
        return got, "patched"
      end
      if perr.code ~= 409 then error(("patching Node %q: %s"):format(name, tostring(perr)), 0) end
      last = perr
    elseif err.code == 404 then
      if not waited then
        log.info("%sWaiting for the kubelet to register Node %q. This can take up to %s", prefix and (prefix .. " ") or "", name, capi.go_duration(timeout))
      end
      waited, last = true, err
    else
      last = err
    end
    if core.now() >= deadline then
      error(("error patching Node %q: timed out after %s waiting for it: %s"):format(name, capi.go_duration(timeout),
        tostring(last)), 0)
    end
    core.sleep(0.25)
  end
end

-- kubeadm's AnnotateCRISocket (NodeLocalCRISocket=false): the node's CRI socket as an annotation
-- on its Node, waiting for the kubelet to register it; raises when the Node never takes it.
function M.annotate_cri_socket(ctx, c, prefix)
  local socket = cri.socket(ctx)
  log.v(1, "%s preserving the crisocket information for the node", prefix)
  return M.patch(ctx, c, function(n)
    if (n.metadata.annotations or {})[M.CRI_SOCKET_ANNOTATION] == socket then return nil end
    return { metadata = { annotations = { [M.CRI_SOCKET_ANNOTATION] = socket } } }
  end, prefix)
end

-- The taints to add: nodeRegistration.taints (nil → the default control-plane taint, [] → none).
function M.taints(ctx)
  local nr = config.node_document(ctx.cfg).nodeRegistration or {}
  if nr.taints == nil then return { M.DEFAULT_TAINT } end
  local out = {}
  for _, t in ipairs(nr.taints) do out[#out + 1] = t end
  return out
end

local function taint_text(t)
  return t.key .. ((t.value and t.value ~= "") and ("=" .. t.value) or "") .. ":" .. t.effect
end

-- The merge patch that adds the labels and taints to a live node (nil when already there).
function M.mark_patch(node, taints)
  local labels = node.metadata.labels or {}
  local plabels, changed = {}, false
  for _, l in ipairs(M.LABELS) do
    if labels[l] == nil then plabels[l] = ""; changed = true end
  end
  local have = (node.spec and node.spec.taints) or {}
  local list = {}
  for _, t in ipairs(have) do list[#list + 1] = t end
  for _, t in ipairs(taints) do
    local found = false
    for _, h in ipairs(have) do
      if h.key == t.key and h.effect == t.effect then found = true end
    end
    if not found then
      list[#list + 1] = { key = t.key, value = t.value, effect = t.effect }
      changed = true
    end
  end
  if not changed then return nil end
  local p = { metadata = {} }
  if next(plabels) then p.metadata.labels = plabels end
  if #list > #have then p.spec = { taints = json.array(list) } end
  return p
end

function M.mark_control_plane(ctx)
  local c = cadmin.client(ctx)
  local name = M.name(ctx)
  local taints = M.taints(ctx)
  log.info("[mark-control-plane] Marking the node %s as control-plane by adding the labels: [%s]", name,
    table.concat(M.LABELS, " "))
  if #taints > 0 then
    local t = {}
    for _, x in ipairs(taints) do t[#t + 1] = taint_text(x) end
    log.info("[mark-control-plane] Marking the node %s as control-plane by adding the taints [%s]", name, table.concat(t, " "))
  end
  return M.patch(ctx, c, function(node) return M.mark_patch(node, taints) end, "[mark-control-plane]")
end

return M
