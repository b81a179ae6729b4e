-- join phase "kubelet-start": Write kubelet settings, certificates and (re)start the kubelet.
-- The wait for its TLS bootstrap is kubelet-wait-bootstrap's, in both join orders (flows/join.lua).
local lazy = require "framework.lazy"
local jk = lazy.require "cluster.kubelet_bootstrap"

return {
  name = "kubelet-start",
  flags = { "config", "cri-socket", "discovery-file", "discovery-token", "discovery-token-ca-cert-hash", "discovery-token-unsafe-skip-ca-verification", "dry-run", "node-name", "patches", "tls-bootstrap-token", "token" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Write kubelet settings, certificates and (re)start the kubelet",
  provides = { "kubelet-started" },
  run = function(ctx) jk.start(ctx) end,
}
