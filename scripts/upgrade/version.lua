-- kubeadm's upgrade version policy (EnforceVersionPolicies): which targets an upgrade may go to
-- from the cluster's version with this kubeadm (the newest release moonadm knows of the target's minor), and the kubelet
-- skew. Pure: every input is given, nothing is looked up.
local releases = require "config.releases"
local log = require "framework.log"

local M = {}

-- "v1.35.4", "1.35.4", "v1.36.0-rc.1", "v1.35.4+abc" → {major, minor, patch, pre, text} | nil, message.
function M.parse(s)
  if type(s) ~= "string" then return nil, ("invalid version %q"):format(tostring(s)) end
  local body = s:gsub("^v", "")
  local build = body:match("%+(.*)$")
  body = body:gsub("%+.*$", "")
  local maj, min, pat, pre = body:match("^(%d+)%.(%d+)%.(%d+)%-?(.*)$")
  if not maj then return nil, ("could not parse %q as a version: expected vMAJOR.MINOR.PATCH"):format(s) end
  return { major = tonumber(maj), minor = tonumber(min), patch = tonumber(pat), pre = pre ~= "" and pre or nil,
    build = build, text = "v" .. body .. (build and ("+" .. build) or "") }
end

-- A version of the form vX.Y.Z (normalised text) | nil.
function M.normalize(s)
  local v = M.parse(s)
  return v and v.text
end

-- -1, 0, 1 (pre-releases sort before the release, compared as text).
function M.compare(a, b)
  if type(a) == "string" then a = assert(M.parse(a)) end
  if type(b) == "string" then b = assert(M.parse(b)) end
  for _, k in ipairs { "major", "minor", "patch" } do
    if a[k] ~= b[k] then return a[k] < b[k] and -1 or 1 end
  end
  if a.pre == b.pre then return 0 end
  if not a.pre then return 1 end
  if not b.pre then return -1 end
  return a.pre < b.pre and -1 or 1
end

function M.minor_text(v)
  if type(v) == "string" then v = assert(M.parse(v)) end
  return ("v%d.%d"):format(v.major, v.minor)
end

M.KUBELET_SKEW = 3 -- kubelets may be up to 3 minors older than the control plane

--[[ M.check{target=, cluster=, kubeadm= (default: the newest release moonadm knows of the target minor),
             allow_experimental=, allow_rc=, kubelets = {{node=, version=}}}
Returns {mandatory = {msg...}, skippable = {msg...}, warnings = {msg...}}. Mandatory errors stop an
upgrade even with --force; skippable ones only without it; warnings are printed. ]]
function M.check(o)
  local r = { mandatory = {}, skippable = {}, warnings = {} }
  local function add(list, fmt, ...) list[#list + 1] = fmt:format(...) end
  local target, terr = M.parse(o.target)
  if not target then add(r.mandatory, "%s", terr) return r end
  -- "the kubeadm version" is the newest release moonadm knows of the target's minor: one moonadm
  -- is each minor's kubeadm (a newer patch than it knows needs --force, as a newer kubeadm would)
  local kubeadm_s = o.kubeadm or releases.latest_of(math.max(target.minor, releases.OLDEST)) or releases.newest()
  if not o.kubeadm and target.major == 1 and target.minor > releases.NEWEST then
    add(r.mandatory, "%s", select(2, releases.of(target.text)))
  end
  local cluster, cerr = M.parse(o.cluster)
  if not cluster then add(r.mandatory, "the cluster version: %s", cerr) return r end
  local kubeadm = assert(M.parse(kubeadm_s))
  local min_cp_s = ("v1.%d.0"):format(releases.OLDEST - 1)
  local min_cp = M.parse(min_cp_s)

  if target.major ~= cluster.major then
    add(r.mandatory, "Specified version to upgrade to %q changes the major version of the cluster (%s): not supported",
      o.target, cluster.text)
  end
  if M.compare(target, min_cp) < 0 then
    add(r.mandatory, "Specified version to upgrade to %q is equal to or lower than the minimum supported version %q. " ..
      "Please specify a higher version to upgrade to", o.target, min_cp_s)
  end
  if target.minor > cluster.minor + 1 then
    add(r.mandatory, "Specified version to upgrade to %q is too high; kubeadm can upgrade only 1 minor version at a time",
      o.target)
  end
  if target.minor < cluster.minor then
    add(r.mandatory, "Specified version to upgrade to %q is lower than the cluster version %q: downgrading across " ..
      "minor versions is not supported", o.target, cluster.text)
  elseif M.compare(target, cluster) < 0 then
    add(r.skippable, "Specified version to upgrade to %q is equal to or lower than the cluster version %q. " ..
      "Downgrades are not supported yet", o.target, cluster.text)
  end
  if target.minor > kubeadm.minor or (target.minor == kubeadm.minor and M.compare(target, kubeadm) > 0
      and target.major == kubeadm.major) then
    add(r.skippable, "Specified version to upgrade to %q is higher than the kubeadm version %q. Upgrade kubeadm " ..
      "first using the tool you used to install kubeadm", o.target, kubeadm_s)
  end
  if target.pre then
    local rc = target.pre:match("^rc")
    if not (o.allow_experimental or (rc and o.allow_rc)) then
      add(r.skippable, "Specified version to upgrade to %q is an unstable version and such upgrades weren't allowed " ..
        "via setting the --allow-*-upgrades flags", o.target)
    end
  end
  -- the kubelets: none newer than the target, none older than target - 3 minors
  local too_old, too_new = {}, {}
  for _, k in ipairs(o.kubelets or {}) do
    local kv = M.parse(k.version)
    if not kv then
      add(r.warnings, "could not parse the kubelet version %q of node %s", tostring(k.version), tostring(k.node))
    elseif kv.minor < target.minor - M.KUBELET_SKEW then
      too_old[#too_old + 1] = ("%s (%s)"):format(k.node, kv.text)
    elseif M.compare(kv, target) > 0 and kv.minor > target.minor then
      too_new[#too_new + 1] = ("%s (%s)"):format(k.node, kv.text)
    end
  end
  if #too_old > 0 then
    add(r.warnings, "There are kubelets in this cluster that are too old for %s (more than %d minor versions behind): %s",
      target.text, M.KUBELET_SKEW, table.concat(too_old, ", "))
  end
  if #too_new > 0 then
    add(r.warnings, "There are kubelets in this cluster that are newer than the control plane version %s: %s",
      target.text, table.concat(too_new, ", "))
  end
  return r
end

-- Raises a clear error from a check result (force: skippable ones become warnings).
function M.enforce(r, force, warn)
  warn = warn or function(m) log.warn("%s", m) end
  for _, m in ipairs(r.warnings) do warn(m) end
  local errs = {}
  for _, m in ipairs(r.mandatory) do errs[#errs + 1] = "\t- " .. m end
  for _, m in ipairs(r.skippable) do
    if force then warn(m .. " (ignored because of --force)") else errs[#errs + 1] = "\t- " .. m end
  end
  if #errs > 0 then
    local hint = (#r.skippable > 0 and not force) and
      "\n\nThe errors not marked as mandatory can be skipped with --force" or ""
    error(("[upgrade/version] FATAL: the upgrade is not allowed:\n%s%s"):format(table.concat(errs, "\n"), hint), 0)
  end
end

return M
