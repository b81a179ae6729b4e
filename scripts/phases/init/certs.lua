-- init phase "certs": Certificate generation.
-- Its body lands with the PKI issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "certs",
  desc = "Certificate generation",
  provides = { "pki" },
  children = {
    { name = "ca", desc = "Generate the self-signed Kubernetes CA to provision identities for other Kubernetes components", run = phase.todo("certs/ca") },
    { name = "apiserver", desc = "Generate the certificate for serving the Kubernetes API", run = phase.todo("certs/apiserver") },
    { name = "apiserver-kubelet-client", desc = "Generate the certificate for the API server to connect to kubelet", run = phase.todo("certs/apiserver-kubelet-client") },
    { name = "front-proxy-ca", desc = "Generate the self-signed CA to provision identities for front proxy", run = phase.todo("certs/front-proxy-ca") },
    { name = "front-proxy-client", desc = "Generate the certificate for the front proxy client", run = phase.todo("certs/front-proxy-client") },
    { name = "etcd-ca", desc = "Generate the self-signed CA to provision identities for etcd", run = phase.todo("certs/etcd-ca") },
    { name = "etcd-server", desc = "Generate the certificate for serving etcd", run = phase.todo("certs/etcd-server") },
    { name = "etcd-peer", desc = "Generate the certificate for etcd nodes to communicate with each other", run = phase.todo("certs/etcd-peer") },
    { name = "etcd-healthcheck-client", desc = "Generate the certificate for liveness probes to healthcheck etcd", run = phase.todo("certs/etcd-healthcheck-client") },
    { name = "apiserver-etcd-client", desc = "Generate the certificate the apiserver uses to access etcd", run = phase.todo("certs/apiserver-etcd-client") },
    { name = "sa", desc = "Generate a private key for signing service account tokens along with its public key", run = phase.todo("certs/sa") },
  },
}
