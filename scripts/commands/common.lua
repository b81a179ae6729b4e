-- The set-up a command that changes the node shares: the trusted tree checked, the root lock taken.
-- (The flags every command takes and their set-up: framework/globals.lua.)
local lazy = require "framework.lazy"
local fs = require "moonadm.fs"
local log = require "framework.log"
local trust = lazy.require "framework.trust"
local C = require "config.constants"

local M = {}

-- The set-up of a command that changes the node, once it knows it will run (after --help and argument
-- checks): the trusted tree checked (framework.trust.check_root; --insecure-root warns instead), then, unless
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
