-- The lab's record of what it started: DIR/lab.json (nodes, addresses, PIDs), so that `lab down`
-- stops exactly what `lab up` started and a stale lab from a killed run can be cleaned.
local cjson = require "cjson"

local M = {}

function M.path(dir) return dir .. "/lab.json" end

function M.load(dir)
  local f = io.open(M.path(dir), "r")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local ok, st = pcall(cjson.decode, text)
  if not ok then return nil, ("%s is not valid JSON: %s"):format(M.path(dir), st) end
  return st
end

function M.save(dir, st)
  local tmp = M.path(dir) .. ".tmp"
  local f = assert(io.open(tmp, "w"))
  f:write(cjson.encode(st))
  f:close()
  assert(os.rename(tmp, M.path(dir)))
end

function M.remove(dir) os.remove(M.path(dir)) end

return M
