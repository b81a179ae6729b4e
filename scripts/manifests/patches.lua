-- kubeadm's patches (`--patches DIR`, `patches.directory`), in Lua on decoded tables.
--
-- File names: target[suffix][+patchtype].ext with target one of kube-apiserver,
-- kube-controller-manager, kube-scheduler, etcd, kubeletconfiguration, corednsdeployment; patchtype
-- strategic (default), merge (RFC 7386) or json (RFC 6902); ext json or yaml. A file may hold several
-- YAML documents, each one patch. Patches of a target apply in the order of the file names (kubeadm
-- walks the directory lexically), documents of a file in order. Files that are not patches (other
-- extensions, unknown targets) are ignored with a message; an unknown patch type, a file that does not
-- decode, or a patch that cannot apply is an error naming the file.
local yaml = require "moonadm.yaml"
local fs = require "moonadm.fs"
local log = require "framework.log"
local util = require "framework.util"
local lazy = require "framework.lazy"
local trust = lazy.require "framework.trust" -- when there are patches

local M = {}

M.TARGETS = { "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
  "kubeletconfiguration", "corednsdeployment" }
M.TYPES = {
  strategic = "application/strategic-merge-patch+json",
  merge = "application/merge-patch+json",
  json = "application/json-patch+json",
}

local null = yaml.null
local array_mt = yaml.array_mt

local function is_array(v)
  return type(v) == "table" and getmetatable(v) == array_mt
end
local function is_map(v)
  return type(v) == "table" and not is_array(v)
end
local copy = util.deepcopy

