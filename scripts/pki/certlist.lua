-- kubeadm's certificate inventory (cmd/kubeadm/app/phases/certs/certlist.go) as data: one row per
-- certificate, in GetDefaultCertList's order, then the service-account key pair. A row:
--   name      the UX name (`init phase certs <name>`, `certs renew <name>`, check-expiration)
--   base      file base name under certificatesDir (`<base>.crt`, `<base>.key`)
--   ca        the name of the signing CA (nil for CAs)
--   is_ca     a self-signed CA
--   cn, o     subject (cn may be a function of the environment E: the node name)
--   ext       extended key usages (binding names)
--   sans      function(E) -> dns, ips (nil: no SANs; CAs get DNS = CN)
--   etcd      belongs to the local-etcd set (dropped with external etcd)
--   long      kubeadm's long name ("certificate for serving the Kubernetes API")
local altnames = require "pki.altnames"
local releases = require "config.releases"

local M = {}

local function node(E) return E.node_name end

M.list = {
  { name = "ca", base = "ca", is_ca = true, cn = "kubernetes",
    long = "self-signed Kubernetes CA to provision identities for other Kubernetes components" },
  { name = "apiserver", base = "apiserver", ca = "ca", cn = "kube-apiserver", ext = { "server_auth" },
    sans = altnames.apiserver, long = "certificate for serving the Kubernetes API" },
  { name = "apiserver-kubelet-client", base = "apiserver-kubelet-client", ca = "ca",
    cn = "kube-apiserver-kubelet-client", o = { "kubeadm:cluster-admins" }, o_minor = "kubelet_client_admins",
    ext = { "client_auth" },
    long = "certificate for the API server to connect to kubelet" },
  { name = "front-proxy-ca", base = "front-proxy-ca", is_ca = true, cn = "front-proxy-ca",
    long = "self-signed CA to provision identities for front proxy" },
  { name = "front-proxy-client", base = "front-proxy-client", ca = "front-proxy-ca", cn = "front-proxy-client",
    ext = { "client_auth" }, long = "certificate for the front proxy client" },
  { name = "etcd-ca", base = "etcd/ca", is_ca = true, cn = "etcd-ca", etcd = true,
    long = "self-signed CA to provision identities for etcd" },
  { name = "etcd-server", base = "etcd/server", ca = "etcd-ca", cn = node, ext = { "server_auth", "client_auth" },
    sans = altnames.etcd_server, etcd = true, long = "certificate for serving etcd" },
  { name = "etcd-peer", base = "etcd/peer", ca = "etcd-ca", cn = node, ext = { "server_auth", "client_auth" },
    sans = altnames.etcd_peer, etcd = true, long = "certificate for etcd nodes to communicate with each other" },
  { name = "etcd-healthcheck-client", base = "etcd/healthcheck-client", ca = "etcd-ca",
    cn = "kube-etcd-healthcheck-client", ext = { "client_auth" }, etcd = true,
    long = "certificate for liveness probes to healthcheck etcd" },
  { name = "apiserver-etcd-client", base = "apiserver-etcd-client", ca = "etcd-ca",
    cn = "kube-apiserver-etcd-client", ext = { "client_auth" }, etcd = true,
    long = "certificate the apiserver uses to access etcd" },
  { name = "sa", base = "sa", sa = true,
    long = "private key for signing service account tokens along with its public key" },
}

M.by_name = {}
for _, c in ipairs(M.list) do M.by_name[c.name] = c end

M.ca_names = { "ca", "front-proxy-ca", "etcd-ca" }

-- Is etcd external (no etcd.local) in this ClusterConfiguration?
function M.external_etcd(cluster)
  local e = cluster.etcd
  return e ~= nil and e.external ~= nil and e["local"] == nil
end

-- The certificates of a cluster, in order: without the etcd set when etcd is external.
-- opts.sa: include the sa pair; opts.cas: include CAs (default both true).
function M.for_cluster(cluster, opts)
  opts = opts or {}
  local ext = M.external_etcd(cluster)
  local out = {}
  for _, c in ipairs(M.list) do
    if not (ext and c.etcd) and not (c.sa and opts.sa == false) and not (c.is_ca and opts.cas == false) then
      out[#out + 1] = c
    end
  end
  return out
end

-- A row's organizations; o_minor names the release knob that decides them (kubeadm v1.36 took
-- apiserver-kubelet-client out of kubeadm:cluster-admins and bound it to system:kubelet-api-admin).
function M.org(c, E)
  if c.o_minor and not releases.must(E.cluster and E.cluster.kubernetesVersion)[c.o_minor] then return nil end
  return c.o
end

function M.cn(c, E)
  if type(c.cn) == "function" then return c.cn(E) end
  return c.cn
end

return M
