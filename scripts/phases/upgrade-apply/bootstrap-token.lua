-- upgrade apply phase "bootstrap-token": Configures bootstrap token and cluster-info RBAC rules.
-- The same RBAC init creates (scripts/cluster/tokens.lua), re-applied; no token is created.
local lazy = require "framework.lazy"
local log = require "framework.log"
local capi = lazy.require "cluster.api"
local admin = lazy.require "cluster.admin"
local cluster_tokens = lazy.require "cluster.tokens"

local function run(ctx)
  local c = admin.client(ctx)
  local r = cluster_tokens.rbac_objects()
  for _, group in ipairs { r.get_nodes, r.post_csrs, r.approve, r.rotate, r.clusterinfo } do
    for _, o in ipairs(group) do capi.apply(ctx, c, o) end
  end
  log.info("[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to get nodes")
  log.info("[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials")
  log.info("[bootstrap-token] Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a Node Bootstrap Token")
  log.info("[bootstrap-token] Configured RBAC rules to allow certificate rotation for all node client certificates in the cluster")
end

return {
  name = "bootstrap-token",
  flags = { "config", "dry-run", "kubeconfig" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Configures bootstrap token and cluster-info RBAC rules",
  run = run,
}
