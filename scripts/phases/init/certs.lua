-- init phase "certs": Certificate generation.
-- The parent's prepare plans every sub-phase the runner selected (reading and checking the whole
-- tree, so a bad tree fails before any file is written: the first sub-phase reports it) and
-- generates all the keys they need at once, in parallel (pki/tree.lua); each sub-phase then
-- re-checks its own certificate on disk and writes it.
local lazy = require "framework.lazy"
local certlist = lazy.require "pki.certlist"
local tree = lazy.require "pki.tree"

-- The selected sub-phases' certificates, in the tree's order.
local function prepare(ctx, selected)
  local names = {}
  for _, c in ipairs(certlist.list) do
    if selected[c.name] then names[#names + 1] = c.name end
  end
  tree.prepare(ctx, names)
end

local function leaf(name, desc)
  return { name = name, desc = desc, run = function(ctx) tree.write(ctx, name) end }
end

return {
  name = "certs",
  flags = { "apiserver-advertise-address", "apiserver-cert-extra-sans", "cert-dir", "config", "control-plane-endpoint", "dry-run", "kubernetes-version", "service-cidr", "service-dns-domain" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Certificate generation",
  provides = { "pki" },
  prepare = prepare,
  children = {
    leaf("ca", "Generate the self-signed Kubernetes CA to provision identities for other Kubernetes components"),
    leaf("apiserver", "Generate the certificate for serving the Kubernetes API"),
    leaf("apiserver-kubelet-client", "Generate the certificate for the API server to connect to kubelet"),
    leaf("front-proxy-ca", "Generate the self-signed CA to provision identities for front proxy"),
    leaf("front-proxy-client", "Generate the certificate for the front proxy client"),
    leaf("etcd-ca", "Generate the self-signed CA to provision identities for etcd"),
    leaf("etcd-server", "Generate the certificate for serving etcd"),
    leaf("etcd-peer", "Generate the certificate for etcd nodes to communicate with each other"),
    leaf("etcd-healthcheck-client", "Generate the certificate for liveness probes to healthcheck etcd"),
    leaf("apiserver-etcd-client", "Generate the certificate the apiserver uses to access etcd"),
    leaf("sa", "Generate a private key for signing service account tokens along with its public key"),
  },
}
