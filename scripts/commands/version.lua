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
local progname = require "framework.progname"

local M = {}

M.flags = { { name = "output", short = "o", type = "string", help = "Output format; available options are 'yaml', 'json' and 'short'" } }
M.help = { [""] = { short = "Print the version of moonadm", flags = M.flags, children = {} } }

-- Every release moonadm makes: "v1.35.4", "v1.36.3", ...
local function served()
  local l = {}
  for m = releases.OLDEST, releases.NEWEST do l[#l + 1] = releases.latest_of(m) end
  return l
end

-- Run as `kubeadm`: kubeadm's own shapes, for the tools and scripts that read them (kubespray;
-- `--kubernetes-version $(kubeadm version -o short)`). The release is the one moonadm makes by default,
-- or MOONADM_KUBEADM_VERSION (any v1.<minor>.<patch> of a minor moonadm makes) where a tool compares it
-- with the release it installs: it changes what `version` says, nothing else. Fields that describe a Go
-- build say moonadm instead.
local function kubeadm_version(o)
  local v = os.getenv("MOONADM_KUBEADM_VERSION") or releases.DEFAULT
  local minor = tonumber(v:match("^v1%.(%d+)%.%d+$"))
  if not minor or minor < releases.OLDEST or minor > releases.NEWEST then
    error(("MOONADM_KUBEADM_VERSION=%s: not a release of a minor this moonadm makes (v1.%d to v1.%d, e.g. %s)")
      :format(v, releases.OLDEST, releases.NEWEST, table.concat(served(), ", ")), 0)
  end
  local f = { { "major", "1" }, { "minor", tostring(minor) }, { "gitVersion", v },
    { "gitCommit", "moonadm-" .. version.scripts }, { "gitTreeState", "clean" }, { "buildDate", "1970-01-01T00:00:00Z" },
    { "goVersion", "none" }, { "compiler", "cc" },
    { "platform", "linux/" .. core.goarch } }
  local by = {}
  for _, kv in ipairs(f) do by[kv[1]] = kv[2] end
  if o == "short" then
    print(v)
  elseif o == "json" then -- encoding/json's MarshalIndent: the struct's order, two spaces
    local lines = {}
    for i, kv in ipairs(f) do
      lines[i] = ("    %s: %s%s"):format(cjson.encode(kv[1]), cjson.encode(kv[2]):gsub("\\/", "/"), i < #f and "," or "")
    end
    print('{\n  "clientVersion": {\n' .. table.concat(lines, "\n") .. "\n  }\n}")
  elseif o == "yaml" then -- sigs.k8s.io/yaml: keys sorted, numbers and timestamps quoted
    local keys = {}
    for _, kv in ipairs(f) do keys[#keys + 1] = kv[1] end
    table.sort(keys)
    local lines = { "clientVersion:" }
    for _, k in ipairs(keys) do
      local val = by[k]
      if val:match("^%d+$") or k == "buildDate" then val = '"' .. val .. '"' end
      lines[#lines + 1] = ("  %s: %s"):format(k, val)
    end
    print(table.concat(lines, "\n") .. "\n") -- kubeadm prints the YAML document with Println
  elseif o == "" then
    print(("kubeadm version: &version.Info{Major:%q, Minor:%q, EmulationMajor:\"\", EmulationMinor:\"\", " ..
      "MinCompatibilityMajor:\"\", MinCompatibilityMinor:\"\", GitVersion:%q, GitCommit:%q, GitTreeState:%q, " ..
      "BuildDate:%q, GoVersion:%q, Compiler:%q, Platform:%q}"):format(by.major, by.minor, by.gitVersion, by.gitCommit,
      by.gitTreeState, by.buildDate, by.goVersion, by.compiler, by.platform))
  else
    error(("invalid output format: %s"):format(o), 0)
  end
  return 0
end

function M.main(argv)
  local flags, err = flags_mod.parse(globals.flags(globals.global, M.flags), argv)
  if not flags then error(err, 0) end
  globals.setup(flags)
  flags.output = flags.output or ""
  if progname.as_kubeadm() then return kubeadm_version(flags.output) end
  local info = {
    moonadmVersion = version.scripts, engineVersion = core.engine_version, luaVersion = core.lua_version,
    scriptsVersion = version.scripts, scriptsDir = core.scripts_dir() or "(embedded)",
    -- the default release, and every minor's as its kubeadm (one moonadm for all of them)
    kubernetesVersion = releases.DEFAULT, kubernetesVersions = served(),
  }
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
