-- join phase "control-plane-prepare": Prepare the machine for serving a control plane.
-- Every child is a no-op for a worker.
local lazy = require "framework.lazy"
local cp = lazy.require "flows.join.control_plane"
local nodeview = lazy.require "node.view"

local function only_cp(f)
  return function(ctx)
    if not nodeview.is_control_plane(ctx) then return end
    cp.require_endpoint(ctx)
    f(ctx)
  end
end

return {
  name = "control-plane-prepare",
  flags = { "apiserver-advertise-address", "apiserver-bind-port", "certificate-key", "config", "control-plane", "discovery-file", "discovery-token", "discovery-token-ca-cert-hash", "discovery-token-unsafe-skip-ca-verification", "dry-run", "node-name", "patches", "tls-bootstrap-token", "token" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Prepare the machine for serving a control plane",
  provides = { "pki", "kubeconfig", "control-plane-manifests" },
  children = {
    { name = "download-certs", desc = "Download certificates shared among control-plane nodes from the kubeadm-certs Secret",
      run = only_cp(cp.download_certs) },
    { name = "certs", desc = "Generate the certificates for the new control plane components", run = only_cp(cp.certs),
      data = { "pki_join" } },
    { name = "kubeconfig", desc = "Generate the kubeconfig for the new control plane components", run = only_cp(cp.kubeconfigs) },
    { name = "control-plane", desc = "Generate the manifests for the new control plane components", run = only_cp(cp.manifests) },
  },
}
