-- Crash anywhere, converge with --resume: the regression points (crash_common.REGRESSIONS, named by
-- what they do) plus a sample chosen from the commit, on an own lab (dev14c: 2 control planes and
-- the spare s1). The seed is the first 8 hex digits of `git rev-parse HEAD` (MOONADM_CRASH_SEED=N
-- overrides it; tests/run.sh prints it), so `make test` here tries exactly what CI tries for this
-- commit, and another commit tries other points. The whole sweep is long_crash_spec.lua (make
-- test-long). Sample sizes: MOONADM_CRASH_SAMPLE (default 2 for init; 1 for the control-plane and
-- worker joins; 1 of upgrade apply or reset, which one by the seed's parity): ~4 minutes.
-- MOONADM_CRASH_POINTS="init=write:5;join=etcd:2" replays just those points.
local h = require "helpers"
local crash = require "crash_common"

local SEED, FROM = crash.seed()
local SAMPLE = tonumber(os.getenv("MOONADM_CRASH_SAMPLE") or "") or 2

-- The points of one flow: the named ones (MOONADM_CRASH_POINTS), or the regressions and the sample.
local function points_for(flow, ctx, sample, seed)
  local pts, named = crash.points(ctx.counts, sample, seed, flow)
  if named then return pts end
  local seen, out = {}, {}
  for _, p in ipairs(crash.regression_points(flow, ctx.lines)) do
    seen[p[1] .. p[2]] = true
    out[#out + 1] = p
  end
  for _, p in ipairs(pts) do if not seen[p[1] .. p[2]] then out[#out + 1] = p end end
  print(("[crash_spec] %s: %d writes, %d API, %d etcd; trying %s (seed %d)"):format(flow, ctx.counts.write, ctx.counts.api,
    ctx.counts.etcd, crash.fmt_points(out), seed))
  return out
end

describe("crash anywhere and --resume (own lab dev14c; regression points and a sample from the commit)", function()
  local st
  setup(function()
    assert(crash.have_hooks(), "bin/moonadm-hooks is missing: make test-hooks")
    print(("\n[crash_spec] seed %d (%s): MOONADM_CRASH_SEED=%d make test reproduces this sample"):format(SEED, FROM, SEED))
    st = crash.up()
  end)
  teardown(function() crash.down() end)

  it("init on a one-node cluster: killed after a sampled mutation, --resume converges", function()
    local s1 = crash.node(st, "s1")
    local ctx = crash.FLOWS.init.setup(st)
    ctx.prepare(0)
    local code, counts, out, lines = crash.count(st, ctx.argv, { "-v", "10" })
    assert.equal(0, code, out)
    -- the clean run at -v 10: no secret in its output or in the kubelet stand-in's log
    local leaks = crash.secret_leaks({ init = out, ["s1 kubelet log"] = h.read(s1.root .. "/var/log/moonadm-kubelet.log") or "" },
      s1.root, "crash1.0123456789crash1", st.certificate_key)
    assert.same({}, leaks)
    assert.is_nil(ctx.check(0))
    ctx.after_count()
    ctx.counts, ctx.lines = counts, lines
    local failures = crash.sweep("crash_spec", "init", st, ctx, points_for("init", ctx, SAMPLE, SEED))
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)

  it("control-plane join: killed after a sampled mutation, --resume converges with exactly 3 members", function()
    local cp1, s1 = st.nodes[1], crash.node(st, "s1")
    local ctx = crash.FLOWS.join.setup(st)
    ctx.prepare(0)
    local code, counts, out, lines = crash.count(st, ctx.argv, { "-v", "10" })
    assert.equal(0, code, out)
    local leaks = crash.secret_leaks({ join = out, ["s1 kubelet log"] = h.read(s1.root .. "/var/log/moonadm-kubelet.log") or "",
      ["cp1 kubelet log"] = h.read(cp1.root .. "/var/log/moonadm-kubelet.log") or "" }, s1.root, st.token, st.certificate_key)
    assert.same({}, leaks)
    assert.is_nil(ctx.check(0))
    ctx.counts, ctx.lines = counts, lines
    local failures = crash.sweep("crash_spec", "join", st, ctx, points_for("join", ctx, math.max(1, SAMPLE - 1), SEED + 1))
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)

  it("worker join: killed after a sampled mutation, --resume converges", function()
    local ctx = crash.setup_flow(st, "worker")
    local failures = crash.sweep("crash_spec", "worker", st, ctx, points_for("worker", ctx, math.max(1, SAMPLE - 1), SEED + 2))
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)

  -- one of the two slower flows per commit, by the seed's parity (both every time in make test-long)
  local extra = SEED % 2 == 0 and "upgrade" or "reset"
  it(extra .. " (chosen by the seed): killed after a sampled mutation, converges", function()
    local ctx = crash.setup_flow(st, extra)
    local failures = crash.sweep("crash_spec", extra, st, ctx, points_for(extra, ctx, 1, SEED + 3))
    crash.clean(st)
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)
end)
