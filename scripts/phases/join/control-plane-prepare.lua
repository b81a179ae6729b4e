-- join phase "control-plane-prepare": Prepare the machine for serving a control plane.
-- Every child is a no-op for a worker.
local lazy = require "framework.lazy"
local cp = lazy.require "flows.join.control_plane"
local nodeview = lazy.require "node.view"

-- By name: cp.download_certs read here would load flows.join.control_plane (and the cluster and
-- PKI modules under it) whenever this table is read, as `moonadm phases join` does.
local function only_cp(step)
  return function(ctx)
    if not nodeview.is_control_plane(ctx) then return end
    cp.require_endpoint(ctx)
    cp[step](ctx)
  end
end

return {
  name = "control-plane-prepare",
  flags = { "apiserver-advertise-address", "apiserver-bind-port", "certificate-key", "config", "control-plane", "discovery-file", "discovery-token", "discovery-token-ca-cert-hash", "discovery-token-unsafe-skip-ca-verification", "dry-run", "node-name", "patches", "tls-bootstrap-token", "token" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Prepare the machine for serving a control plane",
  provides = { "pki", "kubeconfig", "control-plane-manifests" },
  children = {
    { name = "download-certs", desc = "Download certificates shared among control-plane nodes from the kubeadm-certs Secret",
      run = only_cp("download_certs") },
    { name = "certs", desc = "Generate the certificates for the new control plane components", run = only_cp("certs"),
      data = { "pki_join" } },
    { name = "kubeconfig", desc = "Generate the kubeconfig for the new control plane components", run = only_cp("kubeconfigs") },
    { name = "control-plane", desc = "Generate the manifests for the new control plane components", run = only_cp("manifests") },
  },
}
