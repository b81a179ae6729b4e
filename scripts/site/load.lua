-- Loading what a site brings: flow files (--flow), phase files (--phase-file), --phase-add
-- specs, after the permission check (framework/trust.lua). Shared by the run commands and `phases`.
local lazy = require "framework.lazy"
local flow_mod = require "framework.flow"
local trust = lazy.require "framework.trust" -- when there are site phases
local framework_phase = require "framework.phase"

local M = {}

M.COMMANDS = { "init", "join", "reset", "upgrade-apply", "upgrade-node" }

-- Runs a user's Lua file with `when` (and `flow`, `phase`) in scope; returns its value.
local function run_file(what, file)
  local env = setmetatable({ when = flow_mod.when, flow = flow_mod, phase = framework_phase }, { __index = _G })
  local chunk, err = loadfile(file, "t", env)
  if not chunk then error(("%s %s: %s"):format(what, file, err), 0) end
  local ok, v = pcall(chunk)
  if not ok then error(("%s %s: %s"):format(what, file, tostring(v)), 0) end
  return v
end

-- The command a flow file is for, when the caller did not say: its `command` field, or its
-- file name (join.lua, join-old-order.lua, my-init.lua ...).
function M.guess_command(file, v)
  if type(v) == "table" and type(v.command) == "string" then return v.command end
  if type(v) == "table" and getmetatable(v) == flow_mod then return v.name end
  local base = file:match("([^/]+)$"):gsub("%.lua$", "")
  local best
  for _, c in ipairs(M.COMMANDS) do
    if base:find(c, 1, true) and (not best or #c > #best) then best = c end
  end
  return best
end

-- A flow file: a list of entries (phase names, when("Gate", "name"), phase tables), or a flow
-- object (require("framework.flow").new(...):append(...)). name: the command whose phases it names.
function M.flow_file(name, file)
  local v = run_file("--flow", file)
  if type(v) == "table" and type(v.phases) == "table" then return v end
  if type(v) ~= "table" then
    error(("--flow %s: must return the list of the flow's entries (or a flow object), not a %s"):format(file, type(v)), 0)
  end
  name = name or M.guess_command(file, v)
  if not name then
    error(("--flow %s: which command's flow is this? say it: moonadm phases check join --flow %s"):format(file, file), 0)
  end
  local ok, f = pcall(flow_mod.from_list, name, v)
  if not ok then error(("--flow %s: %s"):format(file, tostring(f)), 0) end
  return f
end

-- A phase file: returns a phase table (name, desc, run, requires, provides, ...); registered
-- under its name for flows, --phase-add and `phase NAME`.
function M.phase_file(file)
  local p = run_file("--phase-file", file)
  if type(p) ~= "table" or type(p.name) ~= "string" then
    error(("--phase-file %s: must return a phase table with a name (see docs/scripting.md)"):format(file), 0)
  end
  if p.run ~= nil and type(p.run) ~= "function" then error(("--phase-file %s: run must be a function"):format(file), 0) end
  flow_mod.register(p)
  return p
end

-- The permission check for everything site-provided on this command line.
function M.check_trust(flags)
  local items = {}
  local dir = flags.scripts or os.getenv("MOONADM_SCRIPTS")
  if dir and dir ~= "" then items[#items + 1] = { what = "scripts dir", path = dir } end
  for _, f in ipairs(flags["phase-file"] or {}) do items[#items + 1] = { what = "phase file", path = f } end
  if flags.flow then items[#items + 1] = { what = "flow file", path = flags.flow } end
  if #items > 0 then trust.check(items, flags["insecure-scripts"]) end
end

-- The flow a command runs: stock or --flow FILE, with --phase-file phases registered and
-- --phase-add specs applied (to a copy: the stock flow module stays untouched).
function M.flow(name, flags)
  for _, f in ipairs(flags["phase-file"] or {}) do M.phase_file(f) end
  local f
  if flags.flow then
    f = M.flow_file(name, flags.flow)
  else
    f = require("flows." .. name)
  end
  f = f:copy()
  for _, spec in ipairs(flags["phase-add"] or {}) do f:add(spec) end
  return f
end

M.flags = {
  { name = "phase-add", type = "list", help = "Insert a site phase: NAME:after=PHASE, NAME:before=PHASE or NAME:replace=PHASE (repeatable)" },
  { name = "phase-file", type = "list", help = "A Lua file returning a site phase (repeatable); its phase can be named by --phase-add, a flow file or `phase NAME`" },
  { name = "insecure-scripts", type = "bool", help = "Run a scripts dir, phase file or flow file even when others could have changed it (development only)" },
}

return M
