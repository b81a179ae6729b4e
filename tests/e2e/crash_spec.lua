-- Crash anywhere, converge with --resume (a sample chosen afresh each run; the full sweep is
-- long_crash_spec.lua under make test-long). Sample size: MOONADM_CRASH_SAMPLE (default 2 for init,
-- 1 for the control-plane join: about 5 minutes with the lab); seed: MOONADM_CRASH_SEED (default:
-- the clock), printed.
local h = require "helpers"
local crash = require "crash_common"

local SEED = tonumber(os.getenv("MOONADM_CRASH_SEED") or "") or os.time()
local SAMPLE = tonumber(os.getenv("MOONADM_CRASH_SAMPLE") or "") or 2

describe("crash anywhere and --resume (own lab dev14c, a sample)", function()
  local st
  setup(function()
    assert(crash.have_hooks(), "bin/moonadm-hooks is missing: make test-hooks")
    st = crash.up()
    print(("\n[crash_spec] seed %d (MOONADM_CRASH_SEED=%d reproduces this sample)"):format(SEED, SEED))
  end)
  teardown(function() crash.down() end)

  it("init on a one-node cluster: killed after a sampled mutation, --resume converges", function()
    local s1 = crash.node(st, "s1")
    local cfg = crash.init_config(st)
    argv = { "init", "--config", cfg, "--upload-certs" }
    crash.clean(st)
    local code, counts, out, lines = crash.count(st, argv, { "-v", "10" })
    assert.equal(0, code, out)
    -- the clean run at -v 10: no secret in its output or in the kubelet stand-in's log
    local leaks = crash.secret_leaks({ init = out, ["s1 kubelet log"] = h.read(s1.root .. "/var/log/moonadm-kubelet.log") or "" },
      s1.root, "crash1.0123456789crash1", st.certificate_key)
    assert.same({}, leaks)
    print(("[crash_spec] init: %d file writes, %d API mutations, %d etcd member changes"):format(counts.write, counts.api, counts.etcd))
    local kubeconfig = s1.root .. "/etc/kubernetes/admin.conf"
    local want_tokens = crash.tokens(st, kubeconfig)
    local points = crash.points(counts, SAMPLE, SEED, "init")
    -- regression: killed right after upload-certs created its owner token (a second token was left)
    points[#points + 1] = os.getenv("MOONADM_CRASH_POINTS") == nil and
      crash.point_of(lines, "^api %d+ POST /api/v1/namespaces/kube%-system/secrets ") or nil
    local failures = crash.sweep("crash_spec", "init", st, argv, points, function()
      return crash.check(st, s1.root, kubeconfig, 1, want_tokens)
    end)
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)

  it("control-plane join: killed after a sampled mutation, --resume converges with exactly 3 members", function()
    local cp1 = st.nodes[1]
    local cfg = crash.join_config(st)
    local argv = { "join", "--config", cfg }
    crash.clean(st)
    local code, counts, out = crash.count(st, argv, { "-v", "10" })
    assert.equal(0, code, out)
    local s1 = crash.node(st, "s1")
    local leaks = crash.secret_leaks({ join = out, ["s1 kubelet log"] = h.read(s1.root .. "/var/log/moonadm-kubelet.log") or "",
      ["cp1 kubelet log"] = h.read(cp1.root .. "/var/log/moonadm-kubelet.log") or "" }, s1.root, st.token, st.certificate_key)
    assert.same({}, leaks)
    print(("[crash_spec] join: %d file writes, %d API mutations, %d etcd member changes"):format(counts.write, counts.api, counts.etcd))
    local kubeconfig = cp1.root .. "/etc/kubernetes/admin.conf"
    local failures = crash.sweep("crash_spec", "join", st, argv, crash.points(counts, math.max(1, SAMPLE - 1), SEED + 1, "join"), function()
      return crash.check(st, crash.node(st, "s1").root, kubeconfig, 3, nil)
    end)
    crash.clean(st)
    assert.equal(0, #failures, table.concat(failures, "\n\n"))
  end)
end)
