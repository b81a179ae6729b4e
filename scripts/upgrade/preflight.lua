-- Preflight of `upgrade apply|node`: the cluster's health (API server ready, control-plane Nodes
-- Ready, this node's static Pod manifests present), the version policy against the cluster's
-- version and its kubelets, --print-config, and kubeadm's confirmation prompt unless --yes.
local log = require "framework.log"
local yaml = require "moonadm.yaml"
local config = require "config"
local cadmin = require "cluster.admin"
local capi = require "cluster.api"
local cluster_node = require "cluster.node"
local unode = require "upgrade.node"
local version = require "upgrade.version"
local releases = require "config.releases"
local nodeview = require "node.view"
local node_preflight = require "preflight.checks"

local M = {}

-- The checks to ignore: --ignore-preflight-errors and the configuration's apply|node part.
local function ignore_list(ctx)
  local list = {}
  for _, x in ipairs(ctx.flags and ctx.flags["ignore-preflight-errors"] or {}) do list[#list + 1] = x end
  for _, x in ipairs(unode.part(ctx).ignorePreflightErrors or {}) do list[#list + 1] = x end
  return list
end

local function ignored(ctx, name)
  for _, x in ipairs(ignore_list(ctx)) do
    if x:lower() == "all" or x:lower() == name:lower() then return true end
  end
  return false
end

-- Raises kubeadm's preflight failure with these "\t[ERROR Name]: msg" lines.
local function fatal(errs)
  error("[preflight] Some fatal errors occurred:\n" .. table.concat(errs, "\n") ..
    "\n[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`", 0)
end

-- kubeadm's health checks; errors are collected and reported together.
function M.health(ctx, c, nodes)
  log.info("[upgrade] Running cluster health checks")
  local errs = {}
  local function check(name, ok, msg)
    if ok then return end
    if ignored(ctx, name) then log.warn("[preflight] %s: %s (ignored)", name, msg)
    else errs[#errs + 1] = ("\t[ERROR %s]: %s"):format(name, msg) end
  end
  local resp, err = c:raw("GET", "/readyz")
  check("APIServerReady", resp and resp.status == 200,
    "the API server is not ready: " .. (resp and ("HTTP " .. resp.status) or tostring(err)))
  local bad = {}
  for _, n in ipairs(nodes) do if n.control_plane and not n.ready then bad[#bad + 1] = n.node end end
  check("ControlPlaneNodesReady", #bad == 0, "there are NotReady control-planes in the cluster: [" ..
    table.concat(bad, " ") .. "]")
  if nodeview.runs_control_plane(ctx) then
    local missing = {}
    for _, comp in ipairs { "kube-apiserver", "kube-controller-manager", "kube-scheduler" } do
      if not ctx:exists(("/etc/kubernetes/manifests/%s.yaml"):format(comp)) then missing[#missing + 1] = comp end
    end
    check("StaticPodManifest", #missing == 0, "the static Pod manifests of these components are missing: " ..
      table.concat(missing, ", "))
  end
  if #errs > 0 then fatal(errs) end
end

function M.confirm(ctx)
  if ctx.flags.yes or ctx.dry_run then return end
  io.stdout:write("[upgrade] Are you sure you want to proceed? [y/N]: ")
  io.stdout:flush()
  local answer = io.stdin:read("l")
  if not answer or not answer:match("^%s*[yY]") then
    error("won't proceed; the user didn't answer (Y|y) in order to continue", 0)
  end
end

function M.apply(ctx)
  local c = cadmin.client(ctx)
  log.info("[preflight] Running pre-flight checks.")
  local nodes, nerr = cluster_node.kubelets(c)
  if not nodes then error("[upgrade] " .. nerr, 0) end
  M.health(ctx, c, nodes)
  local current, verr = capi.cluster_version(c)
  if not current then error("[upgrade/version] fetching the cluster version: " .. tostring(verr), 0) end
  local target = ctx.cfg.cluster.kubernetesVersion
  local part = unode.part(ctx)
  log.info("[upgrade/version] You have chosen to upgrade to version %q", target)
  log.info("[upgrade/versions] Cluster version: %s", current)
  local tv = version.parse(target or "")
  local tr = tv and releases.of(tv.text)
  log.info("[upgrade/versions] kubeadm version: %s", tr and tr.latest or releases.newest())
  local r = version.check { target = target, cluster = current, kubelets = nodes,
    allow_experimental = part.allowExperimentalUpgrades, allow_rc = part.allowRCUpgrades }
  version.enforce(r, part.forceUpgrade or (ctx.flags and ctx.flags.force))
  -- kubeadm's RunPullImagesCheck: every image of the target release present or pulled before any
  -- manifest is replaced, so a missing image stops the upgrade here, not mid-way with etcd down
  if nodeview.runs_control_plane(ctx) then node_preflight.pull_images(ctx, ctx.cfg.cluster, nil, ignore_list(ctx)) end
  if part.printConfig or (ctx.flags and ctx.flags["print-config"]) then
    log.info("[upgrade/config] Configuration used:")
    log.result(yaml.encode(config.cluster_for_upload(ctx.cfg.cluster)))
  end
  M.confirm(ctx)
end

-- `upgrade node` before the first control plane's `upgrade apply`: this node's kubelet (already
-- upgraded by its package) is of a newer minor than the cluster's version, a skew the kubelet may
-- not have (never newer than the API server). kubeadm does not check this; moonadm refuses, saying
-- what to run first. No kubelet in PATH: nothing to compare (kubeadm's node preflight needs none).
function M.kubelet_newer(ctx, cluster_version, installed)
  local kv, cv = version.parse(installed or ""), version.parse(cluster_version or "")
  if not kv or not cv or kv.major ~= cv.major or kv.minor <= cv.minor then return end
  local msg = ("this node's kubelet is %s, newer than the cluster's version %s (kubeadm-config): a kubelet may not "
    .. "be newer than the API server. Run `moonadm upgrade apply v%d.%d.x` on the first control plane first, then "
    .. "`moonadm upgrade node` here"):format(installed, cluster_version, kv.major, kv.minor)
  if ignored(ctx, "KubeletVersion") then log.warn("[preflight] KubeletVersion: %s (ignored)", msg) return end
  fatal { "\t[ERROR KubeletVersion]: " .. msg }
end

function M.node(ctx)
  log.info("[preflight] Running pre-flight checks")
  M.kubelet_newer(ctx, ctx.cfg.cluster.kubernetesVersion, node_preflight.installed_kubelet_version())
  if not nodeview.runs_control_plane(ctx) then
    log.info("[preflight] Skipping prepull. Not a control plane node.")
    return
  end
  local target = ctx.cfg.cluster.kubernetesVersion
  log.info("[upgrade] Upgrading this control-plane node to the cluster's version %s", tostring(target))
  local v = version.parse(target or "")
  if v and v.minor > releases.NEWEST then
    error(("[upgrade] the cluster's version %s is newer than this moonadm speaks (up to %s): upgrade moonadm first"):format(
      target, releases.newest()), 0)
  end
  node_preflight.pull_images(ctx, ctx.cfg.cluster, nil, ignore_list(ctx))
end

return M
