-- init phase "upload-certs": Upload certificates to kubeadm-certs.
-- Only with --upload-certs (scripts/cluster/certs_upload.lua).
local lazy = require "framework.lazy"
local certs_upload = lazy.require "cluster.certs_upload"

return {
  name = "upload-certs",
  flags = { "certificate-key", "config", "dry-run", "kubeconfig", "skip-certificate-key-print", "upload-certs" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Upload certificates to kubeadm-certs",
  data = { "certificate_key" }, -- ctx.data keys this phase sets for later ones
  requires = { "local-apiserver", "pki" },
  always_run = true, -- a generated certificate key exists only in the run that uploads with it
  run = function(ctx) certs_upload.run(ctx) end,
}
