-- Loading a configuration: read the --config files, sort their documents by kind, check
-- them, convert v1beta3, merge flags, default, validate.
local lazy = require "framework.lazy"
local yaml <const> = require "moonadm.yaml"
local fs <const> = require "moonadm.fs"
local C <const> = require "config.constants"
local schema <const> = require "config.schema"
local report <const> = require "config.report"
local decode <const> = lazy.require "config.decode" -- documents read from files
local v1beta3 <const> = lazy.require "config.v1beta3"
local releases <const> = require "config.releases"
local flags <const> = require "config.flags"
local defaults <const> = require "config.defaults"
local validate <const> = lazy.require "config.validate"
local gates <const> = require "config.gates"

local load = {}
local fmt <const> = string.format

-- kubeadm's kind names per slot of the returned config
local KIND_OF <const> = {
  init = "InitConfiguration", cluster = "ClusterConfiguration", join = "JoinConfiguration",
  reset = "ResetConfiguration", upgrade = "UpgradeConfiguration",
  kubelet = "KubeletConfiguration", kubeproxy = "KubeProxyConfiguration",
}
-- the slots each command reads; the other documents are ignored with a warning
local USES <const> = {
  init = { init = true, cluster = true, kubelet = true, kubeproxy = true },
  join = { join = true },
  reset = { reset = true },
  upgrade = { upgrade = true },
}
-- what each command needs from a config file (kubeadm: "no ... kind was found")
local NEEDS <const> = {
  init = { "init", "cluster" }, join = { "join" }, reset = { "reset" }, upgrade = { "upgrade" },
}
-- and the documents it defaults when no file gives them
local CREATES <const> = {
  init = { "init", "cluster" }, join = { "join" }, reset = { "reset" }, upgrade = { "upgrade" },
}

-- kubeadm's message for API versions it no longer reads
local OLD_APIS <const> = {
  ["kubeadm.k8s.io/v1alpha1"] = "v1.11", ["kubeadm.k8s.io/v1alpha2"] = "v1.12",
  ["kubeadm.k8s.io/v1alpha3"] = "v1.14", ["kubeadm.k8s.io/v1beta1"] = "v1.15",
  ["kubeadm.k8s.io/v1beta2"] = "v1.22",
}

-- For an unknown key at the top of a kind: is it a field of the sibling kind?
local SIBLING <const> = { InitConfiguration = "ClusterConfiguration", ClusterConfiguration = "InitConfiguration" }
local function sibling_hint(kind)
  local other = SIBLING[kind]
  if not other then return nil end
  return function(key)
    if schema[other].fields[key] then return fmt("it belongs in %s", other) end
  end
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

-- Classify one decoded document (which starts at `where`, "FILE:LINE"): returns slot, kind name,
-- api version, or nil after an error.
local function classify(rep, doc, file, where)
  if not decode.is_map(doc) then
    rep:error(where or file, nil, fmt("a configuration document must be a mapping, got %s", decode.describe(doc)))
    return nil
  end
  rep:mark(doc, file)
  local api, kind = doc.apiVersion, doc.kind
  if type(api) ~= "string" or type(kind) ~= "string" or api == "" or kind == "" then
    rep:error(rep:at(doc), nil, "kind and apiVersion are mandatory information that must be specified")
    return nil
  end
  if api == C.api_version or api == C.api_version_v1beta3 then
    local slot = schema.kubeadm_kinds[kind]
    if not slot then
      rep:error(rep:at(doc, "kind"), nil, fmt("unknown kind %q for apiVersion %q (known kinds: %s)", kind, api,
        table.concat(sorted_keys(schema.kubeadm_kinds), ", ")))
      return nil
    end
    if api == C.api_version_v1beta3 and not v1beta3.kinds[kind] then
      rep:error(rep:at(doc, "kind"), nil, fmt("kind %q does not exist in %s; use %s", kind, api, C.api_version))
      return nil
    end
    return slot, kind, api
  end
  local comp = schema.component_kinds[api]
  if comp then
    if kind ~= comp.kind then
      rep:error(rep:at(doc, "kind"), nil, fmt("unknown kind %q for apiVersion %q (expected %s)", kind, api, comp.kind))
      return nil
    end
    return comp.slot, kind, api
  end
  if OLD_APIS[api] then
    rep:error(rep:at(doc, "apiVersion"), nil, fmt("your configuration file uses an old API spec: %q (kind: %q). "
      .. "Please use kubeadm %s instead and run 'kubeadm config migrate --old-config old.yaml --new-config "
      .. "new.yaml', which will write the new, similar spec using a newer API version.", api, kind, OLD_APIS[api]))
    return nil
  end
  rep:error(rep:at(doc, "apiVersion"), nil, fmt("unknown apiVersion %q (kind %q); supported: %s, %s (deprecated), "
    .. "%s, %s", api, kind, C.api_version, C.api_version_v1beta3, C.kubelet_api_version, C.kubeproxy_api_version))
  return nil
