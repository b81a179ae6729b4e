-- Flows: ordered lists of phases, with feature-gate conditions as one visible line each
-- (Talos's sequencer style). Phases are looked up by kubeadm name in phases/<dir>/<name>.lua, so
-- an exported, edited copy of that file is what runs.
local phase = require "phase"

local M = {}
M.__index = M

-- name: the command ("init"); dir: where its phases live (default: name).
function M.new(name, dir)
  return setmetatable({ name = name, dir = dir or name, phases = {} }, M)
end

function M:load(name)
  local ok, p = pcall(require, ("phases.%s.%s"):format(self.dir, name))
  if not ok then error(("flow %s: cannot load phase %q: %s"):format(self.name, name, p), 0) end
  return p
end

-- Appends a phase by name (or a phase table), optionally behind a condition.
function M:append(p)
  if type(p) == "string" then p = self:load(p) end
  self.phases[#self.phases + 1] = p
  return self
end

function M:append_when(cond, p)
  if type(p) == "string" then p = self:load(p) end
  return self:append(phase.when(cond, p))
end

-- Inserts a phase after (or before) another top-level phase, for site phases and experiments.
function M:insert(p, where)
  if type(p) == "string" then p = self:load(p) end
  local anchor = where.after or where.before
  for i, q in ipairs(self.phases) do
    if q.name == anchor then
      table.insert(self.phases, where.after and i + 1 or i, p)
      return self
    end
  end
  error(("flow %s: no phase %q to insert %q next to"):format(self.name, anchor, p.name), 0)
end

function M:remove(name)
  for i, q in ipairs(self.phases) do
    if q.name == name then table.remove(self.phases, i) return self end
  end
  error(("flow %s: no phase %q to remove"):format(self.name, name), 0)
end

return M
