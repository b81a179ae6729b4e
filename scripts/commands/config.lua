-- `moonadm config print|migrate|validate|images`, kubeadm v1.35's `config` family: the same flags,
-- texts and output. `images pull` pulls through the CRI (cri/client.lua).
local lazy = require "framework.lazy"
local fs = require "moonadm.fs"
local yaml = require "moonadm.yaml"
local globals = require "framework.globals"
local config = require "config"
local C = require "config.constants"
local flags_mod = require "framework.argv"
local log = require "framework.log"
local images = lazy.require "config.images"
local config_gates = require "config.gates"
local kubelet_config = lazy.require "kubelet.config"
local addons = lazy.require "cluster.addons"
local kubelet_cri = lazy.require "cri.socket"
local cri = lazy.require "cri.client"
local tokens = lazy.require "cluster.tokens"
local view = lazy.require "node.view"
local print_ = require "config.print"
local cli = require "framework.cli"

local M = {}

local fmt = string.format

-- the parent's persistent flag (kubeadm: `config --kubeconfig`), taken by every subcommand
local KUBECONFIG = { name = "kubeconfig", type = "string", default = "/etc/kubernetes/admin.conf",
  help = "The kubeconfig file to use when talking to the cluster. If the flag is not set, a set of standard locations can be searched for an existing kubeconfig file." }
local CONFIG = { name = "config", type = "string", help = "Path to a kubeadm configuration file." }

