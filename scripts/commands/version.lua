-- `moonadm version [-o short|json|yaml]`: engine, Lua and scripts versions, and the Kubernetes
-- releases this moonadm makes clusters of.
local core = require "moonadm.core"
local lazy = require "framework.lazy"
local cjson = lazy.require "cjson" -- -o json only
local flags_mod = require "framework.argv"
local version = require "framework.version"
local releases = require "config.releases"
local yaml = require "moonadm.yaml"

local globals = require "framework.globals"

local M = {}

M.flags = { { name = "output", short = "o", type = "string", help = "Output format; available options are 'yaml', 'json' and 'short'" } }
M.help = { [""] = { short = "Print the version of moonadm", flags = M.flags, children = {} } }

function M.main(argv)
  local flags, err = flags_mod.parse(globals.flags(globals.global, M.flags), argv)
  if not flags then error(err, 0) end
  globals.setup(flags)
  flags.output = flags.output or ""
  local info = {
    moonadmVersion = version.scripts, engineVersion = core.engine_version, luaVersion = core.lua_version,
    scriptsVersion = version.scripts, scriptsDir = core.scripts_dir() or "(embedded)",
    -- the default release, and every minor's as its kubeadm (one moonadm for all of them)
    kubernetesVersion = releases.DEFAULT, kubernetesVersions = {},
  }
  for m = releases.OLDEST, releases.NEWEST do info.kubernetesVersions[#info.kubernetesVersions + 1] = releases.latest_of(m) end
  local o = flags.output
  if o == "short" then
    print("v" .. version.scripts)
  elseif o == "json" then
    print(cjson.encode { clientVersion = info })
  elseif o == "yaml" then
    io.write(yaml.encode { clientVersion = info })
  elseif o == "" then
    print(("moonadm version: engine %s, %s, scripts %s from %s, compatible with kubeadm %s (default %s)"):format(
      info.engineVersion, info.luaVersion, info.scriptsVersion, info.scriptsDir,
      table.concat(info.kubernetesVersions, ", "), info.kubernetesVersion))
  else
    error(("invalid output format %q: use short, json or yaml"):format(o), 0)
  end
  return 0
end

return M
