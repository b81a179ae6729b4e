-- kubeadm v1.35's defaulting (SetDefaults_* of v1beta4), driven by schema.lua: value structs
-- are created, `default` values fill unset fields; the conditional rules are below.
local yaml <const> = require "moonadm.yaml"
local schema <const> = require "config.schema"
local C <const> = require "config.constants"
local util <const> = require "framework.util"

local defaults = {}

defaults.copy = util.deepcopy

local function unset(v) return v == nil or v == "" or v == 0 end

-- Fill an object of type ty: structs first, then defaults, then the same inside.
local function fill(obj, ty)
  for name, spec in pairs(ty.fields) do
    if obj[name] == nil and spec.struct then obj[name] = {} end
    if spec.default ~= nil and unset(obj[name]) then obj[name] = util.deepcopy(spec.default) end
    local v, t = obj[name], spec[1]
    if v ~= nil then
      if t.kind == "object" then
        fill(v, t)
      elseif t.kind == "list" and t.elem.kind == "object" then
        for _, item in ipairs(v) do fill(item, t.elem) end
      end
    end
  end
end

-- the rules that are not "fill when unset"
local BEFORE <const> = {
  InitConfiguration = function(c)
    -- no tokens: one, whose id and secret are generated at run time
    if c.bootstrapTokens == nil or #c.bootstrapTokens == 0 then
      c.bootstrapTokens = setmetatable({ {} }, yaml.array_mt)
    end
  end,
  ClusterConfiguration = function(c)
    c.etcd = c.etcd or {}
    if c.etcd["local"] == nil and c.etcd.external == nil then c.etcd["local"] = {} end
  end,
  JoinConfiguration = function(c)
    local d = c.discovery or {}
    c.discovery = d
    if d.tlsBootstrapToken == nil and d.bootstrapToken then d.tlsBootstrapToken = d.bootstrapToken.token end
    if d.file and type(d.file.kubeConfigPath) == "string" then
      -- a file:// URL becomes its path
      local path = d.file.kubeConfigPath:match("^file://(/.*)$")
      if path then d.file.kubeConfigPath = path end
    end
  end,
}

-- Default a document of kind `name` (e.g. "ClusterConfiguration") in place; create it if nil.
function defaults.apply(name, doc)
  doc = doc or {}
  doc.apiVersion, doc.kind = C.api_version, name
  if BEFORE[name] then BEFORE[name](doc) end
  fill(doc, schema[name])
  return doc
end

return defaults