local function gates_help()
  local known = {}
  for _, g in ipairs(config_gates.known) do
    local pre = g.stage ~= "GA" and (g.stage:upper() .. " - ") or ""
    known[#known + 1] = fmt("%s=true|false (%sdefault=%s)", g.name, pre, tostring(g.default))
  end
  table.sort(known)
  return "A set of key=value pairs that describe feature gates for various features. Options are:\n" ..
    table.concat(known, "\n")
end

-- kubeadm's AddImagesCommonConfigFlags (persistent on `config images list|pull`)
local IMAGES_COMMON = {
  CONFIG,
  { name = "feature-gates", type = "string", help = gates_help() },
  { name = "image-repository", type = "string", default = C.image_repository, help = "Choose a container registry to pull control plane images from" },
  { name = "kubernetes-version", type = "string", default = "stable-1", help = "Choose a specific Kubernetes version for the control plane." },
}

M.IMAGES_LIST_FLAGS = {
  { name = "allow-missing-template-keys", type = "bool", default = true,
    help = "If true, ignore any errors in templates when a field or map key is missing in the template. Only applies to golang and jsonpath output formats." },
  { name = "output", short = "o", type = "string", default = "text",
    help = "Output format. One of: text|json|yaml|kyaml|go-template|go-template-file|template|templatefile|jsonpath|jsonpath-as-json|jsonpath-file." },
  { name = "show-managed-fields", type = "bool", help = "If true, keep the managedFields when printing objects in JSON or YAML format." },
}
for _, f in ipairs(IMAGES_COMMON) do M.IMAGES_LIST_FLAGS[#M.IMAGES_LIST_FLAGS + 1] = f end

M.IMAGES_PULL_FLAGS = {
  { name = "cri-socket", type = "string", help = "Path to the CRI socket to connect. If empty moonadm will try to auto-detect this value; use this option only if you have more than one CRI installed or if you have non-standard CRI socket." },
}
for _, f in ipairs(IMAGES_COMMON) do M.IMAGES_PULL_FLAGS[#M.IMAGES_PULL_FLAGS + 1] = f end

M.MIGRATE_FLAGS = {
  { name = "allow-experimental-api", type = "bool", help = "Allow migration to experimental, unreleased APIs." },
  { name = "new-config", type = "string", help = "Path to the resulting equivalent kubeadm config file using the new API version. Optional, if not specified output will be sent to STDOUT." },
  { name = "old-config", type = "string", help = "Path to the kubeadm config file that is using an old API version and should be converted. This flag is mandatory." },
}

M.VALIDATE_FLAGS = {
  { name = "allow-experimental-api", type = "bool", help = "Allow validation of experimental, unreleased APIs." },
  CONFIG,
}

M.INIT_DEFAULTS_FLAGS = {
  { name = "component-configs", type = "list", help = "A comma-separated list for component config API objects to print the default values for. Available values: [KubeletConfiguration KubeProxyConfiguration]. If this flag is not set, no component configs will be printed." },
}

local function with_parent(list) return globals.flags(list, { KUBECONFIG }) end

local function defaults_help(action, flags)
  return {
    short = fmt("Print default %s configuration, that can be used for 'moonadm %s'", action, action),
    long = fmt("This command prints objects such as the default %s configuration that is used for 'moonadm %s'.\n\n" ..
      "Note that sensitive values like the Bootstrap Token fields are replaced with placeholder values like %q in order to pass validation but\n" ..
      "not perform the real computation for creating a token.", action, action, C.placeholder.token),
    args = "", flags = flags or {},
  }
end

M.help = {
  [""] = { short = "Manage configuration for a kubeadm cluster persisted in a ConfigMap in the cluster",
    long = "There is a ConfigMap in the kube-system namespace called \"kubeadm-config\" that moonadm uses to store internal configuration about the\n" ..
      "cluster. moonadm automatically creates this ConfigMap with the config used with 'moonadm init'; for a cluster\n" ..
      "initialized otherwise, use the 'moonadm init phase upload-config' command to create it. This is required so that\n" ..
      "'moonadm upgrade' can configure your upgraded cluster correctly.",
    runnable = false, flags = { KUBECONFIG } },
  ["print"] = { short = "Print configuration",
    long = "This command prints configurations for subcommands provided.\n" ..
      "For details, see: https://pkg.go.dev/k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm#section-directories",
    runnable = false, flags = {} },
  ["print init-defaults"] = defaults_help("init", M.INIT_DEFAULTS_FLAGS),
  ["print join-defaults"] = defaults_help("join"),
  ["print reset-defaults"] = defaults_help("reset"),
  ["print upgrade-defaults"] = defaults_help("upgrade"),
  ["migrate"] = { short = "Read an older version of the kubeadm configuration API types from a file, and output the similar config object for the newer version",
    long = "This command lets you convert configuration objects of older versions to the latest supported version,\n" ..
      "locally in the CLI tool without ever touching anything in the cluster.\n" ..
      "In this version of moonadm, the following API versions are supported:\n" ..
      "- " .. C.api_version .. "\n\n" ..
      "Further, moonadm can only write out config of version \"" .. C.api_version .. "\", but read both types.\n" ..
      "So regardless of what version you pass to the --old-config parameter here, the API object will be\n" ..
      "read, deserialized, defaulted, converted, validated, and re-serialized when written to stdout or\n" ..
      "--new-config if specified.\n\n" ..
      "In other words, the output of this command is what moonadm actually would read internally if you\n" ..
      "submitted this file to \"moonadm init\"",
    args = "", flags = M.MIGRATE_FLAGS },
  ["validate"] = { short = "Read a file containing the kubeadm configuration API and report any validation problems",
    long = "This command lets you validate a kubeadm configuration API file and report any warnings and errors.\n" ..
      "If there are no errors the exit status will be zero, otherwise it will be non-zero.\n" ..
      "Any unmarshaling problems such as unknown API fields will trigger errors. Unknown API versions and\n" ..
      "fields with invalid values will also trigger errors. Any other errors or warnings may be reported\n" ..
      "depending on contents of the input file.\n\n" ..
      "In this version of moonadm, the following API versions are supported:\n" ..
      "- " .. C.api_version,
    args = "", flags = M.VALIDATE_FLAGS },
  ["images"] = { short = "Interact with container images used by kubeadm", runnable = false, flags = {} },
  ["images list"] = { short = "Print a list of images kubeadm will use. The configuration file is used in case any images or image repositories are customized",
    args = "", flags = M.IMAGES_LIST_FLAGS },
  ["images pull"] = { short = "Pull images used by kubeadm",
    long = "Pull images used by kubeadm, through the CRI of the --cri-socket endpoint (or the detected one).\n" ..
      "moonadm speaks the CRI with cri-tools' crictl, which must be on PATH.",
    args = "", flags = M.IMAGES_PULL_FLAGS },
}

-- Every subcommand: its flags are what it parses (with the parent's --kubeconfig, shown as cobra
-- shows an inherited persistent flag: under "Global Flags").
for key, d in pairs(M.help) do
  if key ~= "" then
    d.flags = with_parent(d.flags)
    d.globals = globals.flags({ KUBECONFIG }, globals.shown_globals())
  end
end

-- Parses a subcommand's flags (with the parent's --kubeconfig and the global flags).
local function parse(spec, argv, no_args)
  local flags, args, set = flags_mod.parse(globals.flags(globals.global, with_parent(spec)), argv)
  if not flags then error(args, 0) end
  globals.setup(flags)
  if no_args and #args > 0 then
    error(fmt("unknown command %q for %q", args[1], "moonadm " .. no_args), 0)
  end
  return flags, args, set
end

-- A file named on the command line: relative to the working directory, not the root; a regular
-- file of at most the YAML decoder's size budget.
local function read_file(path)
  local text, err = fs.read_regular(path, yaml.limits.max_bytes)
  if not text then error(fmt("unable to read %s: %s", path, tostring(err)), 0) end
  return text
end

---------------------------------------------------------------------------------------------------
-- print *-defaults

local COMPONENT_KINDS <const> = { "KubeletConfiguration", "KubeProxyConfiguration" }

-- The defaulted component config documents (what init writes for a default cluster).
function M.component_config(kind)
  local cfg = assert(config.load { kind = "init", flags = { ["apiserver-advertise-address"] = C.placeholder.advertise_address,
    ["node-name"] = C.placeholder.node_name, ["cri-socket"] = C.placeholder.cri_socket, token = C.placeholder.token },
    no_host_defaults = true })
  if kind == "KubeletConfiguration" then
    return yaml.encode(kubelet_config.build(cfg.cluster, nil))
  end
  return yaml.encode(addons.proxy_config(cfg.cluster, nil, C.placeholder.advertise_address))
end

local function print_defaults(action, argv)
  local spec = action == "init" and M.INIT_DEFAULTS_FLAGS or {}
  local flags = parse(spec, argv, "config print " .. action .. "-defaults")
  local kinds = flags["component-configs"] or {}
  for _, k in ipairs(kinds) do
    local ok = false
    for _, known in ipairs(COMPONENT_KINDS) do ok = ok or k == known end
    if not ok then error(fmt("--component-configs needs to contain some of [%s]", table.concat(COMPONENT_KINDS, " ")), 0) end
  end
  local text, err = config.print_defaults(action)
  if not text then error(err, 0) end
  local parts = { text }
  for _, k in ipairs(kinds) do parts[#parts + 1] = M.component_config(k) end
  io.stdout:write(table.concat(parts, "---\n"))
  return 0
end

---------------------------------------------------------------------------------------------------
-- migrate and validate: every document of the file, strictly (unknown fields are errors, as
-- kubeadm's strict decoding), defaulted and validated as kubeadm reads it.

-- The dynamic defaults kubeadm applies when it reads a file for init/join (SetInitDynamicDefaults,
-- SetJoinDynamicDefaults): node name, CRI socket, advertise address, the control-plane taint.
local function dynamic_defaults(cfg)
  local detected
  local function cri_socket()
    detected = detected or kubelet_cri.detect()
    return detected
  end
  for _, t in ipairs(cfg.init and cfg.init.bootstrapTokens or {}) do
    -- kubeadm's SetBootstrapTokensDynamicDefaults: a token is generated (and printed by migrate)
    if t.token == nil or t.token == "" then t.token = tokens.generate() end
  end
  for _, slot in ipairs { "init", "join" } do
    local doc = cfg[slot]
    if doc then
      local nr = doc.nodeRegistration
      if nr.criSocket == nil or nr.criSocket == "" then nr.criSocket = cri_socket() end
      local cp = slot == "init" or doc.controlPlane ~= nil
      if nr.taints == nil and cp then
        nr.taints = yaml.array { { key = "node-role.kubernetes.io/control-plane", effect = "NoSchedule" } }
      end
      local lep = slot == "init" and doc.localAPIEndpoint or (doc.controlPlane and doc.controlPlane.localAPIEndpoint)
      if lep and (lep.advertiseAddress == nil or lep.advertiseAddress == "") then
        local ip = view.default_address()
        if not ip then
          error("unable to select an IP from default routes: set localAPIEndpoint.advertiseAddress in the file", 0)
        end
        lep.advertiseAddress = ip
      end
    end
  end
  if cfg.reset and (cfg.reset.criSocket == nil or cfg.reset.criSocket == "") then
    cfg.reset.criSocket = cri_socket()
  end
end

-- Loads a file as `config migrate|validate` read it → cfg (with the kubeadm kinds present).
-- quiet_deprecated: migrate does not warn that the file uses v1beta3 (converting it is the point).
local function load_all(path, quiet_deprecated)
  read_file(path) -- kubeadm's os.ReadFile error first
  local cfg, err = config.load { files = { path }, strict = true, migrate = quiet_deprecated }
  if not cfg then error(err, 0) end
  for _, w in ipairs(cfg.warnings or {}) do
    if not (quiet_deprecated and w:find("uses a deprecated API spec", 1, true)) then log.warn("%s", w) end
  end
  if (cfg.init or cfg.cluster) and not cfg.cluster then
    cfg.cluster = assert(config.load { kind = "init", no_host_defaults = true }).cluster
  end
  if cfg.cluster and not cfg.init then
    local d = assert(config.load { kind = "init", no_host_defaults = true })
    cfg.init = d.init
    cfg.init.nodeRegistration.name = config.node_name_default()
  end
  dynamic_defaults(cfg)
  return cfg
end

-- The v1beta4 text kubeadm's MigrateOldConfig writes: Init+Cluster, then Join, then Reset
-- (UpgradeConfiguration and component configs are not written), comments dropped.
function M.migrate_text(path)
  local cfg = load_all(path, true)
  local out = {}
  if cfg.init or cfg.cluster then
    out[#out + 1] = yaml.encode_all(print_.documents { cfg.init, config.cluster_for_upload(cfg.cluster) })
  end
  if cfg.join then out[#out + 1] = yaml.encode_all(print_.documents { cfg.join }) end
  if cfg.reset then out[#out + 1] = yaml.encode_all(print_.documents { cfg.reset }) end
  if #out == 0 then
    error(fmt("%s: no InitConfiguration, ClusterConfiguration, JoinConfiguration or ResetConfiguration to migrate", path), 0)
  end
  return table.concat(out, "---\n")
end

local function migrate(argv)
  local flags = parse(M.MIGRATE_FLAGS, argv, "config migrate")
  local old = flags["old-config"]
  if not old or old == "" then error("the --old-config flag is mandatory", 0) end
  local text = M.migrate_text(old)
  local new = flags["new-config"]
  if not new or new == "" then
    io.stdout:write(text)
    return 0
  end
  -- atomically, relative to the working directory (a path given by the user, not a node path)
  local real = fs.root()
  fs.set_root("/")
  local abs = new:sub(1, 1) == "/" and new or ((os.getenv("PWD") or ".") .. "/" .. new)
  local ok, err = fs.write(abs, text, tonumber("644", 8))
  fs.set_root(real)
  if not ok then error(fmt("failed to write the new configuration to the file %q: %s", new, tostring(err)), 0) end
  return 0
end

local function validate(argv)
  local flags = parse(M.VALIDATE_FLAGS, argv, "config validate")
  local path = flags.config
  if not path or path == "" then error("the --config flag is mandatory", 0) end
  load_all(path)
  io.stdout:write("ok\n")
  return 0
end

---------------------------------------------------------------------------------------------------
-- images

-- The InitConfiguration `config images` reads: --config (the flags then count for nothing, as
-- in kubeadm: a warning says so), else the flags over the defaults.
local function images_config(flags, set)
  local given = {}
  for _, name in ipairs { "kubernetes-version", "image-repository", "feature-gates", "cri-socket" } do
    if set[name] then given[name] = flags[name] end
  end
  if given["kubernetes-version"] == "stable-1" or given["kubernetes-version"] == "stable" then
    given["kubernetes-version"] = nil -- moonadm's pinned release (no version lookup over the network)
  end
  local files = {}
  if flags.config and flags.config ~= "" then
    files = { flags.config }
    local ignored = {}
    for name in pairs(given) do ignored[#ignored + 1] = "--" .. name end
    table.sort(ignored)
    if #ignored > 0 then
      log.warn("%s: ignored with --config (kubeadm reads only the file then); set them in the file", table.concat(ignored, ", "))
    end
    given = {}
  end
  local cfg, err = config.load { kind = "init", files = files, flags = given, no_host_defaults = true }
  if not cfg then error(err, 0) end
  for _, w in ipairs(cfg.warnings or {}) do log.warn("%s", w) end
  return cfg
end

local function images_list(argv)
  local flags, _, set = parse(M.IMAGES_LIST_FLAGS, argv, "config images list")
  local o = flags.output or "text"
  local printers = { text = images.text, json = images.json, yaml = images.yaml }
  if not printers[o] then
    error(fmt("could not construct output printer: unable to match a printer suitable for the output format %q, " ..
      "allowed formats are: json,text,yaml (moonadm has no go-template or jsonpath printer)", o), 0)
  end
  local cfg = images_config(flags, set)
  io.stdout:write(printers[o](images.list(cfg.cluster)))
  return 0
end

M.PULL_RETRIES = 5 -- kubeadm's PullImageRetry

local function images_pull(argv)
  local flags, _, set = parse(M.IMAGES_PULL_FLAGS, argv, "config images pull")
  local cfg = images_config(flags, set)
  local sock = (flags["cri-socket"] and flags["cri-socket"] ~= "" and flags["cri-socket"]) or
    (cfg.init.nodeRegistration.criSocket ~= "" and cfg.init.nodeRegistration.criSocket) or kubelet_cri.detect()
  local c, err = cri.new(sock)
  if not c then error(err, 0) end
  for _, image in ipairs(images.list(cfg.cluster)) do
    local ok, perr
    for attempt = 1, M.PULL_RETRIES do
      ok, perr = c:pull(image)
      if ok then break end
      log.v(1, "[config/images] pulling %s failed (attempt %d of %d): %s", image, attempt, M.PULL_RETRIES, perr)
    end
    if not ok then error(fmt("failed to pull image %q: %s", image, perr), 0) end
    io.stdout:write(fmt("[config/images] Pulled %s\n", image))
  end
  return 0
end

---------------------------------------------------------------------------------------------------

-- kubeadm's RequireSubcommand (its help is the CLI's: `moonadm NAME --help`).
local function require_subcommand(name)
  return function(argv)
    local flags, args = flags_mod.parse(globals.flags(globals.global, { KUBECONFIG }), argv)
    if flags and args[1] then
      error(fmt("unknown command %q for %q\nRun 'moonadm %s --help' for usage.", args[1], "moonadm " .. name, name), 0)
    end
    local words = {}
    for w in name:gmatch("%S+") do words[#words + 1] = w end
    io.stdout:write(cli.help_text(words))
    return 0
  end
end

function M.main(argv)
  local rest = table.move(argv, 2, #argv, 1, {})
  local sub = argv[1]
  if sub == "print" then
    local action = (rest[1] or ""):match("^(%a+)%-defaults$")
    if action == "init" or action == "join" or action == "reset" or action == "upgrade" then
      return print_defaults(action, table.move(rest, 2, #rest, 1, {}))
    end
    return require_subcommand("config print")(rest)
  elseif sub == "migrate" then
    return migrate(rest)
  elseif sub == "validate" then
    return validate(rest)
  elseif sub == "images" then
    local what = rest[1]
    local r2 = table.move(rest, 2, #rest, 1, {})
    if what == "list" then return images_list(r2) end
    if what == "pull" then return images_pull(r2) end
    return require_subcommand("config images")(rest)
  end
  return require_subcommand("config")(argv)
end

return M
