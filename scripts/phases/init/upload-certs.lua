-- init phase "upload-certs": Upload certificates to kubeadm-certs.
-- Only with --upload-certs (scripts/cluster/certs_upload.lua).
local lazy = require "framework.lazy"
local certs_upload = lazy.require "cluster.certs_upload"
local rotation = lazy.require "rotation.stages"

return {
  name = "upload-certs",
  flags = { "certificate-key", "config", "dry-run", "kubeconfig", "skip-certificate-key-print", "upload-certs" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Upload certificates to kubeadm-certs",
  data = { "certificate_key" }, -- ctx.data keys this phase sets for later ones
  requires = { "local-apiserver", "pki" },
  always_run = true, -- a generated certificate key exists only in the run that uploads with it
  run = function(ctx)
    -- a control plane joining with them would not be one of a CA rotation's (moonadm's own check)
    if ctx.flags and ctx.flags["upload-certs"] and not ctx.dry_run then
      rotation.refuse_during(ctx, "uploading the CAs for a control-plane join")
    end
    certs_upload.run(ctx)
  end,
}
