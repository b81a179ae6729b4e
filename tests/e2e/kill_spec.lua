-- Kills at any moment (make test): `init` and a worker `join` SIGKILLed at a random wall-clock
-- moment of their run (not only after a hooked mutation), then --resume: right after the kill every
-- file is absent or complete and has its final mode; after --resume the node has converged (no temp
-- file left either). The moments come from the commit's seed (crash_common.seed: the first 8 hex
-- digits of HEAD, or MOONADM_CRASH_SEED), printed; long_crash_spec.lua (make test-long) kills 53
-- times. Own lab e2ekl (one control plane and the spare s1), taken down in teardown().
local crash = require "crash_common"

local LAB = "e2ekl"
local SEED, FROM = crash.seed()
local KILLS = tonumber(os.getenv("MOONADM_KILL_SAMPLE") or "") or 2

describe("kill -9 at a random moment, then --resume (own lab e2ekl)", function()
  local st
  setup(function()
    print(("\n[kill_spec] seed %d (%s): MOONADM_CRASH_SEED=%d make test reproduces these moments"):format(SEED, FROM, SEED))
    st = crash.up(LAB, nil, crash.LAB_ARGS.one)
  end)
  teardown(function() crash.down(LAB) end)

  it(("init killed at %d random moments converges with --resume"):format(KILLS), function()
    local ctx = crash.setup_flow(st, "init")
    local failures = crash.kill_sweep("kill_spec", "init", st, ctx, KILLS, SEED, ctx.secs)
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)

  it("a worker join killed at a random moment converges with --resume", function()
    local ctx = crash.setup_flow(st, "worker")
    local failures = crash.kill_sweep("kill_spec", "worker", st, ctx, 1, SEED + 1, ctx.secs)
    crash.clean(st)
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)
end)
