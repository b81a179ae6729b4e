-- The flags every command takes (kubeadm's global flags and moonadm's own) and their set-up: the
-- log, the root prefix, the RSA generator.
local lazy = require "framework.lazy"
local fs = require "moonadm.fs"
local log = require "framework.log"
local pki = lazy.require "moonadm.pki" -- only with --rsa-generator: opening it sets up OpenSSL

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
  { name = "insecure-root", type = "bool", help = "Trust the node's files (PKI, journal, manifests) even if others could have changed or read them (tests, staging only)" },
  { name = "rsa-generator", type = "string", help = "Which generator makes RSA keys: moonadm (its own, to FIPS 186-5's rules) or openssl (OpenSSL's own, slower; chosen by itself in FIPS mode) (default: $MOONADM_RSA_GENERATOR or moonadm)" },
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
  local gen = flags["rsa-generator"]
  if gen and gen ~= "" then
    local ok, err = pki.rsa_generator(gen, "--rsa-generator")
    if not ok then error(err, 0) end
  end
  return root
end

return M
