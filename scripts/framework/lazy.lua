-- Requires on demand: `local tree = lazy.require "pki.tree"` at the top of a file names the
-- dependency where every require stands (the layer specs read it), but loads the module on its
-- first use. `moonadm phases init` reads every phase's table and runs none of them: loading
-- their domain modules was most of its start-up. The proxy forwards indexing, assignment, calls,
-- pairs and the length to the module.
local M = {}

function M.require(name)
  local mod
  local function load()
    if mod == nil then mod = require(name) end
    return mod
  end
  return setmetatable({}, {
    __index = function(_, k) return load()[k] end,
    __newindex = function(_, k, v) load()[k] = v end,
    __call = function(_, ...) return load()(...) end,
    __pairs = function() return next, load(), nil end,
    __len = function() return #load() end,
    __name = "lazy module " .. name,
  })
end

return M
