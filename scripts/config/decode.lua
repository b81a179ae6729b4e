-- Type-check a decoded YAML document against a schema type, in place: wrong types are
-- errors, unknown fields warnings (errors when strict), null and "" mean "not set".
local lazy = require "framework.lazy"
local yaml <const> = require "moonadm.yaml"
local suggest <const> = lazy.require "config.suggest" -- errors only

local decode = {}
local fmt <const> = string.format

local function is_seq(v) return type(v) == "table" and getmetatable(v) == yaml.array_mt end
local function is_map(v) return type(v) == "table" and getmetatable(v) ~= yaml.array_mt end

-- How a YAML value reads to a user: `a string ("x")`, `a list`, ...
function decode.describe(v)
  if v == yaml.null then return "null" end
  local t = type(v)
  if t == "string" then return fmt("a string (%q)", v) end
  if t == "boolean" then return fmt("a boolean (%s)", tostring(v)) end
  if math.type(v) == "integer" then return fmt("an integer (%d)", v) end
  if t == "number" then return fmt("a number (%s)", tostring(v)) end
  if is_seq(v) then return "a list" end
  if t == "table" then return "a mapping" end
  return t
end

local EXPECT <const> = {
  string = "a string", int = "an integer", bool = "a boolean (true or false)",
  list = "a list", map = "a mapping", object = "a mapping",
}

local function base_ok(base, v)
  if base == "string" then return type(v) == "string" end
  if base == "int" then return math.type(v) == "integer" end
  if base == "bool" then return type(v) == "boolean" end
  return false
end

-- Keys of a decoded mapping in file order (then by name), so messages come out in order.
local function ordered_keys(node)
  local _, keylines = yaml.pos(node)
  keylines = keylines or {}
  local keys = {}
  for k in pairs(node) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local la, lb = keylines[a] or math.huge, keylines[b] or math.huge
    if la ~= lb then return la < lb end
    return tostring(a) < tostring(b)
  end)
  return keys
end

local walk

-- "did you mean" costs an edit distance per known field: offered for the first HINTS unknown
-- fields of a load only, so a document of 100 000 unknown keys is not minutes of suggestions.
local HINTS <const> = 100
local hinted = setmetatable({}, { __mode = "k" }) -- report -> hints offered

local function nearest(rep, key, names)
  local n = hinted[rep] or 0
  if n >= HINTS then return nil end
  hinted[rep] = n + 1
  return suggest.nearest(key, names)
end

-- Check node against an object type. `hints(key)` may explain an unknown key.
local function walk_object(rep, ty, node, path, file, hints)
  rep:mark(node, file)
  local names = {}
  for k in pairs(ty.fields) do names[#names + 1] = k end
  table.sort(names)
  for _, key in ipairs(ordered_keys(node)) do
    local value = node[key]
    local spec = type(key) == "string" and ty.fields[key]
    local child = path .. "." .. tostring(key)
    if not spec then
      local hint = type(key) == "string" and hints and hints(key)
      local near = not hint and type(key) == "string" and nearest(rep, key, names)
      if near then hint = fmt("did you mean %q?", near) end
      rep:unknown(rep:at(node, key), child, hint)
      node[key] = nil -- kubeadm drops what it does not know
    else
      node[key] = walk(rep, spec[1], value, node, key, child, file, false)
    end
  end
  return node
end

-- Check one value; returns what to store (nil: not set).
function walk(rep, ty, value, parent, key, path, file, in_list)
  if value == yaml.null then
    -- null in a list is Go's zero value; elsewhere it means "not set"
    if not in_list then return nil end
    value = (ty.kind == "object" or ty.kind == "map") and {} or
      (ty.kind == "scalar" and ty.base == "string") and "" or value
  end
  local kind = ty.kind
  if kind == "passthrough" then return value end
  local ok
  if kind == "scalar" then ok = base_ok(ty.base, value)
  elseif kind == "list" then ok = is_seq(value)
  else ok = is_map(value) end
  if not ok then
    local want = kind == "scalar" and EXPECT[ty.base] or EXPECT[kind]
    rep:error(rep:at(parent, key), path, fmt("expected %s, got %s", want, decode.describe(value)))
    return nil
  end
  if kind == "scalar" then
    if value == "" and not in_list then return nil end -- omitempty: "" is "not set"
    return value
  end
  if kind == "list" then
    rep:mark(value, file)
    local n = #value
    for i = 1, n do
      value[i] = walk(rep, ty.elem, value[i], value, i, fmt("%s[%d]", path, i - 1), file, true)
    end
    return value
  end
  if kind == "map" then
    rep:mark(value, file)
    for _, k in ipairs(ordered_keys(value)) do
      if type(k) ~= "string" then
        rep:error(rep:at(value, k), path, fmt("key %s is not a string", decode.describe(k)))
        value[k] = nil
      else
        value[k] = walk(rep, ty.elem, value[k], value, k, path .. "." .. k, file, true)
      end
    end
    return value
  end
  return walk_object(rep, ty, value, path, file)
end

-- Check a whole document (a mapping) of the given kind type, in place.
function decode.document(rep, ty, doc, file, hints)
  return walk_object(rep, ty, doc, ty.name, file, hints)
end

decode.is_seq, decode.is_map = is_seq, is_map
return decode
