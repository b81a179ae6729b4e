-- Flags every command takes, and the set-up they share.
local lazy = require "framework.lazy"
local fs = require "moonadm.fs"
local log = require "framework.log"
local trust = lazy.require "framework.site.trust"
local pki = lazy.require "moonadm.pki" -- only with --rsa-generator: opening it sets up OpenSSL
local C = require "config.constants"

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

-- The set-up of a command that changes the node, once it knows it will run (after --help and argument
-- checks): the trusted tree checked (framework.site.trust.check_root; --insecure-root warns instead), then, unless
-- opts.dry_run, the root lock /etc/kubernetes/.moonadm.lock taken for the rest of the process (a second moonadm
-- on the same root stops at once, naming the holder's pid; the kernel frees the lock when the holder
-- exits, also when it crashes) and the temp files a killed run left removed (safe now: no other moonadm
-- writes here, and a live writer's temp file is flocked). opts.cert_dir: certificatesDir.
-- The lock file sits in /etc/kubernetes, which reset empties but never removes (so a reset cannot delete
-- it under its holder) and which the lab binds per node (as /var/lib/moonadm).
M.LOCK = "/etc/kubernetes/.moonadm.lock"
M.TEMP_DIRS = { { "/etc/kubernetes", 3 }, { "/var/lib/moonadm", 2 }, { "/var/lib/kubelet", 0 }, { "/var/lib/kubelet/pki", 0 } }

-- The lock file goes when the lock is released (and the dirs made for it, if still empty): a run that
-- changed nothing leaves the root as it was. opts.keys = false: no private-key mode check (reset).
function M.take_root(flags, opts)
  opts = opts or {}
  opts.cert_dir = opts.cert_dir or C.certificates_dir
  trust.check_root { cert_dir = opts.cert_dir, insecure = flags["insecure-root"], keys = opts.keys }
  if opts.dry_run or M.held then return end
  local root = fs.root()
  local created = {}
  for _, d in ipairs { { "/etc", "0755" }, { "/etc/kubernetes", "0755" } } do
    if not fs.stat(d[1]) then
      local ok, err = fs.mkdir(d[1], d[2])
      if not ok then error(("cannot create the dir of the root lock %s: %s"):format(fs.path(M.LOCK), err), 0) end
      created[#created + 1] = d[1]
    end
  end
  local h, lerr, code, pid = fs.lock(M.LOCK)
  if not h then
    for i = #created, 1, -1 do fs.remove(created[i]) end
    if code == "locked" then
      error(("another moonadm (pid %s) is working on this root (%s): wait for it to finish, or stop it " ..
        "(kill %s) and run this again (with --resume for init/join); the lock is %s"):format(
        pid > 0 and tostring(pid) or "unknown", root, pid > 0 and tostring(pid) or "<pid>", fs.path(M.LOCK)), 0)
    end
    error(("cannot take the root lock: %s"):format(lerr), 0)
  end
  M.held = setmetatable({ lock = h }, { __gc = function()
    pcall(function()
      h:release()
      local saved = fs.root()
      fs.set_root(root)
      for i = #created, 1, -1 do fs.remove(created[i]) end -- only if empty
      fs.set_root(saved)
    end)
  end })
  local dirs = { table.unpack(M.TEMP_DIRS) }
  local cd = opts.cert_dir and opts.cert_dir:gsub("/+$", "")
  if cd and cd ~= C.certificates_dir then dirs[#dirs + 1] = { cd, 1 } end
  for _, d in ipairs(dirs) do
    local n, cerr = fs.clean_temps(d[1], d[2])
    if not n then log.warn("cleaning the temp files an interrupted run left: %s", cerr)
    elseif n > 0 then log.info("[moonadm] removed %d temp file(s) an interrupted run left under %s", n, fs.path(d[1])) end
  end
end

return M
