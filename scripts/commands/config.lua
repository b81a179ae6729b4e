-- `moonadm config print init-defaults|join-defaults|reset-defaults|upgrade-defaults`.
local config = require "config"
local flags_mod = require "flags"

local M = {}

function M.main(argv)
  local flags, args = flags_mod.parse({ { name = "scripts", type = "string" }, { name = "insecure-scripts", type = "bool" },
    { name = "component-configs", type = "list" } }, argv)
  if not flags then error(args, 0) end
  if args[1] == "print" then
    local kind = (args[2] or ""):match("^(%a+)%-defaults$")
    if kind then
      local text, err = config.print_defaults(kind)
      if not text then error(err, 0) end
      io.write(text)
      return 0
    end
  end
  io.stderr:write("usage: moonadm config print init-defaults|join-defaults|reset-defaults|upgrade-defaults\n")
  return 1
end

return M
