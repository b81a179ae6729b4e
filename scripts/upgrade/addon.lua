-- The addon phase of `upgrade apply|node`: CoreDNS and kube-proxy are re-applied only once every
-- control plane runs the new kube-apiserver (kubeadm compares the kube-apiserver container image
-- of the component=kube-apiserver pods per node), and each is skipped when disabled in the
-- ClusterConfiguration or when its ConfigMap (coredns / kube-proxy) is missing.
local images = require "config.images"
local log = require "framework.log"
local cadmin = require "cluster.admin"
local nodeview = require "node.view"
local cluster_addons = require "cluster.addons"
local shape = require "kube.shape"

local M = {}

-- Nodes whose kube-apiserver image is not `image`: sorted list of "node (image)" | nil, why (a Pod
-- of a shape the API never answers with). pods: list items.
function M.not_upgraded(pods, image)
  local by_node = {}
  for i, p in ipairs(pods) do
    local node, why = shape.name(p, "spec.nodeName", true)
    local ctrs, cwhy = shape.get(p, "spec.containers", "array")
    why = why or cwhy
    for j, c in ipairs(ctrs or {}) do
      local name, nwhy = shape.get(c, "name", "string")
      local img, iwhy = shape.get(c, "image", "string")
      why = why or (nwhy or iwhy) and ("spec.containers[%d]: %s"):format(j - 1, nwhy or iwhy)
      if name == "kube-apiserver" and img ~= image then by_node[node or "?"] = img or "?" end
    end
    if why then return nil, ("Pod %d of the list: %s"):format(i, why) end
  end
  local out = {}
  for n, img in pairs(by_node) do out[#out + 1] = ("%s (%s)"):format(n, img) end
  table.sort(out)
  return out
end

-- Whether the addons may be upgraded now; logs why not.
function M.ready(ctx)
  if ctx.data.addons_ready ~= nil then return ctx.data.addons_ready end
  local c = cadmin.client(ctx)
  local image = images.component(ctx.cfg.cluster, "kube-apiserver")
  local list, err = c:list({ apiVersion = "v1", kind = "Pod", namespace = "kube-system" },
    { label_selector = "component=kube-apiserver" })
  if not list then error("[upgrade/addon] listing the kube-apiserver pods: " .. tostring(err), 0) end
  local behind, why = M.not_upgraded(list.items, image)
  if not behind then error("[upgrade/addon] listing the kube-apiserver pods: " .. why, 0) end
  ctx.data.addons_ready = #behind == 0
  if #behind > 0 then
    log.info("[upgrade/addon] Skipping upgrade of addons because control plane instances %s have not been upgraded " ..
      "to %s yet", table.concat(behind, ", "), image)
  end
  return ctx.data.addons_ready
end

local function skip_non_cp(ctx, what)
  if nodeview.runs_control_plane(ctx) then return false end
  log.info("[upgrade/addon] Skipping the addon/%s phase. Not a control plane node.", what)
  return true
end

function M.coredns(ctx)
  if skip_non_cp(ctx, "coredns") then return end
  local cl = ctx.cfg.cluster
  if cl.dns and cl.dns.disabled then
    log.info("[upgrade/addon] Skipping the addon/coredns phase. The addon is disabled.")
    return
  end
  if not ctx.data.coredns_configmap then
    log.info("[upgrade/addon] Skipping the addon/coredns phase. The CoreDNS ConfigMap %q does not exist.", "coredns")
    return
  end
  if not M.ready(ctx) then return end
  cluster_addons.coredns(ctx)
end

function M.kube_proxy(ctx)
  if skip_non_cp(ctx, "kube-proxy") then return end
  local cl = ctx.cfg.cluster
  if cl.proxy and cl.proxy.disabled then
    log.info("[upgrade/addon] Skipping the addon/kube-proxy phase. The addon is disabled.")
    return
  end
  if not ctx.data.proxy_configmap then
    log.info("[upgrade/addon] Skipping the addon/kube-proxy phase. The kube-proxy ConfigMap %q does not exist.", "kube-proxy")
    return
  end
  if not M.ready(ctx) then return end
  cluster_addons.kube_proxy(ctx)
end

return M
