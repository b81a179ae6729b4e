-- upgrade apply phase "bootstrap-token": Configures bootstrap token and cluster-info RBAC rules.
-- The same RBAC init creates (scripts/cluster/tokens.lua), re-applied; no token is created.
local lazy = require "framework.lazy"
local capi = lazy.require "cluster.api"
local admin = lazy.require "cluster.admin"
local cluster_tokens = lazy.require "cluster.tokens"

local function run(ctx)
  local c = admin.client(ctx)
  local r = cluster_tokens.apply_node_rbac(ctx, c)
  for _, o in ipairs(r.clusterinfo) do capi.apply(ctx, c, o) end
end

return {
  name = "bootstrap-token",
  flags = { "config", "dry-run", "kubeconfig" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Configures bootstrap token and cluster-info RBAC rules",
  run = run,
}
