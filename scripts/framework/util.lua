-- Small helpers shared by the scripts.
local encoding = require "moonadm.encoding"

local M = {}

-- A canonical text of a value (sorted keys), so equal data gives an equal digest: the journal's,
-- taken of the whole configuration before every phase (bindings/lencoding.c, for speed).
M.canon = encoding.canon

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

-- s without its trailing whitespace (%s). Not gsub("%s+$", ""): that retries a run of blanks from
-- each of its positions, quadratic in a padded column, and every rendered table row has one.
function M.rtrim(s)
  local n = #s
  while n > 0 do
    local b = s:byte(n)
    if b ~= 32 and (b < 9 or b > 13) then break end
    n = n - 1
  end
  return s:sub(1, n)
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
