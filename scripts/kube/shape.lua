-- The shape of an API answer, checked before it is used. kube.client hands back a table for an
-- object and an `items` array for a list; below that a field may be of any type, of any size (a
-- broken or hostile apiserver, a proxy), so nothing here indexes an answer blindly: a reader asks
-- for a field of a type, and a name the API gave is held to the API's own grammar before it is
-- printed, sorted or written anywhere. Errors say which field and what it is; the caller adds which
-- object ("Node 3 of the list", "ConfigMap kube-system/kubeadm-config") and what to do.
local json = require "kube.json"
local net = require "config.net"

local M = {}

M.MAX_NAME = 253 -- a DNS subdomain (apimachinery's IsDNS1123Subdomain): Node, Pod, Secret names

local SHOWN = 64 -- bytes of a value a message quotes

-- A value for a message: a string quoted on one line and cut at SHOWN bytes, else its type.
function M.quote(v)
  if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
  if type(v) ~= "string" then return v == json.null and "null" or type(v) end
  local cut = #v > SHOWN and v:sub(1, SHOWN) or v
  local q = ("%q"):format(cut):gsub("\\\n", "\\n"):gsub("\r", "\\r")
  if #v > SHOWN then q = ("%s... (%d bytes)"):format(q, #v) end
  return q
end

local JSON_TYPE = { table = "an object", string = "a string", number = "a number", boolean = "a boolean", array = "an array" }

-- What a decoded JSON value is, for a message.
local function kind(v)
  if type(v) == "table" and (getmetatable(v) == json.array_mt or #v > 0) then return "an array" end
  return JSON_TYPE[type(v)] or v == json.null and "null" or type(v)
end

-- "spec.containers.1.image" as JSON has it: spec.containers[0].image.
local function json_path(path)
  return (path:gsub("%.(%d+)", function(i) return ("[%d]"):format(tonumber(i) - 1) end))
end

-- v | nil (absent: missing or JSON null anywhere on the path) | nil, err (a step or the value of
-- another type). path: dotted keys, integers index arrays (1-based); want: a Lua type name, "array"
-- (a table: a JSON array, or an empty object, which cjson cannot tell from []) or nil.
function M.get(obj, path, want)
  local v, walked = obj, {}
  for key in path:gmatch("[^.]+") do
    if v == nil or v == json.null then return nil end
    if type(v) ~= "table" then
      return nil, ("%s is %s, not an object"):format(#walked > 0 and json_path(table.concat(walked, ".")) or "it", kind(v))
    end
    walked[#walked + 1] = key
    v = v[tonumber(key) and math.tointeger(tonumber(key)) or key]
  end
  if v == nil or v == json.null then return nil end
  if want and type(v) ~= (want == "array" and "table" or want) then
    return nil, ("%s is %s, not %s"):format(json_path(path), kind(v), JSON_TYPE[want] or want)
  end
  return v
end

-- As get, absence an error too.
function M.need(obj, path, want)
  local v, err = M.get(obj, path, want)
  if v == nil and not err then err = ("%s is missing"):format(json_path(path)) end
  return v, err
end

-- A name the API gave (path: metadata.name unless told): a DNS subdomain of at most MAX_NAME bytes,
-- as the apiserver validates every Node, Pod and Secret name; anything else is no answer of its.
-- optional: absence is nil, not an error.
function M.name(obj, path, optional)
  path = path or "metadata.name"
  local v, err = (optional and M.get or M.need)(obj, path, "string")
  if v == nil then return nil, err end
  if not net.is_dns_subdomain(v) then
    return nil, ("%s %s is not a Kubernetes name (a DNS subdomain of at most %d bytes)"):format(json_path(path),
      M.quote(v), M.MAX_NAME)
  end
  return v
end

-- The string map at path (a ConfigMap's or Secret's `data`): {} when absent; nil, err when it is
-- not an object of strings.
function M.strings(obj, path)
  local t, err = M.get(obj, path, "table")
  if err then return nil, err end
  if t and kind(t) == "an array" then return nil, ("%s is an array, not an object"):format(json_path(path)) end
  for k, v in pairs(t or {}) do
    if type(v) ~= "string" then
      local key = type(k) == "string" and #k <= SHOWN and k:match("^[%w%-_.]+$") and k or M.quote(k)
      return nil, ("%s.%s is %s, not a string"):format(json_path(path), key, kind(v))
    end
  end
  return t or {}
end

return M
