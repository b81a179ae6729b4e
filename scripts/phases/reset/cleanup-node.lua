-- reset phase "cleanup-node": scripts/reset/cleanup.lua, with the node runtime of this run and what
-- remove-etcd-member found (ctx.data.etcd_removal: the etcd data dir, and whether it may go).
local lazy = require "framework.lazy"
local cleanup = lazy.require "reset.cleanup"
local data = lazy.require "flows.reset.data"
local runtime = lazy.require "runtime"

return {
  name = "cleanup-node",
  flags = { "cert-dir", "cleanup-tmp-dir", "cri-socket", "dry-run" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run cleanup node.",
  aliases = { "cleanupnode" },
  run = function(ctx)
    cleanup.run(ctx, data.get(ctx), runtime.for_ctx(ctx), { etcd = ctx.data.etcd_removal })
  end,
}
