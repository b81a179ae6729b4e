-- init phase "upload-certs": Upload certificates to kubeadm-certs.
-- Its body lands with the init issue; until then it fails with exit code 3, never silently.
local phase = require "phase"

return {
  name = "upload-certs",
  desc = "Upload certificates to kubeadm-certs",
  requires = { "local-apiserver", "pki" },
  run = phase.todo("upload-certs"),
}
