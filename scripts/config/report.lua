-- Where each configuration value came from (file:line, or the flag that set it), and the
-- errors and warnings found, worded "FILE:LINE: Kind.path: message".
local yaml <const> = require "moonadm.yaml"

local report = {}
local R = {}
R.__index = R

-- the key under which a table's own position is pinned
report.SELF = setmetatable({}, { __name = "config.report.SELF" })

function report.new(strict)
  return setmetatable({
    errors = {}, warnings = {}, strict = strict and true or false,
    files = setmetatable({}, { __mode = "k" }),  -- decoded node -> file name
    pinned = setmetatable({}, { __mode = "k" }), -- table -> key -> "where"
  }, R)
end

-- Record that `node` (and what yaml.pos knows of it) was decoded from `file`.
function R:mark(node, file) self.files[node] = file end

-- Record where tbl[key] (or tbl itself, key = report.SELF) came from: "file:line" or "--flag".
function R:pin(tbl, key, where)
  local p = self.pinned[tbl]
  if not p then p = {}; self.pinned[tbl] = p end
  p[key == nil and report.SELF or key] = where
end

-- Where tbl[key] came from (key nil: the table itself), or nil for defaults.
function R:at(tbl, key)
  local p = self.pinned[tbl]
  local pinned = p and p[key == nil and report.SELF or key]
  if pinned then return pinned end
  local file = self.files[tbl]
  if not file then return p and p[report.SELF] end
  local line, keylines = yaml.pos(tbl)
  if not line then return nil end
  return string.format("%s:%d", file, (key ~= nil and keylines and keylines[key]) or line)
end

local function message(where, path, msg)
  local s = msg
  if path and path ~= "" then s = path .. ": " .. s end
  if where then s = where .. ": " .. s end
  return s
end

function R:error(where, path, msg) self.errors[#self.errors + 1] = message(where, path, msg) end
function R:warn(where, path, msg) self.warnings[#self.warnings + 1] = message(where, path, msg) end

-- An unknown field warns, or fails under strict decoding (--strict-config).
function R:unknown(where, path, hint)
  local msg = string.format("unknown field %q%s", path, hint and (" (" .. hint .. ")") or "")
  if self.strict then self:error(where, nil, msg) else self:warn(where, nil, msg) end
end

function R:failed() return #self.errors > 0 end
function R:text() return table.concat(self.errors, "\n") end

return report
