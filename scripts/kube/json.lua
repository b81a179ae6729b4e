-- JSON for API objects. lua-cjson 2.1.0 (Debian's) cannot tell an empty list from an empty object,
-- and the API server cares ("spec.x: expected array, got object"). So:
--   decode(text): cjson.decode, with empty arrays kept as tables carrying json.array_mt (marked
--                 before cjson sees them: engine/json.c's rewrite);
--   encode(v):    tables with json.array_mt or yaml's array_mt (or non-empty 1..n lists) are arrays,
--                 other tables objects (keys sorted); cjson.null / yaml.null are null.
local cjson = require "cjson"
local encoding = require "moonadm.encoding"
local yaml_ok, yaml = pcall(require, "moonadm.yaml")

local M = {}
M.null = cjson.null
M.array_mt = { __name = "json.array" }
local yaml_array_mt = yaml_ok and yaml.array_mt or nil
local yaml_null = yaml_ok and yaml.null or nil

local SENTINEL = "\0moonadm:empty-array\0"
local SENTINEL_JSON = '"\\u0000moonadm:empty-array\\u0000"'

local function fix(v)
  if type(v) ~= "table" then return v end
  if v[1] == SENTINEL and #v == 1 and next(v, 1) == nil then return setmetatable({}, M.array_mt) end
  for k, x in pairs(v) do
    if type(x) == "table" then v[k] = fix(x) end
  end
  return v
end

-- opts.drop: names of object members to leave out, at any depth, before decoding (a list answer's
-- managedFields: a third of its bytes and most of its tables); in C (engine/json.c), as is the `[]` marking.
function M.decode(text, opts)
  local rewritten, marked = encoding.json_rewrite(text, SENTINEL_JSON, opts and opts.drop)
  if not rewritten then return nil, "decoding JSON: " .. tostring(marked) end
  local ok, v = pcall(cjson.decode, rewritten)
  if not ok then return nil, "invalid JSON: " .. tostring(v) end
  if marked > 0 then v = fix(v) end
  return v
end

local function is_array(t)
  local mt = getmetatable(t)
  if mt == M.array_mt or (yaml_array_mt and mt == yaml_array_mt) then return true end
  local n = #t
  if n == 0 then return false end
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  return count == n
end

local enc_string = cjson.encode

local function enc(v, out, depth)
  local t = type(v)
  if v == nil or v == cjson.null or (yaml_null ~= nil and v == yaml_null) then
    out[#out + 1] = "null"
  elseif t == "string" then
    out[#out + 1] = enc_string(v)
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif t == "number" then
    if math.type(v) == "integer" then
      out[#out + 1] = string.format("%d", v)
    elseif v ~= v or v == math.huge or v == -math.huge then
      error("json.encode: cannot encode " .. tostring(v), 0)
    elseif v == math.floor(v) and math.abs(v) < 2 ^ 53 then
      out[#out + 1] = string.format("%d", math.floor(v))
    else
      out[#out + 1] = string.format("%.17g", v)
    end
  elseif t == "table" then
    if depth > 200 then error("json.encode: nesting too deep (a cycle?)", 0) end
    if is_array(v) then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        enc(v[i], out, depth + 1)
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) == "number" then k = tostring(k) end
        if type(k) ~= "string" then error("json.encode: object key of type " .. type(k), 0) end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = enc_string(k)
        out[#out + 1] = ":"
        local x = v[k]
        if x == nil then x = v[tonumber(k)] end
        enc(x, out, depth + 1)
      end
      out[#out + 1] = "}"
    end
  else
    error("json.encode: cannot encode a " .. t, 0)
  end
end

function M.encode(v)
  local out = {}
  enc(v, out, 0)
  return table.concat(out)
end

-- A list that encodes as a JSON array even when empty.
function M.array(t) return setmetatable(t or {}, M.array_mt) end

return M
