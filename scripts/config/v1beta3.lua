-- kubeadm.k8s.io/v1beta3 (deprecated): its schema, as differences from v1beta4, and the
-- conversion of a checked v1beta3 document into v1beta4 shape (kubeadm's v1beta3 conversion).
local yaml <const> = require "moonadm.yaml"
local schema <const> = require "config.schema"
local C <const> = require "config.constants"

local v1beta3 = {}
local T <const> = schema.types
local string_map <const> = schema.map(T.string)

-- Copy a type graph, then edit objects by name.
local function copy_type(ty, seen)
  if seen[ty] then return seen[ty] end
  if ty.kind == "object" then
    local out = { kind = "object", name = ty.name, fields = {} }
    seen[ty] = out
    for k, spec in pairs(ty.fields) do
      local s = {}
      for sk, sv in pairs(spec) do s[sk] = sv end
      s[1] = copy_type(spec[1], seen)
      out.fields[k] = s
    end
    return out
  elseif ty.kind == "list" or ty.kind == "map" then
    local out = { kind = ty.kind }
    seen[ty] = out
    out.elem = copy_type(ty.elem, seen)
    return out
  end
  return ty
end

local EDITS <const> = {
  InitConfiguration = { drop = { "dryRun", "timeouts" } },
  JoinConfiguration = { drop = { "dryRun", "timeouts" } },
  ClusterConfiguration = { drop = { "encryptionAlgorithm", "certificateValidityPeriod",
    "caCertificateValidityPeriod", "proxy" } },
  APIServer = { drop = { "extraEnvs" }, add = { extraArgs = string_map, timeoutForControlPlane = T.duration } },
  ControlPlaneComponent = { drop = { "extraEnvs" }, add = { extraArgs = string_map } },
  LocalEtcd = { drop = { "extraEnvs" }, add = { extraArgs = string_map } },
  NodeRegistrationOptions = { drop = { "imagePullSerial" }, add = { kubeletExtraArgs = string_map } },
  DNS = { drop = { "disabled" } },
  Discovery = { add = { timeout = T.duration } },
}

local function edit(ty, done)
  if done[ty] then return end
  done[ty] = true
  if ty.kind == "object" then
    local e = EDITS[ty.name]
    if e then
      for _, f in ipairs(e.drop or {}) do ty.fields[f] = nil end
      for f, t in pairs(e.add or {}) do ty.fields[f] = { t } end
    end
    for _, spec in pairs(ty.fields) do edit(spec[1], done) end
  elseif ty.kind == "list" or ty.kind == "map" then
    edit(ty.elem, done)
  end
end

v1beta3.kinds = {}
do
  local seen, done = {}, {}
  for _, name in ipairs { "InitConfiguration", "ClusterConfiguration", "JoinConfiguration" } do
    local ty = copy_type(schema[name], seen)
    edit(ty, done)
    v1beta3.kinds[name] = ty
  end
end

-- map{name=value} -> sorted [{name, value}], each item keeping the line of its key
local function to_args(rep, map)
  if map == nil then return nil end
  local names = {}
  for k in pairs(map) do names[#names + 1] = k end
  table.sort(names)
  local args = setmetatable({}, yaml.array_mt)
  for i, k in ipairs(names) do
    local item = { name = k, value = map[k] }
    local where = rep:at(map, k)
    rep:pin(item, "name", where); rep:pin(item, "value", where); rep:pin(item, nil, where)
    rep:pin(args, i, where)
    args[i] = item
  end
  rep:pin(args, nil, rep:at(map))
  return args
end

local function move(rep, from, key, to, newkey)
  local where = rep:at(from, key)
  to[newkey] = from[key]
  from[key] = nil
  rep:pin(to, newkey, where)
end

-- Convert a checked v1beta3 document (in place) to v1beta4. The control-plane timeout of a
-- ClusterConfiguration belongs to Init/JoinConfiguration in v1beta4: it is returned as
-- {value, where} for the caller to move there.
function v1beta3.convert(rep, kind, doc)
  doc.apiVersion = C.api_version
  local moved_timeout
  local function component(c)
    if c then c.extraArgs = to_args(rep, c.extraArgs) end
  end
  local function node_reg(n)
    if n then n.kubeletExtraArgs = to_args(rep, n.kubeletExtraArgs) end
  end
  if kind == "ClusterConfiguration" then
    local api = doc.apiServer
    if api and api.timeoutForControlPlane then
      moved_timeout = { value = api.timeoutForControlPlane, where = rep:at(api, "timeoutForControlPlane") }
      api.timeoutForControlPlane = nil
    end
    component(doc.apiServer); component(doc.controllerManager); component(doc.scheduler)
    component(doc.etcd and doc.etcd["local"])
  elseif kind == "InitConfiguration" then
    node_reg(doc.nodeRegistration)
  elseif kind == "JoinConfiguration" then
    node_reg(doc.nodeRegistration)
    local d = doc.discovery
    if d and d.timeout then
      doc.timeouts = doc.timeouts or {}
      move(rep, d, "timeout", doc.timeouts, "discovery")
    end
  end
  return moved_timeout
end

-- Place a v1beta3 apiServer.timeoutForControlPlane into an Init/JoinConfiguration.
function v1beta3.apply_timeout(rep, doc, moved)
  if not (doc and moved) then return end
  doc.timeouts = doc.timeouts or {}
  if doc.timeouts.controlPlaneComponentHealthCheck == nil then
    doc.timeouts.controlPlaneComponentHealthCheck = moved.value
    rep:pin(doc.timeouts, "controlPlaneComponentHealthCheck", moved.where)
  end
end

return v1beta3
