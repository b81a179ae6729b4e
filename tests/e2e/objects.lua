-- The cluster objects a bootstrap tool makes, dumped with the lab's kubectl and normalised so two
-- clusters can be compared: what must differ between them (uids, times, resource versions, keys and
-- certificates, bootstrap token ids, the nodes' names and addresses) becomes a placeholder, a
-- Secret keeps only its type and its keys, and status (the controllers', not the tool's) goes.
--   local objects = require "objects"  -- (tests/e2e on package.path)
--   local set = objects.dump(kubectl, names)  -- names: {["192.0.2.11"] = "<CP1-IP>", cp1 = "<CP1>"}
--   local diffs = objects.diff(kubeadm_set, moonadm_set)  -- {"ConfigMap kube-system/x data.y: ..."}
local cjson = require "cjson"
local encoding = require "moonadm.encoding"
local pki = require "moonadm.pki"

local M = {}

-- What kubeadm init/join create or touch, and what the control plane makes around them (equal on
-- both sides when the tools agree). Pods, events, leases, endpoints and CSRs are runtime, not kept.
M.RESOURCES = { "namespaces", "configmaps", "secrets", "serviceaccounts", "roles", "rolebindings", "clusterroles",
  "clusterrolebindings", "deployments", "daemonsets", "services", "nodes" }

local HASH = "kubeadm.kubernetes.io/component-config.hash"

local DROP_META = { uid = true, resourceVersion = true, creationTimestamp = true, managedFields = true,
  generation = true, selfLink = true, deletionGracePeriodSeconds = true }

local function escape(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end

-- A string with everything that must differ replaced. names: exact words (node names, addresses)
-- to placeholders, longest first so 192.0.2.11 is not read as 192.0.2.1 followed by 1.
function M.normalize_string(s, names)
  s = s:gsub("eyJ[%w_%-]*%.[%w_%-]*%.[%w_%-]+", "<JWS>") -- a detached JWS (cluster-info): the token signs it
  s = s:gsub("%-%-%-%-%-BEGIN ([%u ]+)%-%-%-%-%-.-%-%-%-%-%-END [%u ]+%-%-%-%-%-", "<PEM %1>")
  s = s:gsub("sha256:%x+", "sha256:<HASH>")
  s = s:gsub("%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[%.%d]*Z?", "<TIME>")
  s = s:gsub("%d%d%d%d%-%d%d%-%d%d", "<DATE>")
  s = s:gsub("bootstrap%-token%-%w%w%w%w%w%w", "bootstrap-token-<ID>")
  s = s:gsub("jws%-kubeconfig%-%w%w%w%w%w%w", "jws-kubeconfig-<ID>")
  s = s:gsub("%f[%x]" .. ("%x"):rep(31) .. "%x+%f[^%x]", "<HEX>")
  s = s:gsub("[%w+/]+=*", function(w) if #w >= 60 then return "<BASE64>" end end)
  local keys = {}
  for k in pairs(names) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return #a > #b end)
  for _, k in ipairs(keys) do s = s:gsub("%f[%w%.]" .. escape(k) .. "%f[^%w%.]", (names[k]:gsub("%%", "%%%%"))) end
  return s
end

local function normalize(v, names)
  if type(v) == "string" then return M.normalize_string(v, names) end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do
    out[type(k) == "string" and M.normalize_string(k, names) or k] = normalize(x, names)
  end
  return setmetatable(out, getmetatable(v))
end

-- One object as it is compared.
function M.shape(o, names)
  local md = o.metadata or {}
  local meta = {}
  for k, x in pairs(md) do if not DROP_META[k] then meta[k] = x end end
  for _, ref in ipairs(meta.ownerReferences or {}) do ref.uid = nil end
  -- a component-config hash is compared as valid or not for that side's own data (kubeadm's
  -- ChecksumForConfigMap), before the data is normalised
  local hash = meta.annotations and meta.annotations[HASH]
  if hash then
    local ks, parts = {}, {}
    for k in pairs(o.data or {}) do ks[#ks + 1] = k end
    table.sort(ks)
    for _, k in ipairs(ks) do parts[#parts + 1] = o.data[k] end
    local valid = hash == "sha256:" .. encoding.sha256_hex(table.concat(parts))
    meta.annotations = setmetatable({}, getmetatable(meta.annotations))
    for k, x in pairs(md.annotations) do meta.annotations[k] = x end
    meta.annotations[HASH] = valid and "<HASH valid>" or "<HASH invalid>"
  end
  local s = { kind = o.kind, metadata = meta }
  if o.kind == "Secret" then
    local keys = {}
    for k in pairs(o.data or {}) do keys[#keys + 1] = M.normalize_string(k, names) end
    table.sort(keys)
    s.type, s.keys = o.type, keys
    -- a bootstrap token's fields but its id (random) and its secret are compared by value
    if o.type == "bootstrap.kubernetes.io/token" then
      s.values = {}
      for k, v in pairs(o.data or {}) do
        if k ~= "token-secret" and k ~= "token-id" then s.values[k] = encoding.base64_decode(v) or "<undecodable>" end
      end
    end
  elseif o.kind == "Node" then
    -- what the tools set on a Node: labels, annotations, taints (not the node lifecycle's own)
    local taints = {}
    for _, t in ipairs((o.spec or {}).taints or {}) do
      if not t.key:match("^node%.kubernetes%.io/") then taints[#taints + 1] = { key = t.key, value = t.value, effect = t.effect } end
    end
    s.taints = taints
    s.metadata = { name = md.name, labels = md.labels, annotations = md.annotations }
  else
    for k, x in pairs(o) do
      if k ~= "metadata" and k ~= "status" and k ~= "apiVersion" and k ~= "kind" then s[k] = x end
    end
  end
  return normalize(s, names)
end

-- Every object of M.RESOURCES, by "Kind namespace/name" (normalised). kubectl(args) returns code, out.
function M.dump(kubectl, names)
  local code, out = kubectl { "get", table.concat(M.RESOURCES, ","), "-A", "-o", "json" }
  assert(code == 0, "kubectl get: " .. tostring(out))
  local list = cjson.decode(out)
  local set = {}
  for _, o in ipairs(list.items) do
    local s = M.shape(o, names)
    local md = s.metadata
    local key = ("%s %s%s"):format(s.kind, md.namespace and (md.namespace .. "/") or "", md.name)
    -- bootstrap tokens all read bootstrap-token-<ID>: told apart by what they hold
    if s.type == "bootstrap.kubernetes.io/token" then key = key .. " [" .. table.concat(s.keys, " ") .. "]" end
    assert(not set[key], "two objects normalise to " .. key)
    set[key] = s
  end
  return set
end

local function show(v)
  if type(v) == "table" then return cjson.encode(v) end
  return ("%q"):format(tostring(v))
end

local function is_array(t)
  if type(t) ~= "table" then return false end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t and (n > 0 or getmetatable(t) == cjson.array_mt)
end

local function deep(a, b, path, out)
  if type(a) == "table" and type(b) == "table" then
    if next(a) == nil and next(b) == nil then return end
    if is_array(a) and is_array(b) then
      for i = 1, math.max(#a, #b) do deep(a[i], b[i], ("%s[%d]"):format(path, i - 1), out) end
      return
    end
    local keys, seen = {}, {}
    for k in pairs(a) do if not seen[k] then seen[k] = true; keys[#keys + 1] = k end end
    for k in pairs(b) do if not seen[k] then seen[k] = true; keys[#keys + 1] = k end end
    table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
    for _, k in ipairs(keys) do deep(a[k], b[k], path == "" and tostring(k) or (path .. "." .. tostring(k)), out) end
    return
  end
  if a == nil then out[#out + 1] = ("%s: only moonadm has %s"):format(path, show(b))
  elseif b == nil then out[#out + 1] = ("%s: only kubeadm has %s"):format(path, show(a))
  elseif a ~= b then out[#out + 1] = ("%s: kubeadm=%s moonadm=%s"):format(path, show(a), show(b)) end
end

-- The differences between two dumps, sorted: "<object>: only kubeadm made it", or field by field.
function M.diff(kubeadm, moonadm)
  local names, seen = {}, {}
  for k in pairs(kubeadm) do names[#names + 1] = k; seen[k] = true end
  for k in pairs(moonadm) do if not seen[k] then names[#names + 1] = k end end
  table.sort(names)
  local out = {}
  for _, n in ipairs(names) do
    local a, b = kubeadm[n], moonadm[n]
    if not b then out[#out + 1] = n .. ": only kubeadm made it"
    elseif not a then out[#out + 1] = n .. ": only moonadm made it"
    else
      local d = {}
      deep(a, b, "", d)
      for _, x in ipairs(d) do out[#out + 1] = n .. " " .. x end
    end
  end
  return out
end

return M
