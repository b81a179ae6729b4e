-- Small helpers shared by the scripts.
local M = {}

-- A canonical text of a value (sorted keys), so equal data gives an equal digest.
function M.canon(v)
  local t = type(v)
  if t == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) < type(b)
    end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = M.canon(k) .. ":" .. M.canon(v[k]) end
    return "{" .. table.concat(parts, ",") .. "}"
  elseif t == "string" then
    return ("%q"):format(v)
  elseif t == "function" or t == "userdata" or t == "thread" then
    return t
  end
  return tostring(v)
end

function M.deepcopy(v)
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in pairs(v) do c[k] = M.deepcopy(x) end
  return setmetatable(c, getmetatable(v))
end

-- base with top laid over it key by key, as copies: a non-table or a table with a metatable (a YAML
-- sequence) replaces; `skip`, when given, is a value of top that keeps base's (yaml.null: unset).
function M.overlay(base, top, skip)
  if type(top) ~= "table" or getmetatable(top) or type(base) ~= "table" or getmetatable(base) then
    return M.deepcopy(top)
  end
  local out = M.deepcopy(base)
  for k, v in pairs(top) do
    if skip == nil or v ~= skip then out[k] = M.overlay(out[k], v, skip) end
  end
  return out
end

function M.split(s, sep)
  local out = {}
  for item in (s .. sep):gmatch("(.-)" .. sep:gsub("%p", "%%%0")) do out[#out + 1] = item end
  return out
end

-- A host file's text (a path of this machine, not under moonadm's --root: /proc, /sys, the lab's own
-- control files), or nil when it cannot be read.
function M.read_host(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

function M.contains(list, x)
  for _, v in ipairs(list or {}) do if v == x then return true end end
  return false
end

return M
