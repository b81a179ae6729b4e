-- `moonadm scripts export DIR [--force]`: the embedded stock scripts, written out to edit.
-- `moonadm --scripts DIR ...` (or MOONADM_SCRIPTS=DIR) then runs DIR's copies, file by file.
-- `moonadm scripts list`: the embedded modules.
local core = require "moonadm.core"
local flags_mod = require "framework.argv"
local fs = require "moonadm.fs"

local common = require "commands.common"
local cli = require "framework.cli"

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

function M.main(argv)
  local flags, args = flags_mod.parse(common.flags(common.global, M.export_flags), argv)
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
  if dir:sub(1, 1) ~= "/" then dir = (os.getenv("PWD") or ".") .. "/" .. dir end
  fs.set_root("/")
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
