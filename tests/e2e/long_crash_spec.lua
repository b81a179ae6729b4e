-- The whole crash sweep (make test-long): every mutation point of init, worker join, control-plane
-- join in both KEP-4471 orders, upgrade apply and reset, each killed there and run again (--resume;
-- reset: again), and the node must converge (crash_common.lua says what that means); then 53 kills
-- at random moments (init 35, control-plane join in the old order 10, worker join 8; seeded from the
-- commit, printed). Five labs in parallel, one worker process each (crash_common.lua run as a
-- script), sharing the work through claims (the first worker to claim a point tries it):
--   sw1, sw4, sw5 (1 control plane, stopped, + s1): init, upgrade apply on s1's one-node cluster,
--       kills of init
--   sw2 (2 control planes behind the LB + s1): control-plane join (new order), reset of it, worker join
--   sw3 (the same, ControlPlaneKubeletLocalMode=false): control-plane join (old order), then kills
--       of it and of a worker join
-- Prints each point as it converges or not, then per flow: points, converged, failed, time.
-- MOONADM_SWEEP_FLOWS=init,reset limits it to those flows; MOONADM_SWEEP_LOGDIR keeps the logs.
local crash = require "crash_common"

local ONE = { { flow = "init" }, { flow = "upgrade" }, { flow = "init", kills = 35, seed = 1 } }
local GROUPS = {
  { lab = "sw1", kind = "one", jobs = ONE },
  { lab = "sw2", kind = "ha", jobs = { { flow = "join" }, { flow = "reset" }, { flow = "worker" } } },
  { lab = "sw3", kind = "old", jobs = { { flow = "join_old" }, { flow = "worker", kills = 8, seed = 4 },
    { flow = "join_old", kills = 10, seed = 3 } } },
  { lab = "sw4", kind = "one", jobs = ONE },
  { lab = "sw5", kind = "one", jobs = ONE },
}

local function only(groups)
  local want = os.getenv("MOONADM_SWEEP_FLOWS")
  if not want or want == "" then return groups end
  local set = {}
  for f in want:gmatch("[^,%s]+") do set[f] = true end
  local out = {}
  for _, g in ipairs(groups) do
    local jobs = {}
    for _, j in ipairs(g.jobs) do if set[j.flow] then jobs[#jobs + 1] = j end end
    if #jobs > 0 then out[#out + 1] = { lab = g.lab, kind = g.kind, jobs = jobs } end
  end
  return out
end

describe("the whole crash sweep: every mutation point of every flow, --resume converges", function()
  it("converges at every point (init, worker join, control-plane join in both orders, upgrade apply, reset) and after kills at random moments", function()
    assert(crash.have_hooks(), "bin/moonadm-hooks is missing: make test-hooks")
    -- the kill moments: seeded from the commit (crash.seed) plus each job's offset, printed
    local seed, from = crash.seed()
    print(("\n[long_crash_spec] seed %d (%s); MOONADM_CRASH_SEED=%d replays these kill moments"):format(seed, from, seed))
    local groups = only(GROUPS)
    for _, g in ipairs(groups) do
      local jobs = {}
      for _, j in ipairs(g.jobs) do
        jobs[#jobs + 1] = { flow = j.flow, kills = j.kills, seed = j.kills and seed + j.seed or nil }
      end
      g.jobs = jobs
    end
    local results, secs = crash.parallel("long_crash_spec", groups)
    -- one line per flow (its points or its kills), summed over the workers that shared it
    local rows, order = {}, {}
    for _, r in ipairs(results) do
      local key = r.flow .. (r.what == "kills" and " kills" or "")
      local row = rows[key]
      if not row then
        row = { key = key, tried = 0, failed = 0, ended = 0, secs = 0, labs = {}, failures = {} }
        rows[key] = row
        order[#order + 1] = key
      end
      row.tried, row.failed = row.tried + (r.tried or 0), row.failed + (r.failed or 0)
      row.ended = row.ended + (r.ended or 0)
      row.secs = math.max(row.secs, r.secs or 0)
      row.counts = row.counts or r.counts
      row.labs[#row.labs + 1] = r.lab
      for _, f in ipairs(r.failures or {}) do row.failures[#row.failures + 1] = f end
    end
    local failures, total, bad = {}, 0, 0
    print("\n[long_crash_spec] flow                tried  converged  failed  time (longest worker)")
    for _, key in ipairs(order) do
      local r = rows[key]
      print(("[long_crash_spec] %-18s %6d %10d %7d %6.1fm  (labs %s; %s)"):format(key, r.tried, r.tried - r.failed, r.failed,
        r.secs / 60, table.concat(r.labs, ","), r.counts and ("%d writes, %d API, %d etcd"):format(r.counts.write, r.counts.api,
        r.counts.etcd) or "-"))
      total, bad = total + r.tried, bad + r.failed
      for _, f in ipairs(r.failures) do failures[#failures + 1] = f end
    end
    print(("[long_crash_spec] all: %d tried, %d converged, %d failed; wall time %.1f min"):format(total, total - bad, bad, secs / 60))
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)
end)
