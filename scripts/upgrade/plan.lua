-- `upgrade plan`: the versions running now (the API server's, the static Pods' images per node,
-- the kubelets', etcd's, CoreDNS's and kube-proxy's) against the targets, which come only from
-- the argument and the releases moonadm knows (config.releases) — never from the network.
-- collect() reads the cluster; build() is pure (the spec feeds it facts); text/json/yaml print.
local yaml = require "moonadm.yaml"
local capi = require "cluster.api"
local cnode = require "cluster.node"
local upload_config = require "cluster.upload_config"
local shape = require "kube.shape"
local version = require "upgrade.version"
local json = require "kube.json"
local tabwriter = require "kube.tabwriter"
local releases = require "config.releases"

local M = {}

M.COMPONENTS = { "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd" }

-- An image's tag as the reference grammar has it (at most 128 bytes), else nil.
local function tag(image)
  local t = image and image:match(":([%w_][%w_.%-]*)$")
  return t and #t <= 128 and t or nil
end

-- An addon's image (a Deployment's or DaemonSet's first container): image | nil (no such object) |
-- nil, why (the read failed, or the object is of a shape the API never answers with).
local function addon_image(c, kind, name)
  local what = ("%s kube-system/%s"):format(kind, name)
  local obj, err = capi.lookup(c, { apiVersion = "apps/v1", kind = kind, namespace = "kube-system", name = name })
  if err then return nil, ("reading %s: %s"):format(what, tostring(err)) end
  if not obj then return nil end
  local image, why = shape.need(obj, "spec.template.spec.containers.1.image", "string")
  if not image then return nil, ("%s: %s"):format(what, why) end
  return image
end

-- facts = {cluster_version, cluster (the ClusterConfiguration), kubelets = {{node, version}},
--          static = {component = {{node, image}}}, coredns = image|nil, kube_proxy = image|nil,
--          dns_disabled, proxy_disabled, local_etcd} | nil, why. Every answer is shape-checked
-- first; without the cluster's configuration there is no plan (kubeadm's stops there too).
function M.collect(c)
  local f = { kubelets = {}, static = {}, local_etcd = true }
  local v, err = capi.cluster_version(c)
  if not v then return nil, "fetching the cluster version: " .. tostring(err) end
  f.cluster_version = v
  local cluster, cerr = upload_config.read_kubeadm(c)
  if not cluster then
    return nil, cerr .. ": `upgrade plan` needs the cluster's configuration (on the first control plane, " ..
      "`moonadm init phase upload-config kubeadm --config <the init's configuration>` uploads it again)"
  end
  f.cluster = cluster
  f.local_etcd = not (cluster.etcd and cluster.etcd.external)
  f.dns_disabled = cluster.dns and cluster.dns.disabled
  f.proxy_disabled = cluster.proxy and cluster.proxy.disabled
  f.etcd_tag = cluster.etcd and cluster.etcd["local"] and cluster.etcd["local"].imageTag
  f.dns_tag = cluster.dns and cluster.dns.imageTag
  local nodes, nerr = cnode.kubelets(c)
  if not nodes then return nil, nerr end
  for i, n in ipairs(nodes) do f.kubelets[i] = { node = n.node, version = n.version } end
  for _, comp in ipairs(M.COMPONENTS) do
    local list, lerr = c:list({ apiVersion = "v1", kind = "Pod", namespace = "kube-system" },
      { label_selector = "component=" .. comp .. ",tier=control-plane" })
    if not list then return nil, ("listing the %s Pods: %s"):format(comp, tostring(lerr)) end
    local rows = {}
    for i, p in ipairs(list.items) do
      local node, why = shape.name(p, "spec.nodeName", true)
      local image, iwhy = shape.get(p, "spec.containers.1.image", "string")
      why = why or iwhy
      if why then return nil, ("listing the %s Pods: Pod %d of the list: %s"):format(comp, i, why) end
      rows[i] = { node = node, image = image }
    end
    table.sort(rows, function(a, b) return (a.node or "") < (b.node or "") end)
    f.static[comp] = rows
  end
  -- a missing addon (disabled, or removed by the user) is no error; any other failure is
  local derr, serr
  f.coredns, derr = addon_image(c, "Deployment", "coredns")
  if derr then return nil, derr end
  f.kube_proxy, serr = addon_image(c, "DaemonSet", "kube-proxy")
  if serr then return nil, serr end
  return f
