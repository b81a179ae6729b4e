-- Command-line flags merged into the configuration, as kubeadm v1.35 does: without --config
-- they build it; with --config only a few may be added ("can not mix '--config' with
-- arguments [...]" for the others, kubeadm's isAllowedFlag).
local lazy = require "framework.lazy"
local yaml <const> = require "moonadm.yaml"
local gates <const> = require "config.gates"
local validate <const> = lazy.require "config.validate" -- --ignore-preflight-errors only

local flags = {}
local fmt <const> = string.format

-- Flags kubeadm accepts next to --config (cmd/kubeadm/app/apis/kubeadm/validation isAllowedFlag),
-- plus every "skip-*" flag.
flags.allowed_with_config = {
  config = true, ["ignore-preflight-errors"] = true, ["dry-run"] = true, kubeconfig = true,
  ["node-name"] = true, ["kubeconfig-dir"] = true, ["upload-certs"] = true,
  ["print-join-command"] = true, rootfs = true, v = true, ["log-file"] = true,
}

-- flag -> {slot, path(s), type, mode}; type: string|int|bool|list|gates;
-- mode: set (default) | or (booleans OR-ed) | merge (ignore-preflight-errors) | override
-- (non-empty list replaces). A nil slot means the flag carries no configuration field.
local SPECS <const> = {
  init = {
    ["apiserver-advertise-address"] = { "init", "localAPIEndpoint.advertiseAddress" },
    ["apiserver-bind-port"] = { "init", "localAPIEndpoint.bindPort", "int" },
    ["apiserver-cert-extra-sans"] = { "cluster", "apiServer.certSANs", "list" },
    ["control-plane-endpoint"] = { "cluster", "controlPlaneEndpoint" },
    ["pod-network-cidr"] = { "cluster", "networking.podSubnet" },
    ["service-cidr"] = { "cluster", "networking.serviceSubnet" },
    ["service-dns-domain"] = { "cluster", "networking.dnsDomain" },
    ["kubernetes-version"] = { "cluster", "kubernetesVersion" },
    ["feature-gates"] = { "cluster", "featureGates", "gates" },
    ["cert-dir"] = { "cluster", "certificatesDir" },
    ["image-repository"] = { "cluster", "imageRepository" },
    ["node-name"] = { "init", "nodeRegistration.name" },
    ["cri-socket"] = { "init", "nodeRegistration.criSocket" },
    ["token"] = { "init", "bootstrapTokens.1.token" },
    ["token-ttl"] = { "init", "bootstrapTokens.1.ttl" },
    ["certificate-key"] = { "init", "certificateKey" },
    ["patches"] = { "init", "patches.directory" },
    ["skip-phases"] = { "init", "skipPhases", "list", "override" },
    ["ignore-preflight-errors"] = { "init", "nodeRegistration.ignorePreflightErrors", "list", "merge" },
    ["dry-run"] = { "init", "dryRun", "bool", "or" },
    ["upload-certs"] = { nil, nil, "bool" },
  },
  join = {
    ["node-name"] = { "join", "nodeRegistration.name" },
    ["cri-socket"] = { "join", "nodeRegistration.criSocket" },
    ["apiserver-advertise-address"] = { "join", "controlPlane.localAPIEndpoint.advertiseAddress" },
    ["apiserver-bind-port"] = { "join", "controlPlane.localAPIEndpoint.bindPort", "int" },
    ["certificate-key"] = { "join", "controlPlane.certificateKey" },
    ["control-plane"] = { nil, nil, "bool" },
    ["discovery-file"] = { "join", "discovery.file.kubeConfigPath" },
    ["discovery-token"] = { "join", "discovery.bootstrapToken.token" },
    ["discovery-token-ca-cert-hash"] = { "join", "discovery.bootstrapToken.caCertHashes", "list" },
    ["discovery-token-unsafe-skip-ca-verification"] =
      { "join", "discovery.bootstrapToken.unsafeSkipCAVerification", "bool" },
    ["tls-bootstrap-token"] = { "join", "discovery.tlsBootstrapToken" },
    ["token"] = { nil, nil, "string" }, -- both tokens, see join_rules
    ["patches"] = { "join", "patches.directory" },
    ["skip-phases"] = { "join", "skipPhases", "list", "override" },
    ["ignore-preflight-errors"] = { "join", "nodeRegistration.ignorePreflightErrors", "list", "merge" },
    ["dry-run"] = { "join", "dryRun", "bool", "or" },
  },
  reset = {
    ["cert-dir"] = { "reset", "certificatesDir" },
    ["cleanup-tmp-dir"] = { "reset", "cleanupTmpDir", "bool" },
    ["cri-socket"] = { "reset", "criSocket" },
    ["force"] = { "reset", "force", "bool" },
    ["skip-phases"] = { "reset", "skipPhases", "list", "override" },
    ["ignore-preflight-errors"] = { "reset", "ignorePreflightErrors", "list", "merge" },
    ["dry-run"] = { "reset", "dryRun", "bool", "or" },
  },
  upgrade = {
    ["allow-experimental-upgrades"] =
      { "upgrade", { "apply.allowExperimentalUpgrades", "plan.allowExperimentalUpgrades" }, "bool" },
    ["allow-release-candidate-upgrades"] =
      { "upgrade", { "apply.allowRCUpgrades", "plan.allowRCUpgrades" }, "bool" },
    ["certificate-renewal"] = { "upgrade", { "apply.certificateRenewal", "node.certificateRenewal" }, "bool" },
    ["etcd-upgrade"] = { "upgrade", { "apply.etcdUpgrade", "node.etcdUpgrade", "plan.etcdUpgrade" }, "bool" },
    ["force"] = { "upgrade", "apply.forceUpgrade", "bool" },
    ["patches"] = { "upgrade", { "apply.patches.directory", "node.patches.directory" } },
    ["print-config"] = { "upgrade", { "apply.printConfig", "plan.printConfig" }, "bool" },
    ["context-lines"] = { "upgrade", "diff.contextLines", "int" },
    ["skip-phases"] = { "upgrade", { "apply.skipPhases", "node.skipPhases" }, "list", "override" },
    ["ignore-preflight-errors"] =
      { "upgrade", { "apply.ignorePreflightErrors", "node.ignorePreflightErrors", "plan.ignorePreflightErrors" },
        "list", "merge" },
    ["dry-run"] = { "upgrade", { "apply.dryRun", "node.dryRun", "plan.dryRun" }, "bool", "or" },
  },
}
flags.specs = SPECS

local function as_list(v)
  local out = setmetatable({}, yaml.array_mt)
  local items = type(v) == "table" and v or { v }
  for _, item in ipairs(items) do
    for part in (tostring(item) .. ","):gmatch("([^,]*),") do
      part = part:match("^%s*(.-)%s*$")
      if part ~= "" then out[#out + 1] = part end
    end
  end
  return out
end

local TRUE <const> = { ["true"] = true, ["1"] = true, t = true, T = true, TRUE = true, True = true }
local FALSE <const> = { ["false"] = false, ["0"] = false, f = false, F = false, FALSE = false, False = false }

-- A flag value of the expected type, or nil, error.
local function convert(name, v, ty)
  if ty == "int" then
    local n = math.tointeger(tonumber(v))
    if not n then return nil, fmt("--%s: %q is not an integer", name, tostring(v)) end
    return n
  elseif ty == "bool" then
    if type(v) == "boolean" then return v end
    local s = tostring(v)
    if TRUE[s] then return true end
    if FALSE[s] ~= nil then return false end
    return nil, fmt("--%s: %q is not a boolean", name, s)
  elseif ty == "list" then
    return as_list(v)
  elseif ty == "gates" then
    local g, err = gates.parse(tostring(v))
    if not g then return nil, fmt("--%s: %s", name, err) end
    return g
  end
  if type(v) == "table" then return nil, fmt("--%s: expected one value", name) end
  return tostring(v)
end

-- Walk "a.b.1.c" from a document, creating tables (lists for numeric keys); returns the
-- last table and key.
local function locate(doc, path)
  local keys = {}
  for part in path:gmatch("[^.]+") do keys[#keys + 1] = math.tointeger(tonumber(part)) or part end
  local t = doc
  for i = 1, #keys - 1 do
    local k = keys[i]
    if t[k] == nil then
      t[k] = type(keys[i + 1]) == "number" and setmetatable({}, yaml.array_mt) or {}
    end
    t = t[k]
  end
  return t, keys[#keys]
end

local function assign(rep, docs, name, spec, value)
  local slot, paths, _, mode = spec[1], spec[2], spec[3], spec[4]
  docs[slot] = docs[slot] or {}
  for _, path in ipairs(type(paths) == "table" and paths or { paths }) do
    local t, key = locate(docs[slot], path)
    if mode == "or" then
      if value then t[key] = true end
    elseif mode == "merge" then
      local merged = as_list(t[key] or {})
      for _, v in ipairs(value) do merged[#merged + 1] = v end
      local list, err = validate.ignore_preflight(merged)
      if not list then return nil, fmt("--%s: %s", name, err) end
      t[key] = list
    elseif mode == "override" then
      if #value > 0 then t[key] = value end
    elseif type(value) == "table" and getmetatable(value) ~= yaml.array_mt and type(t[key]) == "table" then
      for k, v in pairs(value) do t[key][k] = v end -- feature gates add to the map
    else
      t[key] = value
    end
    if mode ~= "or" or value then
      rep:pin(t, key, "--" .. name)
      if type(t[key]) == "table" then -- and what is inside, e.g. each feature gate
        for k in pairs(t[key]) do rep:pin(t[key], k, "--" .. name) end
      end
    end
  end
  return true
end

-- kubeadm join: --token stands for both tokens; --control-plane decides whether the
-- control-plane flags count; a positional argument is the API server to discover.
local function join_rules(rep, docs, given, args, from_files)
  if from_files then
    if args and #args > 0 then
      rep:warn(nil, nil, "the API server endpoint argument is ignored when --config is given")
    end
    return
  end
  local j = docs.join or {}
  docs.join = j
  j.discovery = j.discovery or {}
  local d = j.discovery
  if given["discovery-file"] then
    d.bootstrapToken = nil
  else
    d.bootstrapToken = d.bootstrapToken or {}
    local token = given.token
    if token and not given["discovery-token"] then
      d.bootstrapToken.token = tostring(token); rep:pin(d.bootstrapToken, "token", "--token")
    end
    if args and args[1] then
      d.bootstrapToken.apiServerEndpoint = tostring(args[1])
      rep:pin(d.bootstrapToken, "apiServerEndpoint", "the API server endpoint argument")
      if #args > 1 then
        rep:warn(nil, nil, fmt("more than one API server endpoint given; using the first one (%s)", args[1]))
      end
    end
  end
  if given.token and not given["tls-bootstrap-token"] then
    d.tlsBootstrapToken = tostring(given.token); rep:pin(d, "tlsBootstrapToken", "--token")
  end
  if given["control-plane"] then
    j.controlPlane = j.controlPlane or {}
  elseif j.controlPlane then
    rep:warn(nil, nil, "the control-plane settings (--apiserver-advertise-address, --apiserver-bind-port, "
      .. "--certificate-key) are ignored when the --control-plane flag is not set")
    j.controlPlane = nil
  end
end

-- Merge `given` (flag name without dashes -> value) into docs {init=, cluster=, join=, ...}.
-- Returns true, or nil and an error message.
function flags.apply(rep, docs, command, given, args, from_files)
  local specs = SPECS[command]
  if not specs then return true end
  given = given or {}
  local names = {}
  for name, v in pairs(given) do
    if specs[name] and v ~= nil then names[#names + 1] = name end
  end
  table.sort(names) -- kubeadm (pflag) reports flags in lexical order
  if from_files then
    local mixed = {}
    for _, name in ipairs(names) do
      if not flags.allowed_with_config[name] and not name:match("^skip%-") then mixed[#mixed + 1] = name end
    end
    if #mixed > 0 then
      return nil, fmt("can not mix '--config' with arguments [%s]", table.concat(mixed, " "))
    end
  end
  local errs = {}
  for _, name in ipairs(names) do
    local spec = specs[name]
    local value, err = convert(name, given[name], spec[3] or "string")
    -- (an empty string flag means "not set", as with kubeadm's flag defaults)
    if value == nil then
      errs[#errs + 1] = err
    elseif value ~= "" and spec[1] then
      local ok, aerr = assign(rep, docs, name, spec, value)
      if not ok then errs[#errs + 1] = aerr end
    end
  end
  if #errs > 0 then return nil, table.concat(errs, "\n") end
  if command == "join" then join_rules(rep, docs, given, args, from_files) end
  if command == "upgrade" and args and args[1] then
    docs.upgrade = docs.upgrade or {}
    for _, part in ipairs { "apply", "plan", "diff" } do
      local p = docs.upgrade[part] or {}
      docs.upgrade[part] = p
      p.kubernetesVersion = tostring(args[1])
      rep:pin(p, "kubernetesVersion", "the version argument")
    end
  end
  return true
end

return flags
