-- Flags every command takes, and the set-up they share.
local fs = require "moonadm.fs"
local log = require "log"

local M = {}

-- kubeadm's global flags (klog's and --rootfs) and moonadm's own. moonadm's log lines carry no klog
-- header, so --add-dir-header, --skip-headers and --skip-log-headers have nothing to change and
-- --one-output nothing to split (docs/compatibility.md); --rootfs is --root.
M.global = {
  { name = "add-dir-header", type = "bool", help = "If true, adds the file directory to the header of the log messages" },
  { name = "log-file", type = "string", help = "If non-empty, use this log file (no effect when -logtostderr=true)" },
  { name = "log-file-max-size", type = "int", typeword = "uint", default = 1800, help = "Defines the maximum size a log file can grow to (no effect when -logtostderr=true). Unit is megabytes. If the value is 0, the maximum file size is unlimited." },
  { name = "one-output", type = "bool", help = "If true, only write logs to their native severity level (vs also writing to each lower severity level; no effect when -logtostderr=true)" },
  { name = "rootfs", type = "string", help = "The path to the 'real' host root filesystem: every node path is resolved under it (the same as --root)" },
  { name = "skip-headers", type = "bool", help = "If true, avoid header prefixes in the log messages" },
  { name = "skip-log-headers", type = "bool", help = "If true, avoid headers when opening log files (no effect when -logtostderr=false)" },
  { name = "v", short = "v", type = "int", typeword = "Level", default = 0, help = "number for the log level verbosity" },
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
  if flags["log-file"] and flags["log-file"] ~= "" then
    local ok, err = log.to_file(flags["log-file"], flags["log-file-max-size"])
    if not ok then error(("--log-file: %s"):format(err), 0) end
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
