-- kubeconfig files as kubeadm writes them (phases/kubeconfig, util/kubeconfig): the inventory,
-- building one with an embedded client certificate, client-go's serialization, and the re-run
-- validation (wrong CA: error; other server: warning).
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"
local encoding = require "moonadm.encoding"
local certlist = require "pki.certlist"
local nodeview = require "node.view"
local tree = require "pki.tree"
local log = require "framework.log"
local kubeconfig = require "kube.kubeconfig"

local M = {}

M.default_dir = "/etc/kubernetes"

-- name, file, client name (= user = CN), organizations, which URL, renewable (check-expiration rows).
M.list = {
  { name = "admin", file = "admin.conf", user = function() return "kubernetes-admin" end,
    o = { "kubeadm:cluster-admins" }, url = "cpe", renew = true,
    long = "certificate embedded in the kubeconfig file for the admin to use and for kubeadm itself" },
  { name = "super-admin", file = "super-admin.conf", user = function() return "kubernetes-super-admin" end,
    o = { "system:masters" }, url = "cpe", renew = true,
    long = "certificate embedded in the kubeconfig file for the super-admin" },
  { name = "kubelet", file = "kubelet.conf", user = function(E) return "system:node:" .. E.node_name end,
    o = { "system:nodes" }, url = "kubelet",
    long = "certificate embedded in the kubeconfig file for the kubelet" },
  { name = "controller-manager", file = "controller-manager.conf",
    user = function() return "system:kube-controller-manager" end, url = "local", renew = true,
    long = "certificate embedded in the kubeconfig file for the controller manager to use" },
  { name = "scheduler", file = "scheduler.conf", user = function() return "system:kube-scheduler" end,
    url = "local", renew = true,
    long = "certificate embedded in the kubeconfig file for the scheduler manager to use" },
}
M.by_name = {}
for _, k in ipairs(M.list) do M.by_name[k.name] = k; M.by_name[k.file] = k end

function M.cluster_name(E) return E.cluster.clusterName or "kubernetes" end

-- The server URL of a kubeconfig row.
function M.server(E, k)
  if k.url == "local" or (k.url == "kubelet" and E.ctx:gate("ControlPlaneKubeletLocalMode")) then
    return nodeview.local_url(E.ctx)
  end
  return nodeview.cpe_url(E.ctx)
end

-- client-go's clientcmd.Write of a Config with one cluster, context and user.
function M.encode(t)
  local cluster = { server = t.server }
  if t.ca_pem then cluster["certificate-authority-data"] = encoding.base64_encode(t.ca_pem) end
  local user = {}
  if t.cert_pem then user["client-certificate-data"] = encoding.base64_encode(t.cert_pem) end
  if t.key_pem then user["client-key-data"] = encoding.base64_encode(t.key_pem) end
  if t.token then user.token = t.token end
  local ctxname = t.user .. "@" .. t.cluster
  return yaml.encode {
    apiVersion = "v1",
    clusters = { { cluster = cluster, name = t.cluster } },
    contexts = { { context = { cluster = t.cluster, user = t.user }, name = ctxname } },
    ["current-context"] = ctxname,
    kind = "Config",
    users = { { name = t.user, user = user } },
  }
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- kubeadm's validateKubeConfig: the CA must be the current one (else error), a different server
-- warns. Returns true or raises.
function M.validate(E, path, text, ca_pem, server)
  local kc, err = kubeconfig.current(text, path)
  if not kc then error(("failed to load kubeconfig file %s: %s"):format(path, err), 0) end
  local cluster = kc.cluster.cluster
  local data = cluster["certificate-authority-data"]
  local have
  if type(data) == "string" and data ~= "" then
    local derr
    have, derr = encoding.base64_decode(data)
    if not have then error(("kubeconfig file %s: certificate-authority-data: %s"):format(path, derr), 0) end
  elseif type(cluster["certificate-authority"]) == "string" then
    have = E.ctx:read(cluster["certificate-authority"])
  end
  if not have or trim(have) ~= trim(ca_pem) then
    error(("a kubeconfig file %q exists already but has got the wrong CA cert"):format(path), 0)
  end
  if server and cluster.server ~= server and not E.quiet then
    log.warn("a kubeconfig file %q exists already but has an unexpected API Server URL: expected: %s, got: %s",
      path, server, tostring(cluster.server))
  end
  return true
