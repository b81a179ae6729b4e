-- moonadm's command line, shaped like kubeadm's: `moonadm init`, `moonadm init phase certs all`,
-- `moonadm join`, `moonadm reset`, `moonadm upgrade plan|apply|node|diff`, plus moonadm's own
-- `phases`, `scripts` and `lab`. Flags follow pflag's rules (see framework/argv.lua).
--
-- The command tree is data: each command module exports `help`, a table keyed by the words below
-- its top-level command ("" for the command itself, "images list", ...) whose entries say
-- {short, long, example, args, flags, children?}; a module whose subtree depends on a flow (the
-- `phase` commands) also exports `help_for(words)`. `-h`/`--help` anywhere on the line prints that
-- command's help from this data before the command reads any config.
local lazy = require "framework.lazy"
local globals = require "framework.globals"
local errors = require "framework.errors"
local help = lazy.require "framework.help"
local log = require "framework.log"
local progname = require "framework.progname"
local results = require "framework.results"

local M = {}

-- Top-level commands: name, module, short description (the module's help[""] may say more).
local commands = {
  { "certs", "commands.certs", "Commands related to handling Kubernetes certificates" },
  { "completion", "commands.completion", "Output shell completion code for the specified shell (bash, zsh or fish)" },
  { "config", "commands.config", "Manage configuration for a kubeadm cluster persisted in a ConfigMap in the cluster" },
  { "etcd", "commands.etcd", "moonadm: etcd snapshots and lost-quorum recovery of this node's stacked etcd member" },
  { "help", nil, "Help about any command" },
  { "init", "commands.init", "Run this command in order to set up the Kubernetes control plane" },
  { "join", "commands.join", "Run this on any machine you wish to join an existing cluster" },
  { "kubeconfig", "commands.kubeconfig", "Kubeconfig file utilities" },
  { "lab", "commands.lab", "A real Kubernetes control plane on this machine, built by moonadm's own flows" },
  { "phases", "commands.phases", "Print the resolved phase tree of a flow (init, join, reset, upgrade-apply, upgrade-node)" },
  { "reset", "commands.reset", "Performs a best effort revert of changes made to this host by 'moonadm init' or 'moonadm join'" },
  { "scripts", "commands.scripts", "Export the stock Lua scripts to edit them (scripts export DIR)" },
  { "token", "commands.token", "Manage bootstrap tokens" },
  { "upgrade", "commands.upgrade", "Upgrade your cluster smoothly to a newer version with this command" },
  { "version", "commands.version", "Print the version of moonadm" },
}
local by_name = {}
for _, c in ipairs(commands) do by_name[c[1]] = c end

local ROOT_LONG <const> = [[
    ┌──────────────────────────────────────────────────────────┐
    │ MOONADM                                                  │
    │ Easily bootstrap a secure Kubernetes cluster             │
    │ (kubeadm-compatible: a C core, every phase in Lua)       │
    └──────────────────────────────────────────────────────────┘

Example usage:

    Create a two-machine cluster with one control-plane node
    (which controls the cluster), and one worker node
    (where your workloads, like Pods and Deployments run).

    ┌──────────────────────────────────────────────────────────┐
    │ On the first machine:                                    │
    ├──────────────────────────────────────────────────────────┤
    │ control-plane# moonadm init                              │
    └──────────────────────────────────────────────────────────┘

    ┌──────────────────────────────────────────────────────────┐
    │ On the second machine:                                   │
    ├──────────────────────────────────────────────────────────┤
    │ worker# moonadm join <arguments-returned-from-init>      │
    └──────────────────────────────────────────────────────────┘

    You can then repeat the second step on as many other machines as you like.
]]

local function module_of(name)
  local c = by_name[name]
  return c and c[2] and require(c[2])
end

local function words_join(words, n) return table.concat(words, " ", 1, n) end

-- The static children of `key` in a module's help table, sorted (cobra lists them by name).
local function static_children(tbl, key)
  local out, seen = {}, {}
  local prefix = key == "" and "" or (key .. " ")
  for k, d in pairs(tbl) do
    if k ~= key and k:sub(1, #prefix) == prefix then
      local w = k:sub(#prefix + 1)
      if not w:find(" ", 1, true) and not seen[w] then
        seen[w] = true
        out[#out + 1] = { name = w, short = d.short }
      end
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- The command named by the leading words: {path, words used, descriptor with children}.
-- Unknown trailing words are left for the command (positional arguments).
function M.node(words)
  if #words == 0 or not by_name[words[1]] then
    local children = {}
    for _, c in ipairs(commands) do children[#children + 1] = { name = c[1], short = c[3] } end
    return { path = "moonadm", long = ROOT_LONG, children = children, runnable = false, flags = globals.shown_globals(), globals = {} }, 0
  end
  local top = words[1]
  if top == "help" then
    return { path = "moonadm help", short = "Help about any command", long = "Help provides help for any command in the application.\nSimply type moonadm help [path to command] for full details.", args = "[command]", flags = {} }, 1
  end
  local mod = module_of(top)
  local tbl = mod.help or {}
  local best, used = tbl[""] or { short = by_name[top][3] }, 1
  local dynamic
  for n = 2, #words do
    local key = words_join(words, n):sub(#top + 2)
    local d = tbl[key] or (mod.help_for and mod.help_for(table.move(words, 2, n, 1, {})))
    if not d then break end
    best, used, dynamic = d, n, not tbl[key]
  end
  local key = words_join(words, used):sub(#top + 2)
  local node = {}
  for k, v in pairs(best) do node[k] = v end
  if type(node.long) == "function" then node.long = node.long() end
  if type(node.children) == "function" then node.children = node.children() end
  node.path = "moonadm " .. words_join(words, used)
  node.short = node.short or (used == 1 and by_name[top][3]) or nil
  if not node.children and not dynamic then node.children = static_children(tbl, key) end
  if not node.children and mod.help_for then
    local d = mod.help_for(table.move(words, 2, used, 1, {}))
    node.children = d and d.children
  end
  node.children = node.children or {}
  if node.globals == nil then node.globals = globals.shown_globals() end
  return node, used
end

-- Every command path under `words` (depth first), for completion and the command-tree spec.
function M.walk(fn, words)
  words = words or {}
  local node = M.node(words)
  fn(words, node)
  for _, c in ipairs(node.children) do
    if c.name ~= "help" or #words > 0 then
      local w = table.move(words, 1, #words, 1, {})
      w[#w + 1] = c.name
      M.walk(fn, w)
    end
  end
end

-- -h/--help anywhere before `--` (a flag value that happens to read "-h" is the user's problem,
-- as in cobra).
local function wants_help(argv)
  for _, a in ipairs(argv) do
    if a == "--" then return false end
    if a == "-h" or a == "--help" or a == "--help=true" then return true end
  end
  return false
end

local function leading_words(argv)
  local out = {}
  for _, a in ipairs(argv) do
    if a:sub(1, 1) == "-" then break end
    out[#out + 1] = a
  end
  return out
end

function M.help_text(words) return help.render((M.node(words))) end

-- `moonadm -v 5 init ...`: global flags before the command move after it (cobra takes them anywhere).
local function command_first(argv)
  local takes_value = {}
  for _, f in ipairs(globals.global) do
    if f.type ~= "bool" then
      takes_value["--" .. f.name] = true
      if f.short then takes_value["-" .. f.short] = true end
    end
  end
  local i, lead = 1, {}
  while argv[i] and argv[i]:sub(1, 1) == "-" and argv[i] ~= "-h" and argv[i] ~= "--help" and argv[i] ~= "--" do
    lead[#lead + 1] = argv[i]
    if takes_value[argv[i]] and argv[i + 1] then
      lead[#lead + 1] = argv[i + 1]
      i = i + 1
    end
    i = i + 1
  end
  if #lead == 0 or not argv[i] then return argv end
  local out = table.move(argv, i, #argv, 1, {})
  table.move(lead, 1, #lead, #out + 1, out)
  return out
end

-- Returns the process exit code.
function M.main(argv)
  progname.set(argv[0])
  argv = command_first(argv)
  local name = argv[1]
  if not name then
    io.stdout:write(M.help_text {})
    return 0
  end
  if name == "help" then
    local words = table.move(argv, 2, #argv, 1, {})
    if words[1] and not by_name[words[1]] then
      io.stderr:write(('Unknown help topic [`%s`]\n'):format(table.concat(words, " ")))
      io.stdout:write(M.help_text {})
      return 0
    end
    io.stdout:write(M.help_text(leading_words(words)))
    return 0
  end
  if wants_help(argv) and (by_name[name] or name:sub(1, 1) == "-") then
    local ok, text = xpcall(M.help_text, function(e) return errors.is(e) and errors.message(e) or debug.traceback(tostring(e), 2) end,
      leading_words(argv))
    if not ok then
      log.error(text)
      return 1
    end
    io.stdout:write(text)
    return 0
  end
  if not by_name[name] then
    io.stderr:write(('Error: unknown command "%s" for "moonadm"\nRun \'moonadm --help\' for usage.\n'):format(name))
    return 1
  end
  local rest = table.move(argv, 2, #argv, 1, {})
  local ok, rc = xpcall(function() return module_of(name).main(rest) end, function(e)
    if errors.is(e) then return e end
    if log.verbosity >= 5 then return debug.traceback(tostring(e), 2) end
    return tostring(e)
  end)
  -- failures the command got back outside any phase and never read (framework/results.lua)
  local unchecked = results.unchecked(name)
  if not ok then
    log.error(errors.message(rc))
    return errors.code(rc)
  end
  if unchecked and (rc or 0) == 0 then
    log.error(unchecked)
    return 1
  end
  return rc or 0
end

return M
