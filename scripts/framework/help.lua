-- Help text in cobra's shape (what kubeadm prints, and what users and man-page tools parse):
-- the description, "Usage:", "Examples:", "Available Commands:", "Flags:", "Global Flags:" and the
-- closing "Use ... --help" line. A command is data (see framework/cli.lua): {path, short, long, example,
-- args, flags, children, runnable}; nothing here reads a config or touches the node.
local util = require "framework.util"

local M = {}

-- cobra's type words, as `kubeadm ... --help` shows them.
local TYPE_WORD <const> = { string = "string", list = "strings", int = "int", bool = "" }

local function default_text(f)
  local d = f.default
  if d == nil or d == false or d == "" or d == 0 then return "" end
  if f.type == "list" then
    if type(d) ~= "table" or #d == 0 then return "" end
    return (" (default [%s])"):format(table.concat(d, ","))
  end
  if f.type == "string" then return (' (default "%s")'):format(d) end
  return (" (default %s)"):format(tostring(d))
end

-- Flag rows aligned as cobra aligns them; sorted by name, hidden flags left out.
function M.flag_rows(spec)
  local list, seen = {}, {}
  for _, f in ipairs(spec) do
    if not f.hidden and not seen[f.name] then
      seen[f.name] = true
      list[#list + 1] = f
    end
  end
  table.sort(list, function(a, b) return a.name < b.name end)
  local rows, width = {}, 0
  for _, f in ipairs(list) do
    local word = f.typeword or TYPE_WORD[f.type] or f.type
    local left = (f.short and ("-" .. f.short .. ", ") or "    ") .. "--" .. f.name .. (word ~= "" and (" " .. word) or "")
    rows[#rows + 1] = { left, (f.help or "") .. default_text(f) }
    width = math.max(width, #left)
  end
  local out = {}
  for _, r in ipairs(rows) do out[#out + 1] = util.rtrim(("  %-" .. width .. "s   %s"):format(r[1], r[2])) end
  return table.concat(out, "\n")
end

local function indent(text)
  return (text:gsub("^%s*\n", ""):gsub("\n+$", ""))
end

-- cmd: {path = "moonadm init phase certs", short, long, example, args, flags, globals, children =
-- {{name, short}, ...}, runnable}. Returns the whole help text.
function M.render(cmd)
  local out = {}
  local function add(s) out[#out + 1] = s end
  add(indent(cmd.long or cmd.short or ""))
  add("")
  add("Usage:")
  local children = cmd.children or {}
  if cmd.runnable ~= false or #children == 0 then
    add(("  %s%s [flags]"):format(cmd.path, cmd.args and cmd.args ~= "" and (" " .. cmd.args) or ""))
  end
  if #children > 0 then add(("  %s [command]"):format(cmd.path)) end
  if cmd.example and cmd.example ~= "" then
    add("")
    add("Examples:")
    add(indent(cmd.example))
  end
  if #children > 0 then
    add("")
    add("Available Commands:")
    local width = 0
    for _, c in ipairs(children) do width = math.max(width, #c.name) end
    width = math.max(width, 11)
    for _, c in ipairs(children) do add(util.rtrim(("  %-" .. width .. "s %s"):format(c.name, c.short or ""))) end
  end
  local last = cmd.path:match("(%S+)$")
  local own, global_names = {}, {}
  for _, g in ipairs(cmd.globals or {}) do global_names[g.name] = true end
  for _, f in ipairs(cmd.flags or {}) do
    if not global_names[f.name] and f.name ~= "help" then own[#own + 1] = f end
  end
  own[#own + 1] = { name = "help", short = "h", type = "bool", help = "help for " .. last }
  add("")
  add("Flags:")
  add(M.flag_rows(own))
  if cmd.globals and #cmd.globals > 0 then
    add("")
    add("Global Flags:")
    add(M.flag_rows(cmd.globals))
  end
  if #children > 0 then
    add("")
    add(('Use "%s [command] --help" for more information about a command.'):format(cmd.path))
  end
  return table.concat(out, "\n") .. "\n"
end

return M
