-- Kubeconfig files → client options for kube.client / moonadm.api:
--   opts, err = kubeconfig.parse(text, {context=, filename=, base_dir=, read=})
--   opts, err = kubeconfig.load(path, {context=, read=})
--   entries, err = kubeconfig.current(text, path)   -- the current context's entries, as they are
-- opts = {server=, ca_pem=|ca_file=, cert_pem=, key_pem=, token=, insecure=, tls_server_name=,
--         context=, cluster=, user=, namespace=}
-- *-data fields are base64 (decoded here); file fields are read with opts.read (default io.open),
-- relative to the kubeconfig's directory. Errors name the file and the field, never their contents.
local fs = require "moonadm.fs"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"

local M = {}

-- A kubeconfig, or a file it names: a regular file within the YAML decoder's size budget.
local function default_read(path)
  return fs.read_regular(path, yaml.limits.max_bytes)
end

local function find_named(list, name, what, src)
  if type(list) ~= "table" then return nil, ("%s: no %ss"):format(src, what) end
  for _, e in ipairs(list) do
    if type(e) == "table" and e.name == name then
      return type(e[what]) == "table" and e[what] or {}
    end
  end
  return nil, ("%s: %s %q not found"):format(src, what, tostring(name))
end

local function str(v)
  if type(v) == "string" and v ~= "" then return v end
  return nil
end

-- The entries of the current context, for tools that read or edit a kubeconfig as it is (certificate
-- checks, renewals, a server rewrite): {doc, context, cluster, user (entries, user may be nil)} | nil, why.
function M.current(text, path)
  local docs, err = yaml.decode(text, path)
  if not docs then return nil, err end
  local doc = docs[1]
  if type(doc) ~= "table" then return nil, ("%s: not a kubeconfig"):format(path) end
  local cur = doc["current-context"]
  if type(cur) ~= "string" or cur == "" then return nil, ("%s: no current-context"):format(path) end
  local function find(list, name)
    for _, e in ipairs(type(list) == "table" and list or {}) do
      if type(e) == "table" and e.name == name then return e end
    end
  end
  local c = find(doc.contexts, cur)
  if not c or type(c.context) ~= "table" then
    return nil, ("%s: current-context %q is not among the contexts"):format(path, cur)
  end
  local cl = find(doc.clusters, c.context.cluster)
  if not cl or type(cl.cluster) ~= "table" then
    return nil, ("%s: cluster %q of context %q does not exist"):format(path, tostring(c.context.cluster), cur)
  end
  return { doc = doc, context = c, cluster = cl, user = find(doc.users, c.context.user) }
end

function M.parse(text, o)
  o = o or {}
  local src = o.filename or "kubeconfig"
  local read = o.read or default_read
  local docs, err = yaml.decode(text, src)
  if not docs then return nil, err end
  local kc = docs[1]
  if type(kc) ~= "table" then return nil, src .. ": not a kubeconfig (empty or not a mapping)" end
  local ctxname = o.context or str(kc["current-context"])
  if not ctxname then return nil, src .. ": no current-context and no context given" end
  local ctx, cerr = find_named(kc.contexts, ctxname, "context", src)
  if not ctx then return nil, cerr end
  local cluster, clerr = find_named(kc.clusters, ctx.cluster, "cluster", src)
  if not cluster then return nil, clerr end
  local user = {}
  if str(ctx.user) then
    local u, uerr = find_named(kc.users, ctx.user, "user", src)
    if not u then return nil, uerr end
    user = u
  end
  local base = o.base_dir or (o.filename and o.filename:match("^(.*)/[^/]*$")) or "."
  local function path(p) return p:sub(1, 1) == "/" and p or (base .. "/" .. p) end
  local function data(t, field, filefield, where)
    if str(t[field]) then
      local v, derr = encoding.base64_decode(t[field])
      if not v then return nil, ("%s: %s %s: %s"):format(src, where, field, derr) end
      return v
    elseif str(t[filefield]) then
      local v, rerr = read(path(t[filefield]))
      if not v then return nil, ("%s: %s %s %s: %s"):format(src, where, filefield, path(t[filefield]), rerr) end
      return v
    end
    return false
  end

  local opts = { context = ctxname, cluster = ctx.cluster, user = ctx.user, namespace = str(ctx.namespace) }
  opts.server = str(cluster.server)
  if not opts.server then return nil, ("%s: cluster %q has no server"):format(src, tostring(ctx.cluster)) end
  opts.insecure = cluster["insecure-skip-tls-verify"] == true or nil
  opts.tls_server_name = str(cluster["tls-server-name"])
  local ca, e1 = data(cluster, "certificate-authority-data", "certificate-authority", "cluster " .. tostring(ctx.cluster))
  if ca == nil then return nil, e1 end
  opts.ca_pem = ca or nil
  local where = "user " .. tostring(ctx.user)
  local cert, e2 = data(user, "client-certificate-data", "client-certificate", where)
  if cert == nil then return nil, e2 end
  local key, e3 = data(user, "client-key-data", "client-key", where)
  if key == nil then return nil, e3 end
  if (cert and not key) or (key and not cert) then
    return nil, ("%s: %s has a client certificate or key without the other"):format(src, where)
  end
  opts.cert_pem, opts.key_pem = cert or nil, key or nil
  opts.token = str(user.token)
  if not opts.token and str(user.tokenFile) then
    local t, terr = read(path(user.tokenFile))
    if not t then return nil, ("%s: %s tokenFile %s: %s"):format(src, where, path(user.tokenFile), terr) end
    opts.token = t:gsub("%s+$", "")
  end
  return opts
end

function M.load(path, o)
  o = o or {}
  local read = o.read or default_read
  local text, err = read(path)
  if not text then return nil, ("kubeconfig %s: %s"):format(path, err) end
  local p = {}
  for k, v in pairs(o) do p[k] = v end
  p.filename = path
  return M.parse(text, p)
end

return M
