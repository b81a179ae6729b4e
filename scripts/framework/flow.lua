-- Flows: ordered lists of phases, with feature-gate conditions as one visible line each
-- (Talos's sequencer style). Phases are looked up by name: a phase file given with --phase-file
-- (flow.register), then phases/<dir>/<name>.lua (the stock phase, or an exported, edited copy of
-- it), then phases/site/<name>.lua (a site phase in the --scripts dir).
local phase = require "framework.phase"

local M = {}
M.__index = M

-- Phases registered from --phase-file, by name: they win over stock and site phases of that name.
M.registered = {}

function M.register(p)
  M.registered[p.name] = p
end

-- name: the command ("init"); dir: where its phases live (default: name).
function M.new(name, dir)
  return setmetatable({ name = name, dir = dir or name, phases = {} }, M)
end

-- A gated entry for a flow list: when("Gate", "name"), when("Gate=false", "name"),
-- when("Gate", false, "name") or when(phase.gate(...), "name"). A phase table may stand for the name.
function M.when(gate, value, p)
  if p == nil then p, value = value, nil end
  local cond = gate
  if type(gate) == "string" then
    local g, v = gate:match("^([%w]+)=(%a+)$")
    if g then gate, value = g, v == "true" end
    cond = phase.gate(gate, value)
  end
  return { when_entry = true, cond = cond, entry = p }
end

-- A flow from a list of entries, one per line: phase names, gated entries (M.when) or phase tables.
-- An entry "parent/child" places one of the parent's children (from its phase file) as the parent's
-- next child: a parent with such lines gets exactly those children, in that order, so a flow shows
-- every step it runs (a parent listed alone keeps its file's children).
function M.from_list(name, entries, dir)
  local f = M.new(name, dir)
  local own_children = {}
  for i, e in ipairs(entries) do
    local cond, entry = nil, e
    if type(e) == "table" and e.when_entry then cond, entry = e.cond, e.entry end
    if type(entry) == "string" and entry:find("/", 1, true) then
      f:append_child(entry, cond, own_children)
    elseif cond then
      f:append_when(cond, entry)
    elseif type(e) == "string" or type(e) == "table" then
      f:append(e)
    else
      error(("flow %s: entry %d is a %s: use a phase name, when(\"Gate\", \"name\") or a phase table")
        :format(name, i, type(e)), 0)
    end
  end
  return f
end

local function not_found(err, mod)
  return type(err) == "string" and err:find("module '" .. mod .. "' not found", 1, true) ~= nil
end

-- The phase named `name` for the phases of `dir`, or nil, message.
function M.lookup(dir, name)
  if M.registered[name] then return M.registered[name] end
  local tried = {}
  for _, mod in ipairs { ("phases.%s.%s"):format(dir, name), ("phases.site.%s"):format(name) } do
    local ok, p = pcall(require, mod)
    if ok then
      if type(p) ~= "table" or type(p.name) ~= "string" then
        return nil, ("%s does not return a phase table (with a name)"):format(mod)
      end
      return p
    end
    if not not_found(p, mod) then return nil, tostring(p) end
    tried[#tried + 1] = mod:gsub("%.", "/") .. ".lua"
  end
  return nil, ("no such phase (looked for a --phase-file phase named %q, %s)"):format(name, table.concat(tried, ", "))
end

function M:load(name)
  local p, err = M.lookup(self.dir, name)
  if not p then error(("flow %s: cannot load phase %q: %s"):format(self.name, name, err), 0) end
  return p
end

-- A copy whose lists can be edited without touching the (cached) original.
function M:copy()
  local c = M.new(self.name, self.dir)
  for i, p in ipairs(self.phases) do c.phases[i] = p end
  return c
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

local function clean(name) return (name:lower():gsub(" .*$", "")) end

-- Appends the child at `path` ("parent/child") to its parent's children in this flow (see
-- from_list); `fresh` records the parents whose file children this flow has replaced.
function M:append_child(path, cond, fresh)
  local ppath, cname = path:match("^(.+)/([^/]+)$")
  local list, i, set = self:locate(ppath or "")
  if not list then
    error(("flow %s: entry %q: no phase %q before it to hold %q"):format(self.name, path, tostring(ppath), cname), 0)
  end
  local parent = list[i]
  if not fresh[ppath] then
    if not parent.children then error(("flow %s: entry %q: phase %q has no children"):format(self.name, path, ppath), 0) end
    fresh[ppath] = parent.children
    local nl = table.move(list, 1, #list, 1, {})
    nl[i] = setmetatable({ children = {} }, { __index = parent })
    set(nl)
    parent = nl[i]
  end
  local child
  for _, c in ipairs(fresh[ppath]) do
    if clean(c.name) == cname then child = c break end
  end
  if not child then error(("flow %s: entry %q: phase %q has no child %q"):format(self.name, path, ppath, cname), 0) end
  local own = rawget(parent, "children")
  own[#own + 1] = cond and phase.when(cond, child) or child
  return self
end

-- Finds the list holding the phase at `path` ("a" or "a/b"): returns list, index, set_list where
-- set_list(newlist) installs an edited copy of the list (a parent's children are copied, never edited
-- in place: the parent table is a stock module shared by every flow).
function M:locate(path)
  local list, set = self.phases, function(l) self.phases = l end
  local parts = {}
  for part in path:gmatch("[^/]+") do parts[#parts + 1] = part end
  for depth, part in ipairs(parts) do
    local found
    for i, q in ipairs(list) do
      if clean(q.name) == part then found = i break end
    end
    if not found then return nil end
    if depth == #parts then return list, found, set end
    local parent, plist, pset, pi = list[found], list, set, found
    if not parent.children then return nil end
    list = parent.children
    set = function(l)
      local copy = setmetatable({ children = l }, { __index = parent })
      local np = table.move(plist, 1, #plist, 1, {})
      np[pi] = copy
      pset(np)
    end
  end
end

-- Inserts a phase after (or before) another phase (a top-level name or a path such as
-- "control-plane-join/mark-control-plane"), for site phases and experiments.
function M:insert(p, where)
  if type(p) == "string" then p = self:load(p) end
  local anchor = where.after or where.before
  local list, i, set = self:locate(anchor)
  if not list then error(("flow %s: no phase %q to insert %q next to"):format(self.name, anchor, p.name), 0) end
  local nl = table.move(list, 1, #list, 1, {})
  table.insert(nl, where.after and i + 1 or i, p)
  set(nl)
  return self
end

-- Replaces a phase; a gated entry keeps its gate (the replacement runs under the same condition).
function M:replace(name, p)
  if type(p) == "string" then p = self:load(p) end
  local list, i, set = self:locate(name)
  if not list then error(("flow %s: no phase %q to replace with %q"):format(self.name, name, p.name), 0) end
  local nl = table.move(list, 1, #list, 1, {})
  nl[i] = list[i].when and phase.when(list[i].when, p) or p
  set(nl)
  return self
end

function M:remove(name)
  local list, i, set = self:locate(name)
  if not list then error(("flow %s: no phase %q to remove"):format(self.name, name), 0) end
  local nl = table.move(list, 1, #list, 1, {})
  table.remove(nl, i)
  set(nl)
  return self
end

-- Applies one --phase-add spec: "NAME:after=X", "NAME:before=X" or "NAME:replace=X".
function M:add(spec)
  local name, how, anchor = spec:match("^([^:]+):(%a+)=(.+)$")
  if not name or not (how == "after" or how == "before" or how == "replace") then
    error(("invalid --phase-add %q: use NAME:after=PHASE, NAME:before=PHASE or NAME:replace=PHASE"):format(spec), 0)
  end
  local p = self:load(name)
  if how == "replace" then return self:replace(anchor, p) end
  return self:insert(p, { [how] = anchor })
end

return M
