-- upload-certs (reference kubeadm-pki.md §5): the control-plane CA keys and service-account keys,
-- each AES-256-GCM-sealed with the certificate key (nonce ‖ ciphertext ‖ tag), in the Secret
-- kube-system/kubeadm-certs, owned by a 2-hour token with no usages so the garbage collector
-- removes the Secret when the token cleaner deletes the token; and the Role that lets bootstrap
-- tokens read it.
local pki = require "moonadm.pki"
local fs = require "moonadm.fs"
local log = require "framework.log"
local capi = require "cluster.api"
local cadmin = require "cluster.admin"
local rbac = require "cluster.rbac"
local tokens = require "cluster.tokens"
local shape = require "kube.shape"
local encoding = require "moonadm.encoding"
local config = require "config"

local M = {}

M.SECRET = "kubeadm-certs"
M.NS = "kube-system"
M.TOKEN_TTL = 2 * 3600
M.TOKEN_DESCRIPTION = "Proxy for managing TTL for the kubeadm-certs secret"

-- Data key → source path, as kubeadm's copy-certs layout (local or external etcd).
function M.files(cluster)
  local dir = config.cert_dir(cluster)
  local list = {
    { "ca.crt", dir .. "/ca.crt" }, { "ca.key", dir .. "/ca.key" },
    { "front-proxy-ca.crt", dir .. "/front-proxy-ca.crt" }, { "front-proxy-ca.key", dir .. "/front-proxy-ca.key" },
    { "sa.pub", dir .. "/sa.pub" }, { "sa.key", dir .. "/sa.key" },
  }
  local ext = cluster.etcd and cluster.etcd.external
  if ext then
    list[#list + 1] = { "external-etcd-ca.crt", ext.caFile }
    list[#list + 1] = { "external-etcd.crt", ext.certFile }
    list[#list + 1] = { "external-etcd.key", ext.keyFile }
  else
    list[#list + 1] = { "etcd-ca.crt", dir .. "/etcd/ca.crt" }
    list[#list + 1] = { "etcd-ca.key", dir .. "/etcd/ca.key" }
  end
  return list
end

-- The certificate key of this run: --certificate-key, InitConfiguration.certificateKey, or new.
function M.key(ctx)
  if ctx.data.certificate_key then return ctx.data.certificate_key end
  local k = ctx.flags and ctx.flags["certificate-key"]
  if not k or k == "" then k = ctx.cfg.init and ctx.cfg.init.certificateKey end
  if not k or k == "" then k = pki.certificate_key() end
  if not k:match("^%x+$") or #k ~= 64 then
    error("the certificate key must be a hex-encoded string of 32 bytes", 0)
  end
  ctx.data.certificate_key = k
  return k
end

-- The Secret's base64 data: sealed files; a missing file is an empty value.
function M.data(files, key, read)
  local data = {}
  for _, f in ipairs(files) do
    local content = f[2] and read(f[2])
    if content and #content > 0 then
      local sealed, err = pki.seal(key, content)
      if not sealed then error(("encrypting %s: %s"):format(f[2], err), 0) end
      data[f[1]] = encoding.base64_encode(sealed)
    else
      data[f[1]] = ""
    end
  end
  return data
end

-- Decrypts a Secret's data back to key → plaintext (empty values stay empty) | raises.
function M.open(data, key)
  local out = {}
  for k, v in pairs(data or {}) do
    if v == "" then out[k] = "" else
      local raw = encoding.base64_decode(v)
      if not raw then error(("decrypting %s: bad base64"):format(k), 0) end
      local pt, err = pki.open(key, raw)
      if not pt then error(("decrypting %s: %s"):format(k, err), 0) end
      out[k] = pt
    end
  end
  return out
end

function M.rbac_objects()
  return {
    rbac.role(M.NS, "kubeadm:kubeadm-certs", { rbac.rule({ "" }, { "secrets" }, { "get" }, { M.SECRET }) }),
    rbac.role_binding(M.NS, "kubeadm:kubeadm-certs", "kubeadm:kubeadm-certs", { rbac.group(tokens.DEFAULT_GROUP) }),
  }
end

function M.run(ctx)
  local upload = ctx.flags and ctx.flags["upload-certs"]
  if not upload then
    log.info("[upload-certs] Skipping phase. Please see --upload-certs")
    return
  end
  local c = cadmin.client(ctx)
  local key = M.key(ctx)
  log.info("[upload-certs] Storing the certificates in Secret %q in the %q Namespace", M.SECRET, M.NS)
  local proxy = tokens.normalize { ttl = "2h0m0s", usages = {}, groups = {}, description = M.TOKEN_DESCRIPTION }
  local tsecret = tokens.secret(proxy, os.time())
  local owner
  -- A re-run (--resume after a crash between the token and the journal) reuses the owner token of
  -- the kubeadm-certs Secret while it has more than an hour to live, instead of leaving a second
  -- token behind; an older or missing one is replaced, as kubeadm does on every run.
  if not ctx.dry_run then
    local function lookup(name)
      local obj, err = capi.lookup(c, { apiVersion = "v1", kind = "Secret", namespace = M.NS, name = name })
      if err then error(("[upload-certs] reading Secret %s/%s: %s"):format(M.NS, name, tostring(err)), 0) end
      return obj
    end
    -- every field read is shape-checked; one of another shape only means no token to reuse
    local live = lookup(M.SECRET)
    local ref = shape.get(live, "metadata.ownerReferences.1", "table")
    local uid = ref and shape.get(ref, "kind") == "Secret" and shape.get(ref, "uid", "string")
    local ref_name = uid and shape.name(ref, "name")
    local tok = ref_name and lookup(ref_name)
    local t = tok and shape.get(tok, "metadata.uid", "string") == uid and tokens.from_secret(tok)
    if t and t.expires and t.expires > os.time() + 3600 and #t.usages == 0 then
      log.v(1, "[upload-certs] Reusing the kubeadm-certs owner token %s (expires %s)", t.id, tokens.rfc3339(t.expires))
      owner = tok
    end
    -- A crash right after the token was created and before kubeadm-certs named it as its owner:
    -- the token is there but nothing points at it. Find it by its description.
    if not owner then
      local list, lerr = c:list({ apiVersion = "v1", kind = "Secret", namespace = M.NS },
        { field_selector = "type=bootstrap.kubernetes.io/token" })
      if not list then error(("[upload-certs] listing the bootstrap tokens in %s: %s"):format(M.NS, tostring(lerr)), 0) end
      local best
      for _, sec in ipairs(list.items) do
        local lt = tokens.from_secret(sec)
        if lt and lt.description == M.TOKEN_DESCRIPTION and lt.expires and lt.expires > os.time() + 3600
          and #lt.usages == 0 and (not best or lt.expires > best.expires) then
          owner, best = sec, lt
        end
      end
      if owner then log.v(1, "[upload-certs] Reusing the unreferenced kubeadm-certs owner token %s", owner.metadata.name) end
    end
  end
  if owner then -- luacheck: ignore 542 (reused above)
  elseif ctx.dry_run then
    log.info("[dryrun] Would create Secret %s/%s", tsecret.metadata.namespace, tsecret.metadata.name)
    owner = { metadata = { name = tsecret.metadata.name, uid = "dry-run" } }
  else
    local err
    owner, err = c:create(tsecret)
    if not owner then error(("creating the kubeadm-certs proxy token: %s"):format(tostring(err)), 0) end
  end
  local owner_name, why = shape.name(owner)
  local owner_uid, uwhy = shape.need(owner, "metadata.uid", "string")
  if not owner_name or not owner_uid then
    error(("[upload-certs] the kubeadm-certs owner token Secret as the API server answered it: %s"):format(why or uwhy), 0)
  end
  local secret = { apiVersion = "v1", kind = "Secret", type = "Opaque",
    metadata = { name = M.SECRET, namespace = M.NS, ownerReferences = { {
      apiVersion = "v1", kind = "Secret", name = owner_name, uid = owner_uid,
      controller = true, blockOwnerDeletion = true } } },
    data = M.data(M.files(ctx.cfg.cluster), key, function(p) return fs.read(p) end) }
  capi.apply(ctx, c, secret)
  for _, o in ipairs(M.rbac_objects()) do capi.apply(ctx, c, o) end
  if not (ctx.flags and ctx.flags["skip-certificate-key-print"]) then
    log.info("[upload-certs] Using certificate key:")
    log.result(key)
  end
end

return M
