-- `moonadm scripts export DIR [--force]`: the embedded stock scripts, written out to edit.
-- `moonadm --scripts DIR ...` (or MOONADM_SCRIPTS=DIR) then runs DIR's copies, file by file.
-- `moonadm scripts list`: the embedded modules.
local core = require "moonadm.core"
local flags_mod = require "framework.argv"
local fs = require "moonadm.fs"

local globals = require "framework.globals"
local cli = require "framework.cli"
local trust = require "framework.trust"

local M = {}

M.export_flags = { { name = "force", type = "bool", help = "Overwrite files that differ from the stock copy" } }
M.help = {
  [""] = { short = "Export the stock Lua scripts to edit them (scripts export DIR)", runnable = false, flags = {},
    long = "The stock Lua scripts (flows, phases, domain modules) are embedded in the binary. Export them, edit\n" ..
      "the copies, and run `moonadm --scripts DIR ...` (or MOONADM_SCRIPTS=DIR): DIR's files win, file by file." },
  ["export"] = { short = "Write the embedded scripts into DIR", args = "DIR", flags = M.export_flags,
    example = "  moonadm scripts export ./my-scripts\n  moonadm --scripts ./my-scripts init --dry-run" },
  ["list"] = { short = "List the embedded modules and their paths", flags = {} },
}

-- Export writes as root: only into a dir nobody else can write (else they could swap the files before
-- a --scripts run, or plant a symlink such as DIR/framework -> /etc that the writes would follow), and
-- never through a symlink under it (site.trust's check, with links refused). The nearest existing
-- dir is checked before anything is created, DIR itself after (a link planted meanwhile in a sticky
-- dir such as /tmp is caught then). Returns DIR resolved | raises.
local function prepare_dir(dir)
  local function refuse(why, fix)
    error(("refusing to export into %s: %s; fix: %s. The exported scripts are meant to run as root: "
      .. "the dir, everything in it and every directory and symlink on the way must be owned by root (or you) "
      .. "and writable only by the owner, with no symlink in it"):format(dir, why, fix), 0)
  end
  dir = trust.absolute(dir)
  local parent = dir
  while parent ~= "/" and not fs.stat(parent) do parent = parent:match("^(.+)/[^/]*$") or "/" end
  local _, why, fix = trust.problem_of(parent, { sticky_end = true })
  if why then refuse(why, fix) end
  local ok, err = fs.mkdir(dir, "0755")
  if not ok then error(("cannot export into %s: %s"):format(dir, err), 0) end
  local real
  real, why, fix = trust.problem_of(dir, { tree = true, links = false })
  if why then refuse(why, fix) end
  return real or error(("cannot export into %s: it vanished while it was being checked"):format(dir), 0)
end

function M.main(argv)
  local flags, args = flags_mod.parse(globals.flags(globals.global, M.export_flags), argv)
  if not flags then error(args, 0) end
  local sub, dir = args[1], args[2]
  if sub == "list" then
    for _, s in ipairs(core.scripts()) do print(("%-40s scripts/%s"):format(s.name, s.path)) end
    return 0
  end
  if sub ~= "export" or not dir then
    io.stdout:write(cli.help_text { "scripts" })
    return sub and 1 or 0
  end
  fs.set_root("/")
  dir = prepare_dir(dir)
  -- a/init.lua is listed twice (module "a.init" and package "a"); write each file once
  local scripts, seen = {}, {}
  for _, s in ipairs(core.scripts()) do
    if not seen[s.path] then seen[s.path], scripts[#scripts + 1] = true, s end
  end
  -- Check every file first, so a refusal writes nothing.
  if not flags.force then
    for _, s in ipairs(scripts) do
      local path = dir .. "/" .. s.path
      local cur = fs.read(path)
      if cur and cur ~= s.source then
        error(("%s exists and differs from the stock copy: keep your edit, or pass --force to overwrite"):format(path), 0)
      end
    end
  end
  for _, s in ipairs(scripts) do
    local ok, err = fs.write(dir .. "/" .. s.path, s.source, "0644")
    if not ok then error(err, 0) end
  end
  print(("exported %d scripts to %s; run them with `moonadm --scripts %s ...` or MOONADM_SCRIPTS=%s")
    :format(#scripts, dir, dir, dir))
  return 0
end

return M
