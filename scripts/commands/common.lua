-- Flags every command takes, and the set-up they share.
local fs = require "moonadm.fs"
local log = require "log"

local M = {}

M.global = {
  { name = "root", type = "string", default = "/", help = "Resolve every node path under this directory (tests, the lab, staging)" },
  { name = "scripts", type = "string", help = "Directory of Lua scripts that win over the embedded ones, file by file" },
  { name = "v", short = "v", type = "int", default = 0, help = "Log verbosity (0-10)" },
  { name = "output-events", type = "string", hidden = true, help = "json: machine-readable event stream" },
  { name = "help", short = "h", type = "bool", help = "Help for this command" },
}

-- Appends lists of flag specs into one.
function M.flags(...)
  local out = {}
  for _, list in ipairs { ... } do
    for _, f in ipairs(list) do out[#out + 1] = f end
  end
  return out
end

-- Applies the global flags: log set-up and the root prefix.
function M.setup(flags)
  log.setup { verbosity = flags.v, json = flags["output-events"] == "json" }
  local root = flags.root or "/"
  if root:sub(1, 1) ~= "/" then
    local pwd = os.getenv("PWD") or "."
    root = pwd .. "/" .. root
  end
  fs.set_root(root)
  return root
end

return M