-- Parses a file name → {target, suffix, type} | nil, why (ignored) | false, error (a bad patch file).
function M.parse_name(name)
  local base, ext = name:match("^(.*)%.([^.]+)$")
  if not base or not (ext == "yaml" or ext == "json") then
    return nil, "the file extension must be one of [json yaml]"
  end
  local head, ptype = base:match("^([^+]*)%+(.*)$")
  head = head or base
  local target
  for _, t in ipairs(M.TARGETS) do
    if head:sub(1, #t) == t and (not target or #t > #target) then target = t end
  end
  if not target then
    return nil, ("unknown target, must be one of [%s]"):format(table.concat(M.TARGETS, " "))
  end
  if head:find(".", 1, true) then return nil, "the file extension must be one of [json yaml]" end
  ptype = ptype or "strategic"
  if ptype == "" or not M.TYPES[ptype] then
    return false, ("unknown or missing patch type %q, must be one of [json merge strategic]"):format(ptype)
  end
  return { target = target, suffix = head:sub(#target + 1), type = ptype }
end

-- Reads a host directory (not under --root: the patches are the user's files on this machine).
local function with_host_root(f, ...)
  local real = fs.root()
  fs.set_root("/")
  local r = table.pack(pcall(f, ...))
  fs.set_root(real)
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

-- Loads every patch in dir: {[target] = {{file, type, patch}, ...}}, ignored files | raises.
-- A patch decides what runs as root, so the dir gets the site scripts' trust check first
-- (framework/trust.lua; insecure: --insecure-scripts, a warning instead).
function M.load(dir, insecure)
  trust.check({ { what = "patches dir", path = dir } }, insecure)
  dir = trust.absolute(dir) -- what the check judged (a relative dir is the working directory's)
  return with_host_root(function()
    local st = fs.stat(dir)
    if not st or st.type ~= "directory" then
      error(("could not list patch files for path %q: not a directory"):format(dir), 0)
    end
    local names = assert(fs.list(dir))
    table.sort(names)
    local sets, ignored = {}, {}
    for _, name in ipairs(names) do
      local path = dir:gsub("/$", "") .. "/" .. name
      local est = fs.stat(path)
      if est and est.type ~= "directory" then
        local info, why = M.parse_name(name)
        if info == false then
          error(("patch file %s: %s"):format(path, why), 0)
        elseif not info then
          ignored[#ignored + 1] = path
          log.v(1, "[patches] Ignoring file %q: %s", path, why)
        else
          -- a regular file (est is lstat's: a symlink to a directory or a device is refused here),
          -- no bigger than the decoder takes
          local text, rerr = fs.read_regular(assert(fs.path(path)), yaml.limits.max_bytes)
          if not text then
            error(("patch file %s: %s; a patch is a YAML or JSON file of at most %d MiB"):format(path, rerr,
              yaml.limits.max_bytes >> 20), 0)
          end
          local docs, derr = yaml.decode(text, path)
          if not docs then error(("patch file %s: %s"):format(path, derr), 0) end
          sets[info.target] = sets[info.target] or {}
          for i, d in ipairs(docs) do
            if d ~= null then
              if info.type == "json" then
                if not is_array(d) then
                  error(("patch file %s: document %d: a json patch must be a list of operations"):format(path, i), 0)
                end
              elseif not is_map(d) then
                error(("patch file %s: document %d: a %s patch must be a mapping"):format(path, i, info.type), 0)
              end
              table.insert(sets[info.target], { file = path, type = info.type, patch = d, doc = i })
            end
          end
        end
      end
    end
    return sets, ignored
  end)
end

-- A patch names fields of a Kubernetes object, which are strings: YAML's `true:` or `1:` is a
-- boolean or number key no object has (quoted, "true": is a string).
local function field_key(k, where)
  if type(k) ~= "string" then
    error(("%s: key %s is not a string: a patch names an object's fields (quote it)"):format(
      where == "" and "patch" or where, tostring(k)), 0)
  end
  return k
end

-- ---------------------------------------------------------------- merge patch (RFC 7386)
local function merge(target, patch, where)
  if not is_map(patch) then return copy(patch) end
  local out = is_map(target) and copy(target) or {}
  for k, v in pairs(patch) do
    field_key(k, where)
    if v == null then out[k] = nil else out[k] = merge(out[k], v, where .. "." .. k) end
  end
  return out
end

function M.merge(target, patch) return merge(target, patch, "") end

-- ---------------------------------------------------------------- strategic merge patch
-- Merge keys of the Pod and Deployment fields kubeadm's targets patch (k8s.io/api patchMergeKey).
M.MERGE_KEYS = {
  containers = "name", initContainers = "name", ephemeralContainers = "name",
  volumes = "name", volumeMounts = "mountPath", volumeDevices = "devicePath",
  env = "name", ports = "containerPort", imagePullSecrets = "name", hostAliases = "ip",
  topologySpreadConstraints = "topologyKey", resourceClaims = "name", conditions = "type",
}

local function strip_directives(v)
  if type(v) ~= "table" then return v end
  local out = setmetatable({}, getmetatable(v))
  if is_array(v) then
    for _, x in ipairs(v) do
      if not (is_map(x) and x["$patch"]) then out[#out + 1] = strip_directives(x) end
    end
  else
    for k, x in pairs(v) do
      if not (type(k) == "string" and k:sub(1, 1) == "$") and x ~= null then out[k] = strip_directives(x) end
    end
  end
  return out
end

local smp_map

local function smp_list(orig, patch, key, where)
  if not key then return strip_directives(patch) end
  for _, item in ipairs(patch) do
    if is_map(item) and item["$patch"] == "replace" then
      local rest = setmetatable({}, array_mt)
      for _, x in ipairs(patch) do
        if not (is_map(x) and x["$patch"] == "replace") then rest[#rest + 1] = strip_directives(x) end
      end
      return rest
    end
  end
  local out = is_array(orig) and copy(orig) or setmetatable({}, array_mt)
  for _, item in ipairs(patch) do
    if not is_map(item) then
      error(("%s: list items must be mappings with the merge key %q"):format(where, key), 0)
    end
    local kv = item[key]
    if kv == nil then error(("%s: list item without its merge key %q"):format(where, key), 0) end
    local idx
    for i, x in ipairs(out) do
      if is_map(x) and x[key] == kv then idx = i; break end
    end
    if item["$patch"] == "delete" then
      if idx then table.remove(out, idx) end
    elseif item["$patch"] ~= nil then
      error(("%s: unknown $patch directive %q"):format(where, tostring(item["$patch"])), 0)
    elseif idx then
      out[idx] = smp_map(out[idx], item, where .. "[" .. tostring(kv) .. "]")
    else
      out[#out + 1] = strip_directives(item)
    end
  end
  return out
end

function smp_map(orig, patch, where)
  local directive = patch["$patch"]
  if directive == "replace" then return strip_directives(patch) end
  if directive == "delete" then return nil end
  if directive ~= nil then error(("%s: unknown $patch directive %q"):format(where, tostring(directive)), 0) end
  local out = is_map(orig) and copy(orig) or {}
  for k, v in pairs(patch) do
    field_key(k, where)
    if k:sub(1, 1) == "$" then
      -- $retainKeys is applied below; $setElementOrder/... and $deleteFromPrimitiveList/... only order
      -- or prune lists kubeadm's targets do not merge; they are accepted and have no effect here.
      if k:match("^%$deleteFromPrimitiveList/") then
        local field = k:sub(#"$deleteFromPrimitiveList/" + 1)
        if is_array(out[field]) and is_array(v) then
          local drop = {}
          for _, x in ipairs(v) do drop[x] = true end
          local kept = setmetatable({}, array_mt)
          for _, x in ipairs(out[field]) do if not drop[x] then kept[#kept + 1] = x end end
          out[field] = kept
        end
      end
    elseif v == null then
      out[k] = nil
    elseif is_map(v) then
      out[k] = smp_map(out[k], v, where .. "." .. k)
    elseif is_array(v) then
      out[k] = smp_list(out[k], v, M.MERGE_KEYS[k], where .. "." .. k)
    else
      out[k] = v
    end
  end
  if is_array(patch["$retainKeys"]) then
    local keep = {}
    for _, n in ipairs(patch["$retainKeys"]) do keep[n] = true end
    for k in pairs(out) do if not keep[k] then out[k] = nil end end
  end
  return out
end

-- schema: "pod" (merge keys as above) or "plain" (no merge keys: lists replace, as for
-- KubeletConfiguration whose Go struct declares none).
function M.strategic(target, patch, schema)
  if not is_map(patch) then error("a strategic merge patch must be a mapping", 0) end
  if schema == "plain" then
    local keys = M.MERGE_KEYS
    M.MERGE_KEYS = {}
    local ok, r = pcall(smp_map, target, patch, "")
    M.MERGE_KEYS = keys
    if not ok then error(r, 0) end
    return r or {}
  end
  return smp_map(target, patch, "") or {}
end

-- ---------------------------------------------------------------- JSON patch (RFC 6902)
local function pointer(p)
  if p == "" then return {} end
  if type(p) ~= "string" or p:sub(1, 1) ~= "/" then error(("invalid JSON pointer %q"):format(tostring(p)), 0) end
  local parts = {}
  for seg in (p:sub(2) .. "/"):gmatch("([^/]*)/") do
    parts[#parts + 1] = seg:gsub("~1", "/"):gsub("~0", "~")
  end
  return parts
end

local function index_of(arr, seg, for_add)
  if seg == "-" and for_add then return #arr + 1 end
  if not seg:match("^%d+$") or (#seg > 1 and seg:sub(1, 1) == "0") then
    error(("invalid array index %q"):format(seg), 0)
  end
  local i = tonumber(seg) + 1
  if i > #arr + (for_add and 1 or 0) or i < 1 then error(("array index %s out of range"):format(seg), 0) end
  return i
end

local function parent_of(doc, parts, path)
  local cur = doc
  for i = 1, #parts - 1 do
    local seg = parts[i]
    local nxt
    if is_array(cur) then nxt = cur[index_of(cur, seg)] elseif type(cur) == "table" then nxt = cur[seg] end
    if type(nxt) ~= "table" then error(("path %q does not exist"):format(path), 0) end
    cur = nxt
  end
  return cur, parts[#parts]
end

local function get(doc, path)
  local parts = pointer(path)
  if #parts == 0 then return doc end
  local parent, last = parent_of(doc, parts, path)
  local v
  if is_array(parent) then v = parent[index_of(parent, last)] else v = parent[last] end
  if v == nil then error(("path %q does not exist"):format(path), 0) end
  return v
end

local function add(doc, path, value)
  local parts = pointer(path)
  if #parts == 0 then return value end
  local parent, last = parent_of(doc, parts, path)
  if is_array(parent) then
    table.insert(parent, index_of(parent, last, true), value)
  else
    parent[last] = value
  end
  return doc
end

local function remove(doc, path)
  local parts = pointer(path)
  if #parts == 0 then error("cannot remove the whole document", 0) end
  local parent, last = parent_of(doc, parts, path)
  local v
  if is_array(parent) then
    v = table.remove(parent, index_of(parent, last))
  else
    v = parent[last]
    if v == nil then error(("path %q does not exist"):format(path), 0) end
    parent[last] = nil
  end
  return doc, v
end

local function equal(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  if is_array(a) ~= is_array(b) then return false end
  for k, v in pairs(a) do if not equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

function M.json(target, ops)
  if not is_array(ops) then error("a JSON patch must be a list of operations", 0) end
  local doc = copy(target)
  for i, op in ipairs(ops) do
    local ok, err = pcall(function()
      if not is_map(op) then error("an operation must be a mapping", 0) end
      local kind, path = op.op, op.path
      if path == nil then error("missing \"path\"", 0) end
      if type(path) ~= "string" or (op.from ~= nil and type(op.from) ~= "string") then
        error("\"path\" and \"from\" must be strings (JSON pointers)", 0)
      end
      if kind == "add" or kind == "replace" then
        if op.value == nil then error("missing \"value\"", 0) end
        if kind == "replace" then get(doc, path); doc = remove(doc, path) end
        doc = add(doc, path, copy(op.value))
      elseif kind == "remove" then
        doc = remove(doc, path)
      elseif kind == "move" or kind == "copy" then
        if op.from == nil then error("missing \"from\"", 0) end
        local v = copy(get(doc, op.from))
        if kind == "move" then doc = remove(doc, op.from) end
        doc = add(doc, path, v)
      elseif kind == "test" then
        if not equal(get(doc, path), op.value) then error(("test failed at %q"):format(path), 0) end
      else
        error(("unknown operation %q"):format(tostring(kind)), 0)
      end
    end)
    if not ok then
      local what = is_map(op) and (" (%s %s)"):format(tostring(op.op), tostring(op.path)) or ""
      error(("operation %d%s: %s"):format(i, what, err), 0)
    end
  end
  return doc
end

-- ---------------------------------------------------------------- applying
local SCHEMA = { kubeletconfiguration = "plain" }

-- Applies a list of loaded patches to a decoded object; every failure names the patch file.
function M.apply(target, obj, list, quiet)
  for _, p in ipairs(list or {}) do
    local ok, r = pcall(function()
      if p.type == "strategic" then return M.strategic(obj, p.patch, SCHEMA[target] or "pod")
      elseif p.type == "merge" then return M.merge(obj, p.patch)
      else return M.json(obj, p.patch) end
    end)
    if not ok then
      error(("could not apply patch file %s (document %d, type %s) to target %q: %s")
        :format(p.file, p.doc or 1, p.type, target, tostring(r)), 0)
    end
    if not is_map(r) then
      error(("patch file %s turned target %q into something that is not an object"):format(p.file, target), 0)
    end
    obj = r
    if not quiet then log.info("[patches] Applied patch of type %q to target %q", M.TYPES[p.type], target) end
  end
  return obj
end

-- The patches directory of the running command (init, join or upgrade), or nil.
function M.directory(ctx)
  local cfg = ctx.cfg or {}
  local up = cfg.upgrade or {}
  -- (a list with holes: a join has no InitConfiguration, init no JoinConfiguration)
  local docs = { cfg.init, cfg.join, up.apply, up.node }
  for i = 1, 4 do
    local doc = docs[i]
    if doc and doc.patches and doc.patches.directory and doc.patches.directory ~= "" then
      return doc.patches.directory
    end
  end
  local f = ctx.flags and ctx.flags.patches
  if f and f ~= "" then return f end
end

-- Loads (once per run) and applies the user's patches for a target.
function M.apply_for(ctx, target, obj)
  local dir = M.directory(ctx)
  if not dir then return obj end
  ctx.data = ctx.data or {}
  if not ctx.data.patch_sets then
    ctx.data.patch_sets = M.load(dir, ctx.flags and ctx.flags["insecure-scripts"])
  end
  return M.apply(target, obj, ctx.data.patch_sets[target])
end

return M
