-- moonadm's command line, shaped like kubeadm's: `moonadm init`, `moonadm init phase certs all`,
-- `moonadm join`, `moonadm reset`, `moonadm upgrade plan|apply|node`, plus moonadm's own
-- `phases`, `scripts` and `lab`. Flags follow pflag's rules (see flags.lua).
local errors = require "errors"
local log = require "log"

local M = {}

local commands = {
  { "version", "commands.version", "Print the version of moonadm (engine, Lua, scripts)" },
  { "init", "commands.init", "Run this command in order to set up the Kubernetes control plane" },
  { "join", "commands.join", "Run this on any machine you wish to join an existing cluster" },
  { "reset", "commands.reset", "Performs a best effort revert of changes made to this host by 'moonadm init' or 'moonadm join'" },
  { "upgrade", "commands.upgrade", "Upgrade your cluster smoothly to a newer version with this command" },
  { "certs", "commands.certs", "Commands related to handling Kubernetes certificates" },
  { "kubeconfig", "commands.kubeconfig", "Kubeconfig file utilities" },
  { "token", "commands.token", "Manage bootstrap tokens" },
  { "config", "commands.config", "Manage configuration for a kubeadm cluster persisted in a ConfigMap in the cluster" },
  { "phases", "commands.phases", "Print the resolved phase tree of a flow (init, join, reset, upgrade-apply, upgrade-node)" },
  { "scripts", "commands.scripts", "Export the stock Lua scripts to edit them (scripts export DIR)" },
  { "lab", "commands.lab", "A real Kubernetes control plane on this machine, built by moonadm's own flows" },
}

function M.usage()
  local out = { "moonadm: a kubeadm-compatible cluster bootstrap engine (C core, Lua phases)", "",
    "Usage:", "  moonadm [command]", "", "Available Commands:" }
  for _, c in ipairs(commands) do out[#out + 1] = ("  %-12s %s"):format(c[1], c[3]) end
  out[#out + 1] = ""
  out[#out + 1] = 'Use "moonadm [command] --help" for more information about a command.'
  return table.concat(out, "\n")
end

-- Returns the process exit code.
function M.main(argv)
  local name = argv[1]
  if not name or name == "help" or name == "--help" or name == "-h" then
    io.stdout:write(M.usage(), "\n")
    return name and 0 or 1
  end
  local mod
  for _, c in ipairs(commands) do if c[1] == name then mod = c[2] end end
  if not mod then
    io.stderr:write(('unknown command "%s" for "moonadm"\nRun \'moonadm --help\' for usage.\n'):format(name))
    return 1
  end
  local rest = table.move(argv, 2, #argv, 1, {})
  local ok, rc = xpcall(function() return require(mod).main(rest) end, function(e)
    if errors.is(e) then return e end
    if log.verbosity >= 5 then return debug.traceback(tostring(e), 2) end
    return tostring(e)
  end)
  if not ok then
    log.error(errors.message(rc))
    return errors.code(rc)
  end
  return rc or 0
end

return M
