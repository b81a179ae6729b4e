-- A CA rotation's state, in the cluster so every control plane reads it: the Secret
-- kube-system/moonadm-ca-rotation. Its data: `rotation` (JSON: the CAs, who started it and when,
-- the control planes it covers), per CA `<ca>.old.crt` and `<ca>.new.crt` (PEM) and `<ca>.new.key`
-- (sealed with the rotation's certificate key, AES-256-GCM as upload-certs seals), and per control
-- plane `node.<name>` its stage. A node writes only its own key, by merge patch: nodes never race.
local pki = require "moonadm.pki"
local encoding = require "moonadm.encoding"
local json = require "kube.json"
local shape = require "kube.shape"
local capi = require "cluster.api"
local tokens = require "cluster.tokens"

local M = {}

M.NS = "kube-system"
M.NAME = "moonadm-ca-rotation"
M.REF = { apiVersion = "v1", kind = "Secret", namespace = M.NS, name = M.NAME }

-- A node's stages in order: none (not started here), then one per step done.
M.STAGES = { "none", "trust-both", "issued", "trust-new" }
M.RANK = {}
for i, s in ipairs(M.STAGES) do M.RANK[s] = i - 1 end

local function b64(s) return encoding.base64_encode(s) end

local function unb64(data, key)
  local v = data[key]
  if v == nil then return nil end
  local raw, err = encoding.base64_decode(v)
  if not raw then error(("Secret %s/%s: data.%s: %s"):format(M.NS, M.NAME, key, err), 0) end
  return raw
end

-- The live rotation decoded, or nil when none is under way; raises on an API failure or a Secret of
-- another shape (naming the field, and what to do).
function M.read(c)
  local obj, err = capi.lookup(c, M.REF)
  if err then error(("reading Secret %s/%s: %s"):format(M.NS, M.NAME, tostring(err)), 0) end
  if not obj then return nil end
  local data, why = shape.strings(obj, "data")
  if not data then error(("Secret %s/%s: %s"):format(M.NS, M.NAME, why), 0) end
  local meta = unb64(data, "rotation")
  local ok, info = pcall(json.decode, meta or "")
  if not ok or type(info) ~= "table" or type(info.cas) ~= "table" or type(info.control_planes) ~= "table" then
    error(("Secret %s/%s: data.rotation is not a rotation moonadm wrote: delete it by hand (kubectl -n %s delete " ..
      "secret %s) only if no node has started it"):format(M.NS, M.NAME, M.NS, M.NAME), 0)
  end
  local r = { id = info.id, cas = info.cas, started = info.started, by = info.by,
    control_planes = info.control_planes, old_key_kept = info.old_key_kept, stages = {}, ca = {} }
  for _, name in ipairs(r.cas) do
    r.ca[name] = { old_crt = unb64(data, name .. ".old.crt"), new_crt = unb64(data, name .. ".new.crt"),
      sealed_key = unb64(data, name .. ".new.key") }
    if not (r.ca[name].old_crt and r.ca[name].new_crt and r.ca[name].sealed_key) then
      error(("Secret %s/%s: the %s CA's certificates or key are missing"):format(M.NS, M.NAME, name), 0)
    end
    for _, which in ipairs { "old", "new" } do
      local key = name .. "." .. which .. ".crt"
      local list = pki.read_certs(r.ca[name][which .. "_crt"])
      local ci = list and #list == 1 and list[1]:info()
      if not (ci and ci.is_ca) then
        error(("Secret %s/%s: data.%s is not one CA certificate"):format(M.NS, M.NAME, key), 0)
      end
    end
  end
  for _, n in ipairs(r.control_planes) do
    local s = unb64(data, "node." .. n) or "none"
    if not M.RANK[s] then error(("Secret %s/%s: data.node.%s: unknown stage %q"):format(M.NS, M.NAME, n, s), 0) end
    r.stages[n] = s
  end
  return r
end

-- The new CA key of one CA of r, opened with the certificate key | raises naming what to pass.
function M.new_key(r, name, certificate_key)
  if not certificate_key or certificate_key == "" then
    error(("the rotation's new %s CA key is sealed: pass --certificate-key, the key `moonadm certs rotate-ca` " ..
      "printed on %s when it started the rotation"):format(name, tostring(r.by)), 0)
  end
  local pem, err = pki.open(certificate_key, r.ca[name].sealed_key)
  if not pem then
    error(("--certificate-key does not open the rotation's new %s CA key (%s): pass the key printed on %s when " ..
      "the rotation started"):format(name, err, tostring(r.by)), 0)
  end
  local key, kerr = pki.read_key(pem)
  if not key then error(("the rotation's new %s CA key: %s"):format(name, kerr), 0) end
  local ok, merr = key:matches(assert(pki.read_cert(r.ca[name].new_crt)))
  if not ok then error(("the rotation's new %s CA key does not match its certificate: %s"):format(name, tostring(merr)), 0) end
  return key
end

-- The Secret of a new rotation. info: {id, cas, started, by, control_planes, old_key_kept};
-- per_ca[name] = {old_crt, new_crt, new_key_pem}; key: the certificate key.
function M.object(info, per_ca, key)
  local data = { rotation = b64(json.encode(info)) }
  for _, name in ipairs(info.cas) do
    local p = per_ca[name]
    local sealed, err = pki.seal(key, p.new_key_pem)
    if not sealed then error(("sealing the new %s CA key: %s"):format(name, err), 0) end
    data[name .. ".old.crt"], data[name .. ".new.crt"], data[name .. ".new.key"] = b64(p.old_crt), b64(p.new_crt), b64(sealed)
  end
  return { apiVersion = "v1", kind = "Secret", type = "Opaque",
    metadata = { name = M.NAME, namespace = M.NS, labels = { ["app.kubernetes.io/managed-by"] = "moonadm" } },
    data = data }
end

-- Creates the rotation's Secret: true, or false when one exists already (a concurrent start); raises otherwise.
function M.create(c, obj)
  local got, err = c:create(obj)
  if got then return true end
  if err.code == 409 then return false end
  error(("creating Secret %s/%s: %s"):format(M.NS, M.NAME, tostring(err)), 0)
end

-- Records node's stage (its own data key only).
function M.set_stage(c, node, stage)
  assert(M.RANK[stage], "rotation.state: unknown stage")
  local got, err = c:patch(M.REF, { data = { ["node." .. node] = b64(stage) } }, { type = "merge" })
  if not got then error(("recording %s's stage %s in Secret %s/%s: %s"):format(node, stage, M.NS, M.NAME, tostring(err)), 0) end
end

-- Ends the rotation (its Secret gone; already gone is fine).
function M.delete(c)
  local ok, err = c:delete(M.REF, { ignore_not_found = true })
  if not ok then error(("deleting Secret %s/%s: %s"):format(M.NS, M.NAME, tostring(err)), 0) end
end

-- ---- one node restarts at a time ----
-- Each node checks etcd's quorum before its member restarts; two nodes checking at the same moment
-- would both pass and restart together. The Lease kube-system/moonadm-ca-rotation-restart names the
-- node restarting now; another waits for it to be released or to expire (a killed run's: the same
-- node takes it again at once).
M.LEASE = { apiVersion = "coordination.k8s.io/v1", kind = "Lease", namespace = M.NS, name = "moonadm-ca-rotation-restart" }
M.LEASE_SECONDS = 600

local function micro(t) return os.date("!%Y-%m-%dT%H:%M:%S.000000Z", t) end

-- Takes the restart lease for node: true | false, holder, since (another node holds it); raises on an API failure.
function M.lock(c, node)
  local now = os.time()
  local spec = { holderIdentity = node, leaseDurationSeconds = M.LEASE_SECONDS, acquireTime = micro(now), renewTime = micro(now) }
  local got, err = c:create { apiVersion = M.LEASE.apiVersion, kind = "Lease",
    metadata = { name = M.LEASE.name, namespace = M.NS }, spec = spec }
  if got then return true end
  if err.code ~= 409 then error(("creating Lease %s/%s: %s"):format(M.NS, M.LEASE.name, tostring(err)), 0) end
  local live, gerr = capi.lookup(c, M.LEASE)
  if gerr then error(("reading Lease %s/%s: %s"):format(M.NS, M.LEASE.name, tostring(gerr)), 0) end
  if not live then return M.lock(c, node) end -- released meanwhile
  local holder = shape.get(live, "spec.holderIdentity", "string")
  local renewed = tokens.parse_time(shape.get(live, "spec.renewTime", "string") or "")
  local seconds = shape.get(live, "spec.leaseDurationSeconds", "number") or M.LEASE_SECONDS
  if holder ~= node and renewed and renewed + seconds > now then return false, holder, renewed end
  live.spec = spec -- ours already (a killed run's), or expired: taken over, unless another node just did
  local upd, uerr = c:update(live)
  if upd then return true end
  if uerr.code == 409 then return false, "another node", now end
  error(("taking over Lease %s/%s: %s"):format(M.NS, M.LEASE.name, tostring(uerr)), 0)
end

-- Releases the restart lease if node holds it.
function M.unlock(c, node)
  local live, err = capi.lookup(c, M.LEASE)
  if err then error(("reading Lease %s/%s: %s"):format(M.NS, M.LEASE.name, tostring(err)), 0) end
  if not live or shape.get(live, "spec.holderIdentity", "string") ~= node then return end
  local ok, derr = c:delete(M.LEASE, { ignore_not_found = true })
  if not ok then error(("deleting Lease %s/%s: %s"):format(M.NS, M.LEASE.name, tostring(derr)), 0) end
end

-- The control planes of r below stage (sorted names), for "waiting for ..." messages.
function M.behind(r, stage)
  local out = {}
  for _, n in ipairs(r.control_planes) do
    if M.RANK[r.stages[n]] < M.RANK[stage] then out[#out + 1] = n end
  end
  table.sort(out)
  return out
end

return M
