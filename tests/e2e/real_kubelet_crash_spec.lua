-- Crash and --resume on the real kubelet (issue 46, defect 1): the sample of crash_spec.lua and
-- kill_spec.lua run where the kubelet is a systemd service of the node and the static Pods are
-- containers of its containerd. Once the kubelet has started it holds port 10250 (and the static
-- Pods theirs), which a --resume's preflight must recognise as the node's own, not refuse.
-- Own lab e2erk (10.252.31): cp1, cp2 behind the lab balancer and the spare s1, all real kubelets.
-- Points and moments come from the commit's seed (crash_common.seed), printed; per flow: the
-- regression points, one sampled mutation point, and for init and the worker join the issue's kill
-- just after "[kubelet-check]" is printed; then --resume after a finished run. make test-long runs
-- every point of each flow here too (MOONADM_LONG=1).
local crash = require "crash_common"
local h = require "helpers"

-- (MOONADM_REAL_CRASH_LAB=NAME,SUBNET runs it on another lab, beside a make test using e2erk)
local LAB, SUBNET = (os.getenv("MOONADM_REAL_CRASH_LAB") or "e2erk,10.252.31"):match("^([%w-]+),([%d.]+)$")
local SEED, FROM = crash.seed()
local LONG = os.getenv("MOONADM_LONG") == "1"

local function sample(flow, ctx, n, seed)
  local pts, named = crash.points(ctx.counts, not LONG and n or nil, seed, flow) -- every point under LONG
  if named then return pts end
  local seen, out = {}, {}
  for _, p in ipairs(crash.regression_points(flow, ctx.lines)) do seen[p[1] .. p[2]] = true; out[#out + 1] = p end
  for _, p in ipairs(pts) do if not seen[p[1] .. p[2]] then out[#out + 1] = p end end
  print(("[real_kubelet_crash] %s: %d writes, %d API, %d etcd; trying %s (seed %d)"):format(flow, ctx.counts.write,
    ctx.counts.api, ctx.counts.etcd, crash.fmt_points(out), seed))
  return out
end

-- the issue's reproduction: killed once the kubelet has started (its check begun; the issue killed
-- 3 s after, on a slower machine: here a worker join ends within 2 s of it), then --resume; and
-- --resume of the finished run
local KUBELET_CHECK_DELAY = tonumber(os.getenv("MOONADM_KUBELET_KILL_DELAY") or "") or 0.5
local function kubelet_check_kill(st, ctx)
  local failures = {}
  assert(pcall(ctx.prepare, 0))
  local ok, why, ended = crash.kill_at(st, ctx, KUBELET_CHECK_DELAY, "%[kubelet%-check%]")
  print(("[real_kubelet_crash] killed %.1f s after [kubelet-check]%s: %s"):format(KUBELET_CHECK_DELAY,
    ended and " (the run had ended)" or "", ok and "converged" or "FAILED"))
  if not ok then failures[#failures + 1] = why end
  local argv = { h.bin, table.unpack(ctx.argv) }
  argv[#argv + 1] = "--resume"
  local code, out = crash.exec(st, "s1", argv)
  if code ~= 0 then failures[#failures + 1] = "--resume after a finished run failed:\n" .. out:sub(-2500) end
  local problems = ctx.check(0)
  if problems then failures[#failures + 1] = "after --resume of the finished run: " .. table.concat(problems, "; ") end
  return failures
end

describe("crash and --resume on the real kubelet (own lab " .. LAB .. ")", function()
  local st
  setup(function()
    assert(crash.have_hooks(), "bin/moonadm-hooks is missing: make test-hooks")
    print(("\n[real_kubelet_crash] seed %d (%s): MOONADM_CRASH_SEED=%d make test reproduces this sample"):format(SEED, FROM, SEED))
    st = crash.up(LAB, SUBNET, crash.LAB_ARGS.real)
  end)
  teardown(function() crash.down(LAB) end)

  it("worker join: killed after a sampled mutation and once its kubelet runs, --resume converges", function()
    local ctx = crash.setup_flow(st, "worker")
    local failures = crash.sweep("real_kubelet_crash", "worker", st, ctx, sample("worker", ctx, 1, SEED + 2))
    for _, f in ipairs(kubelet_check_kill(st, ctx)) do failures[#failures + 1] = f end
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)

  it("control-plane join: killed after a sampled mutation, --resume converges with exactly 3 members", function()
    local ctx = crash.setup_flow(st, "join")
    local failures = crash.sweep("real_kubelet_crash", "join", st, ctx, sample("join", ctx, 1, SEED + 1))
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)

  it("reset of a control plane: killed after a sampled mutation, runs again and converges", function()
    local ctx = crash.setup_flow(st, "reset")
    local failures = crash.sweep("real_kubelet_crash", "reset", st, ctx, sample("reset", ctx, 1, SEED + 3))
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)

  it("init of s1's own cluster: killed after a sampled mutation and once its kubelet runs, --resume runs its last phases", function()
    local ctx = crash.setup_flow(st, "init")
    local failures = crash.sweep("real_kubelet_crash", "init", st, ctx, sample("init", ctx, 1, SEED))
    for _, f in ipairs(kubelet_check_kill(st, ctx)) do failures[#failures + 1] = f end
    crash.clean(st, true)
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)
end)
