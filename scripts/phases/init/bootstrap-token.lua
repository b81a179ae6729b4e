-- init phase "bootstrap-token": Generates bootstrap tokens used to join a node to a cluster.
-- Token Secrets, RBAC, cluster-info (scripts/cluster/tokens.lua).
local lazy = require "framework.lazy"
local cluster_tokens = lazy.require "cluster.tokens"

return {
  name = "bootstrap-token",
  flags = { "config", "dry-run", "kubeconfig", "skip-token-print" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Generates bootstrap tokens used to join a node to a cluster",
  requires = { "local-apiserver" },
  provides = { "bootstrap-token" },
  data = { "tokens" }, -- ctx.data keys this phase sets for later ones
  run = function(ctx) cluster_tokens.run(ctx) end,
}