end

-- Decode the sources {name=, text=} into docs {slot = table}, checked and in v1beta4 shape.
local function decode_sources(rep, sources, command, any_v1beta3)
  local docs, first_at, v1beta3_timeout, v1beta3_docs = {}, {}, nil, {}
  for _, src in ipairs(sources) do
    local list, err = yaml.decode(src.text, src.name)
    if not list then
      rep:error(nil, nil, err)
    else
      local _, doclines = yaml.pos(list)
      for i, doc in ipairs(list) do
        if doc ~= yaml.null then
          local line = doclines and doclines[i]
          local slot, kind, api = classify(rep, doc, src.name, line and fmt("%s:%d", src.name, line))
          local here = slot and rep:at(doc)
          if slot and first_at[slot] then
            rep:error(here, nil, fmt("%s is given twice (first at %s)", kind, first_at[slot]))
          elseif slot and command and not USES[command][slot] then
            first_at[slot] = here
            rep:warn(here, nil, fmt("%s is ignored by %s", kind, command))
          elseif slot then
            first_at[slot] = here
            if slot == "kubelet" or slot == "kubeproxy" then
              docs[slot] = doc -- passed through untouched
            elseif api == C.api_version_v1beta3 then
              rep:warn(here, nil, fmt("your configuration file uses a deprecated API spec: %q (kind: %q); it "
                .. "is converted to %s. Please use 'kubeadm config migrate --old-config old.yaml "
                .. "--new-config new.yaml'", api, kind, C.api_version))
              v1beta3_docs[#v1beta3_docs + 1] = { at = here, kind = kind }
              docs[slot] = decode.document(rep, v1beta3.kinds[kind], doc, src.name, sibling_hint(kind))
              v1beta3_timeout = v1beta3.convert(rep, kind, docs[slot]) or v1beta3_timeout
            else
              docs[slot] = decode.document(rep, schema[kind], doc, src.name, sibling_hint(kind))
            end
          end
        end
      end
    end
  end
  -- kubeadm v1.37 reads no v1beta3: a cluster of that minor refuses it, as that kubeadm would
  local minor = releases.of(docs.cluster and docs.cluster.kubernetesVersion)
  if minor and not minor.v1beta3 and not any_v1beta3 then
    for _, d in ipairs(v1beta3_docs) do
      rep:error(d.at, nil, fmt("your configuration file uses an old API spec: %q (kind: %q), which kubeadm v1.%d no "
        .. "longer reads. Run 'moonadm config migrate --old-config old.yaml --new-config new.yaml', which writes "
        .. "the same configuration as %s", C.api_version_v1beta3, d.kind, minor.minor, C.api_version))
    end
  end
  if v1beta3_timeout then
    v1beta3.apply_timeout(rep, docs.init, v1beta3_timeout)
    v1beta3.apply_timeout(rep, docs.join, v1beta3_timeout)
  end
  return docs
end

local function read_sources(opts)
  local sources = {}
  for _, path in ipairs(opts.files or {}) do
    -- a regular file only (not a directory, /dev/zero or a FIFO), no bigger than the decoder takes
    local text, err = fs.read_regular(path, yaml.limits.max_bytes)
    if not text then
      return nil, fmt("unable to read config from %q: %s; --config takes a YAML file of at most %d MiB",
        path, err, yaml.limits.max_bytes >> 20)
    end
    sources[#sources + 1] = { name = path, text = text }
  end
  if opts.text then sources[#sources + 1] = { name = opts.filename or "<config>", text = opts.text } end
  return sources
end

-- The node name kubeadm defaults to: the host name, lowercased.
function load.node_name_default()
  local name
  local f = io.open("/proc/sys/kernel/hostname", "r") or io.open("/etc/hostname", "r")
  if f then name = f:read("l"); f:close() end
  if not name or name:match("^%s*$") then
    local p = io.popen("hostname 2>/dev/null")
    if p then name = p:read("l"); p:close() end
  end
  if not name or name:match("^%s*$") then return nil, "unable to determine the host name" end
  return (name:match("^%s*(.-)%s*$"):lower())
end

--[[ Load a configuration.
opts: files = {paths}, text/filename (in-memory source), flags = {name = value},
      args = {positional arguments}, kind = "init"|"join"|"reset"|"upgrade" (nil: every
      document found, no flags), strict = bool, no_host_defaults = bool (do not read the host name),
      migrate = bool (`config migrate`: v1beta3 is read whatever the minor, to be converted),
      validate = false (documents made of moonadm's own constants, `config print`: tests/spec/config_spec.lua
      validates what it prints, so a print does not load the validation)
Returns the config object, or nil, message (one error per line), warnings. ]]
function load.load(opts)
  opts = opts or {}
  local command = opts.kind
  if command and not USES[command] then
    error(fmt("config.load: kind must be init, join, reset or upgrade, got %s", tostring(command)), 2)
  end
  local rep = report.new(opts.strict)
  local sources, rerr = read_sources(opts)
  if not sources then return nil, rerr, rep.warnings end
  local from_files = #sources > 0

  -- after a wrong type, go on: the value is dropped, and the other errors are reported too
  local docs = decode_sources(rep, sources, command, opts.migrate)

  if command and from_files and not rep:failed() then
    local found = false
    for _, slot in ipairs(NEEDS[command]) do found = found or docs[slot] ~= nil end
    if not found then
      local kinds = {}
      for _, slot in ipairs(NEEDS[command]) do kinds[#kinds + 1] = KIND_OF[slot] end
      return nil, fmt("no %s kind was found in the YAML file", table.concat(kinds, " or ")), rep.warnings
    end
  end

  local ok, ferr = flags.apply(rep, docs, command, opts.flags, opts.args, from_files)
  if not ok then
    rep:error(nil, nil, ferr)
    return nil, rep:text(), rep.warnings
  end

  for _, slot in ipairs(command and CREATES[command] or {}) do docs[slot] = docs[slot] or {} end
  for _, slot in ipairs { "init", "cluster", "join", "reset", "upgrade" } do
    if docs[slot] then defaults.apply(KIND_OF[slot], docs[slot]) end
  end

  -- dynamic default (kubeadm SetNodeRegistrationDynamicDefaults): the host name
  for _, slot in ipairs { "init", "join" } do
    local nr = docs[slot] and docs[slot].nodeRegistration
    if nr and nr.name == nil and not opts.no_host_defaults then
      nr.name = load.node_name_default()
    end
  end

  for _, slot in ipairs { "cluster", "init", "join", "reset", "upgrade" } do
    if docs[slot] and opts.validate ~= false then validate.document(rep, KIND_OF[slot], docs[slot]) end
  end
  if rep:failed() then return nil, rep:text(), rep.warnings end

  local cfg = {
    init = docs.init, cluster = docs.cluster, join = docs.join, reset = docs.reset,
    upgrade = docs.upgrade, kubelet = docs.kubelet, kubeproxy = docs.kubeproxy,
    warnings = rep.warnings, gates = gates.effective(docs.cluster), flags = {},
    args = opts.args, command = command, files = opts.files,
  }
  for k, v in pairs(opts.flags or {}) do cfg.flags[k] = v end
  return cfg
end

return load
