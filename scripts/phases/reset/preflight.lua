-- reset phase "preflight": kubeadm's y/N confirmation unless --force (or ResetConfiguration force:
-- true), refused outright when stdin is not a terminal (scripts/flows/reset/prompt.lua), then the root
-- check (kubeadm's RunRootCheckOnly: IsPrivilegedUser, skipped under a --root other than /).
local lazy = require "framework.lazy"
local data = lazy.require "flows.reset.data"
local log = require "framework.log"
local preflight = lazy.require "preflight.checks"
local prompt = lazy.require "flows.reset.prompt"

return {
  name = "preflight",
  flags = { "dry-run", "force", "ignore-preflight-errors" }, -- kubeadm's flags of this phase subcommand (help shows these)
  desc = "Run reset pre-flight checks",
  always_run = true,
  data = { "reset" }, -- run alone (`reset phase preflight`), it prepares the reset's data itself
  run = function(ctx)
    local r = data.get(ctx)
    if not r.force then prompt.confirm() end
    log.info("[preflight] Running pre-flight checks")
    preflight.run(ctx, { preflight.is_privileged_user })
  end,
}