end

function M.dir(ctx)
  local d = ctx.flags and ctx.flags["kubeconfig-dir"]
  return ((d and d ~= "") and d or M.default_dir):gsub("/+$", "")
end

-- The CA for kubeconfigs: {cert, key?, pem} | raises when ca.crt cannot be used.
function M.load_ca(E)
  local ca = tree.load_ca(E, certlist.by_name.ca)
  if ca.state == "missing" then
    error(("couldn't create a kubeconfig; the CA files couldn't be loaded: %s does not exist")
      :format(tree.path(E, "ca", "crt")), 0)
  end
  ca.pem = assert(ca.cert:pem())
  return ca
end

-- What to do for a kubeconfig row: "create" | "reuse" | "external" (raises when invalid).
function M.plan(E, k, kdir, ca)
  local path = kdir .. "/" .. k.file
  local text = E.ctx:read(path)
  local server = M.server(E, k)
  if text then
    M.validate(E, path, text, ca.pem, server)
    return ca.state == "ok" and "reuse" or "external"
  end
  if ca.state ~= "ok" then
    error(("external CA mode: %s is missing and the CA key %s is not there to sign its client certificate")
      :format(path, tree.path(E, "ca", "key")), 0)
  end
  return "create"
end

-- The client certificate spec: NotBefore falls back to the CA's (kubeadm sets none),
-- NotAfter = start + certificateValidityPeriod.
function M.client_spec(E, user, o)
  return { cn = user, o = o, ext_usages = { "client_auth" }, not_after = E.start + E.leaf_validity }
end

-- The kubeconfig text of a row signed by ca with key.
function M.build(E, k, ca, key)
  local user = k.user(E)
  local cert, err = pki.sign_cert(key, M.client_spec(E, user, k.o), ca.cert, ca.key)
  if not cert then error(("failure while creating the client certificate of %s: %s"):format(k.file, err), 0) end
  return M.encode { server = M.server(E, k), cluster = M.cluster_name(E), user = user, ca_pem = ca.pem,
    cert_pem = assert(cert:pem()), key_pem = assert(key:pem()) }
end

-- Runs one row: validate or write.
function M.apply(E, k, kdir)
  local ca = M.load_ca(E)
  local path = kdir .. "/" .. k.file
  local act = M.plan(E, k, kdir, ca)
  if act == "reuse" then
    log.info('[kubeconfig] Using existing kubeconfig file: "%s"', path)
  elseif act == "external" then
    log.info("[kubeconfig] External CA mode: Using user provided %s", k.file)
  else
    local key = tree.take_key(E, "kubeconfig/" .. k.name)
    local text = M.build(E, k, ca, key)
    log.info('[kubeconfig] Writing "%s" kubeconfig file', k.file)
    E.ctx:write(path, text, tonumber("600", 8))
  end
end

-- ---- entry points: init's kubeconfig phase and a control-plane join ----

-- Plans the kubeconfig files named (admin, super-admin, kubelet, controller-manager, scheduler) and
-- generates their client keys at once, before any file is written.
function M.prepare(ctx, names)
  local E = tree.env(ctx)
  E.quiet = true -- warnings are the writes' to print
  local kdir = M.dir(ctx)
  log.info('[kubeconfig] Using kubeconfig folder "%s"', kdir)
  local ca = M.load_ca(E)
  local actions = {}
  for _, name in ipairs(names) do
    local k = M.by_name[name] or error("no kubeconfig " .. name, 0)
    actions[#actions + 1] = { entry = k, action = M.plan(E, k, kdir, ca) }
  end
  tree.pregenerate(E, actions, "kubeconfig/")
end

function M.write(ctx, name)
  M.apply(tree.env(ctx), M.by_name[name] or error("no kubeconfig " .. name, 0), M.dir(ctx))
end

return M
