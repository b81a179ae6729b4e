-- Flags every command takes, and the set-up they share.
local fs = require "moonadm.fs"
local log = require "log"

local M = {}

-- kubeadm v1.35's global flags (--rootfs, -v, --vmodule) and moonadm's own. --rootfs is --root:
-- every node path is resolved under it, which is what kubeadm's chroot gives.
M.global = {
  { name = "rootfs", type = "string", help = "The path to the 'real' host root filesystem: every node path is resolved under it (the same as --root)" },
  { name = "v", short = "v", type = "int", typeword = "Level", default = 0, help = "number for the log level verbosity" },
  { name = "vmodule", type = "string", typeword = "moduleSpec", help = "comma-separated list of pattern=N settings for file-filtered logging (patterns match script paths, e.g. kube/client=6)" },
  { name = "root", type = "string", default = "/", help = "Resolve every node path under this directory (tests, the lab, staging)" },
  { name = "scripts", type = "string", help = "Directory of Lua scripts that win over the embedded ones, file by file" },
  { name = "insecure-scripts", type = "bool", help = "Load a --scripts dir even if others could have changed it (development only)" },
  { name = "output-events", type = "string", hidden = true, help = "json: machine-readable event stream" },
  { name = "help", short = "h", type = "bool", hidden = true, help = "Help for this command" },
}

-- The flags shown under "Global Flags:" in help.
function M.shown_globals()
  local out = {}
  for _, f in ipairs(M.global) do if not f.hidden then out[#out + 1] = f end end
  return out
end

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
  if flags.vmodule and flags.vmodule ~= "" then
    local ok, err = log.set_vmodule(flags.vmodule)
    if not ok then error(("invalid argument %q for \"--vmodule\" flag: %s"):format(flags.vmodule, err), 0) end
  end
  local root = (flags.rootfs and flags.rootfs ~= "") and flags.rootfs or flags.root or "/"
  if root:sub(1, 1) ~= "/" then
    local pwd = os.getenv("PWD") or "."
    root = pwd .. "/" .. root
  end
  fs.set_root(root)
  return root
end

return M
