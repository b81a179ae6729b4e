-- reset phase "cleanup-node": scripts/node/cleanup.lua, with the node runtime of this run.
local lazy = require "framework.lazy"
local cleanup = lazy.require "node.cleanup"
local data = lazy.require "flows.reset.data"
local runtime = lazy.require "runtime"

return {
  name = "cleanup-node",
  flags = { "cert-dir", "cleanup-tmp-dir", "cri-socket", "dry-run" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run cleanup node.",
  aliases = { "cleanupnode" },
  run = function(ctx)
    cleanup.run(ctx, data.get(ctx), runtime.for_ctx(ctx), ctx.data.cleanup_opts)
  end,
}
