-- Validation of defaulted documents: every field's check from schema.lua, then the rules
-- that span fields (kubeadm's ValidateInitConfiguration & co). Errors and warnings go to
-- the report, worded with where the value came from.
local yaml <const> = require "moonadm.yaml"
local schema <const> = require "config.schema"
local checks <const> = require "config.checks"
local duration <const> = require "config.duration"
local releases <const> = require "config.releases"
local gates <const> = require "config.gates"

local validate = {}
local fmt <const> = string.format

local walk_object

local function check_value(rep, ty, v, parent, key, path)
  if v == nil then return nil end -- a list item dropped for a wrong type (already reported)
  local kind = ty.kind
  if kind == "scalar" then
    local check = ty.check and checks[ty.check]
    if not check then return v end
    local nv, msg = check(v, key)
    if nv == nil then
      rep:error(rep:at(parent, key), path, msg)
      return v
    end
    if msg then rep:warn(rep:at(parent, key), path, msg) end
    return nv
  elseif kind == "list" then
    local n = 0 -- items dropped for a wrong type leave holes: go to the last index
    for i in pairs(v) do if math.type(i) == "integer" and i > n then n = i end end
    for i = 1, n do v[i] = check_value(rep, ty.elem, v[i], v, i, fmt("%s[%d]", path, i - 1)) end
  elseif kind == "map" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do v[k] = check_value(rep, ty.elem, v[k], v, k, path .. "." .. k) end
  elseif kind == "object" then
    walk_object(rep, ty, v, path)
  end
  return v
end

function walk_object(rep, ty, obj, path)
  local names = {}
  for k in pairs(ty.fields) do names[#names + 1] = k end
  table.sort(names)
  for _, name in ipairs(names) do
    local spec, v = ty.fields[name], obj[name]
    local p = path .. "." .. name
    if v == nil or (v == "" and spec.required) then
      if spec.required then rep:error(rep:at(obj, name) or rep:at(obj), p, "field is required") end
    else
      obj[name] = check_value(rep, spec[1], v, obj, name, p)
    end
  end
end

-- kubeadm lowercases the ignored checks, makes a set of them, and refuses "all" plus others.
function validate.ignore_preflight(list)
  local set, out = {}, setmetatable({}, yaml.array_mt)
  for _, item in ipairs(list or {}) do
    for part in (item .. ","):gmatch("([^,]*),") do
      part = part:match("^%s*(.-)%s*$"):lower()
      if part ~= "" and not set[part] then set[part] = true; out[#out + 1] = part end
    end
  end
  table.sort(out)
  if set.all and #out > 1 then return nil, "don't specify individual checks if 'all' is used" end
  return out
end

local function preflight(rep, obj, path)
  if not obj or obj.ignorePreflightErrors == nil then return end
  local list, err = validate.ignore_preflight(obj.ignorePreflightErrors)
  if not list then
    rep:error(rep:at(obj, "ignorePreflightErrors"), path .. ".ignorePreflightErrors", err)
  else
    obj.ignorePreflightErrors = list
  end
end

-- last value of an extra argument, as the component would see it
local function arg_value(args, name)
  local v
  for _, a in ipairs(args or {}) do if a.name == name then v = a.value end end
  return v
end

local function pod_subnet_masks(rep, c)
  local pod = c.networking and c.networking.podSubnet
  if not pod then return end
  local ok, _, fams = checks.cidrs(pod)
  if not ok then return end
  local cm = c.controllerManager and c.controllerManager.extraArgs
  for _, f in ipairs(fams) do
    local given = arg_value(cm, f.fam == 4 and "node-cidr-mask-size-ipv4" or "node-cidr-mask-size-ipv6")
    if not given and #fams == 1 then given = arg_value(cm, "node-cidr-mask-size") end
    local node = given and tonumber(given) or (f.fam == 4 and 24 or 64)
    local where = rep:at(c.networking, "podSubnet")
    if f.bits > node then
      rep:error(where, "ClusterConfiguration.networking.podSubnet", fmt(
        "%q: the size of pod subnet with mask %d is smaller than the size of node subnet with mask %d",
        f.text, f.bits, node))
    elseif node - f.bits > 16 then
      rep:error(where, "ClusterConfiguration.networking.podSubnet", fmt(
        "%q: pod subnet mask (%d) and node-mask (%d) difference is greater than 16", f.text, f.bits, node))
    end
  end
end

local RULES <const> = {}

function RULES.ClusterConfiguration(rep, c)
  local etcd = c.etcd or {}
  if etcd["local"] and etcd.external then
    rep:error(rep:at(etcd, "external"), "ClusterConfiguration.etcd", "local and external are mutually exclusive")
  end
  local ext = etcd.external
  if ext then
    local p = "ClusterConfiguration.etcd.external"
    if not ext.endpoints or #ext.endpoints == 0 then rep:error(rep:at(ext), p .. ".endpoints", "field is required") end
    if (ext.certFile == nil) ~= (ext.keyFile == nil) then
      rep:error(rep:at(ext), p, "either both or none of certFile and keyFile must be set")
    end
    if ext.caFile or ext.certFile then
      for i, e in ipairs(ext.endpoints or {}) do
        if not e:match("^https://") then
          rep:error(rep:at(ext.endpoints, i), fmt("%s.endpoints[%d]", p, i - 1),
            fmt("%q: the URL scheme must be https when TLS files are set", e))
        end
      end
    end
  end
  local v = c.kubernetesVersion
  local min_cp = ("v1.%d.0"):format(releases.OLDEST - 1)
  if v and v:match("^v%d") and checks.compare_versions(v, min_cp) < 0 then
    rep:error(rep:at(c, "kubernetesVersion"), "ClusterConfiguration.kubernetesVersion", fmt(
      "this version of kubeadm only supports deploying clusters with the control plane version >= %s. "
      .. "Current version: %s", min_cp:sub(2), v))
  elseif v and v:match("^v%d") and not releases.of(v) then
    rep:error(rep:at(c, "kubernetesVersion"), "ClusterConfiguration.kubernetesVersion", select(2, releases.of(v)))
  else
    -- each gate as the cluster's own minor's kubeadm takes it
    for name, value in pairs(c.featureGates or {}) do
      local ok, msg = gates.check(name, value, v)
      local where, path = rep:at(c.featureGates, name), "ClusterConfiguration.featureGates." .. name
      if not ok then rep:error(where, path, msg) elseif msg then rep:warn(where, path, msg) end
    end
  end
  pod_subnet_masks(rep, c)
  local cert, ca = duration.parse(c.certificateValidityPeriod), duration.parse(c.caCertificateValidityPeriod)
  if cert and ca and cert > ca then
    rep:warn(rep:at(c, "certificateValidityPeriod"), "ClusterConfiguration.certificateValidityPeriod", fmt(
      "%s is more than the caCertificateValidityPeriod %s", c.certificateValidityPeriod,
      c.caCertificateValidityPeriod))
  end
end

function RULES.InitConfiguration(rep, c)
  preflight(rep, c.nodeRegistration, "InitConfiguration.nodeRegistration")
end

function RULES.JoinConfiguration(rep, c)
  preflight(rep, c.nodeRegistration, "JoinConfiguration.nodeRegistration")
  local d = c.discovery or {}
  local p = "JoinConfiguration.discovery"
  local where = rep:at(c, "discovery") or rep:at(c)
  if not d.bootstrapToken and not d.file then
    rep:error(where, p, "bootstrapToken or file must be set")
  elseif d.bootstrapToken and d.file then
    rep:error(where, p, "bootstrapToken and file cannot both be set")
  end
  local bt = d.bootstrapToken
  if bt then
    local at = rep:at(d, "bootstrapToken") or where
    if not bt.token then rep:error(at, p .. ".bootstrapToken.token", "field is required") end
    if not bt.apiServerEndpoint then
      rep:error(at, p .. ".bootstrapToken.apiServerEndpoint", "field is required (the API server to discover, host:port)")
    end
    if (not bt.caCertHashes or #bt.caCertHashes == 0) and not bt.unsafeSkipCAVerification then
      rep:error(at, p .. ".bootstrapToken.caCertHashes", "using token-based discovery without caCertHashes "
        .. "can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or pass "
        .. "--discovery-token-unsafe-skip-ca-verification flag to continue")
    end
  end
end

function RULES.ResetConfiguration(rep, c) preflight(rep, c, "ResetConfiguration") end

function RULES.UpgradeConfiguration(rep, c)
  for _, part in ipairs { "apply", "node", "plan" } do preflight(rep, c[part], "UpgradeConfiguration." .. part) end
  local lines = c.diff and c.diff.contextLines
  if lines and lines < 0 then
    rep:error(rep:at(c.diff, "contextLines"), "UpgradeConfiguration.diff.contextLines", "must not be negative")
  end
end

-- Validate a defaulted document of kind `name`, normalizing values in place.
function validate.document(rep, name, doc)
  walk_object(rep, schema[name], doc, name)
  RULES[name](rep, doc)
end

return validate