end

-- What `upgrade plan` offers without --target (offline, as every moonadm lookup): the newest
-- release it knows of the next minor, else of the cluster's own minor (its latest patch).
function M.default_target(cluster_version)
  local v = version.parse(cluster_version or "")
  if not v then return releases.DEFAULT end
  return releases.latest_of(v.minor + 1) or releases.latest_of(v.minor) or cluster_version
end

--[[ The plan: {cluster_version, kubeadm_version, target, up_to_date, policy = version.check result,
     kubelets = rows, components = rows, configs = rows}; a row = {name, node, current, target}. ]]
function M.build(f, opts)
  opts = opts or {}
  local target = version.normalize(opts.target or M.default_target(f.cluster_version))
  if not target then error(("[upgrade/versions] invalid version %q"):format(tostring(opts.target)), 0) end
  local target_release = releases.of(target)
  local plan = { cluster_version = f.cluster_version, kubeadm_version = target_release and target_release.latest
    or releases.newest(), target = target,
    kubelets = {}, components = {} }
  plan.policy = version.check { target = target, cluster = f.cluster_version, kubelets = f.kubelets,
    allow_experimental = opts.allow_experimental, allow_rc = opts.allow_rc }
  local changes = false
  local function row(list, name, node, current, tgt)
    list[#list + 1] = { name = name, node = node or "", current = current or "", target = tgt }
    if current ~= tgt then changes = true end
  end
  for _, k in ipairs(f.kubelets or {}) do row(plan.kubelets, "kubelet", k.node, k.version, target) end
  for _, comp in ipairs { "kube-apiserver", "kube-controller-manager", "kube-scheduler" } do
    for _, r in ipairs(f.static[comp] or {}) do row(plan.components, comp, r.node, tag(r.image), target) end
  end
  if f.kube_proxy and not f.proxy_disabled then row(plan.components, "kube-proxy", "", tag(f.kube_proxy), target) end
  if f.coredns and not f.dns_disabled then
    row(plan.components, "CoreDNS", "", tag(f.coredns), f.dns_tag or (target_release and target_release.coredns) or "?")
  end
  if f.local_etcd ~= false then
    for _, r in ipairs(f.static.etcd or {}) do row(plan.components, "etcd", r.node, tag(r.image), f.etcd_tag or (target_release and releases.etcd_tag(target)) or "?") end
  end
  plan.up_to_date = not changes and version.compare(target, f.cluster_version) == 0
  plan.configs = {
    { group = "kubeproxy.config.k8s.io", current = "v1alpha1", preferred = "v1alpha1", manual = false },
    { group = "kubelet.config.k8s.io", current = "v1beta1", preferred = "v1beta1", manual = false },
  }
  return plan
end

function M.text(plan)
  local o = {}
  o[#o + 1] = ("[upgrade/versions] Cluster version: %s"):format(plan.cluster_version)
  o[#o + 1] = ("[upgrade/versions] kubeadm version: %s"):format(plan.kubeadm_version)
  o[#o + 1] = ("[upgrade/versions] Target version: %s"):format(plan.target)
  o[#o + 1] = ("[upgrade/versions] Latest version in the %s series: %s"):format(version.minor_text(plan.target), plan.target)
  o[#o + 1] = ""
  for _, m in ipairs(plan.policy.warnings) do o[#o + 1] = "[WARNING] " .. m end
  for _, m in ipairs(plan.policy.skippable) do o[#o + 1] = "[WARNING] (needs --force) " .. m end
  for _, m in ipairs(plan.policy.mandatory) do o[#o + 1] = "[ERROR] " .. m end
  if plan.up_to_date then
    o[#o + 1] = "Awesome, you're up-to-date! Enjoy!"
    o[#o + 1] = ""
  elseif #plan.policy.mandatory == 0 then
    o[#o + 1] = "Components that must be upgraded manually after you have upgraded the control plane with 'moonadm upgrade apply':"
    local rows = { { "COMPONENT", "NODE", "CURRENT", "TARGET" } }
    for _, r in ipairs(plan.kubelets) do rows[#rows + 1] = { r.name, r.node, r.current, r.target } end
    o[#o + 1] = tabwriter.format(rows)
    o[#o + 1] = ""
    o[#o + 1] = ("Upgrade to the latest version in the %s series:"):format(version.minor_text(plan.target))
    o[#o + 1] = ""
    rows = { rows[1] }
    for _, r in ipairs(plan.components) do rows[#rows + 1] = { r.name, r.node, r.current, r.target } end
    o[#o + 1] = tabwriter.format(rows)
    o[#o + 1] = ""
    o[#o + 1] = "You can now apply the upgrade by executing the following command:"
    o[#o + 1] = ""
    o[#o + 1] = "\tmoonadm upgrade apply " .. plan.target
    o[#o + 1] = ""
  end
  o[#o + 1] = ("_"):rep(69)
  o[#o + 1] = ""
  o[#o + 1] = "The table below shows the current state of component configs as understood by this version of kubeadm."
  o[#o + 1] = "Configs that have a \"yes\" mark in the \"MANUAL UPGRADE REQUIRED\" column require manual config upgrade or"
  o[#o + 1] = "resetting to kubeadm defaults before a successful upgrade can be performed. The version to manually"
  o[#o + 1] = "upgrade to is denoted in the \"PREFERRED VERSION\" column."
  o[#o + 1] = ""
  local rows = { { "API GROUP", "CURRENT VERSION", "PREFERRED VERSION", "MANUAL UPGRADE REQUIRED" } }
  for _, r in ipairs(plan.configs) do rows[#rows + 1] = { r.group, r.current, r.preferred, r.manual and "yes" or "no" } end
  o[#o + 1] = tabwriter.format(rows)
  o[#o + 1] = ("_"):rep(69)
  return table.concat(o, "\n") .. "\n"
end

-- output.kubeadm.k8s.io/v1alpha3 UpgradePlan.
function M.object(plan)
  local comps = {}
  for _, list in ipairs { plan.kubelets, plan.components } do
    for _, r in ipairs(list) do
      comps[#comps + 1] = { name = r.name, currentVersion = r.current, newVersion = r.target,
        nodeName = r.node ~= "" and r.node or nil }
    end
  end
  local configs = {}
  for _, r in ipairs(plan.configs) do
    configs[#configs + 1] = { configGroup = r.group, currentVersion = r.current, preferredVersion = r.preferred,
      manualUpgradeRequired = r.manual }
  end
  local ups = {}
  if not plan.up_to_date and #plan.policy.mandatory == 0 then
    ups[1] = { description = ("version in the %s series"):format(version.minor_text(plan.target)), components = comps }
  end
  return { apiVersion = "output.kubeadm.k8s.io/v1alpha3", kind = "UpgradePlan", availableUpgrades = ups,
    configVersions = configs }
end

function M.json(plan)
  local o = M.object(plan)
  setmetatable(o.availableUpgrades, json.array_mt)
  return (json.encode(o):gsub("\\/", "/")) .. "\n"
end

function M.yaml(plan)
  local o = M.object(plan)
  setmetatable(o.availableUpgrades, yaml.array_mt)
  return yaml.encode(o)
end

return M
