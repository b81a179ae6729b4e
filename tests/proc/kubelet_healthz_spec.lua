-- The kubelet health check of init's wait-control-plane and join's kubelet-wait-bootstrap
-- (kubelet/healthz.lua): where it looks (the written config.yaml's healthzBindAddress and
-- healthzPort, as kubeadm's WaitForKubelet), what passes (HTTP 200 from that endpoint, probed by the
-- systemd runtime too: a unit systemd calls active may not serve yet), port 0 skipping the check,
-- and the timeout's error naming the URL.
local h = require "helpers"
local healthz = require "kubelet.healthz"
local systemd = require "runtime.systemd"
local log = require "framework.log"
local uv = require "luv"
local core = require "moonadm.core"
local wait_stopped = require "node.wait_stopped"

local function ctx_with(files)
  return { root = "/", read = function(_, p) return files[p] end }
end
local function secs(s) return ("%.1fs"):format(s) end

describe("kubelet healthz", function()
  it("looks where the written KubeletConfiguration says, 127.0.0.1:10248 without one", function()
    assert.same({ "127.0.0.1", 10248 }, { healthz.endpoint(ctx_with {}) })
    local c = ctx_with { ["/var/lib/kubelet/config.yaml"] =
      "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nhealthzBindAddress: 192.0.2.7\nhealthzPort: 10999\n" }
    assert.same({ "192.0.2.7", 10999 }, { healthz.endpoint(c) })
    assert.equal("http://[2001:db8::1]:10248/healthz", healthz.url("2001:db8::1", 10248))
  end)

  it("a probe passes on 200 only; the systemd runtime probes the endpoint, not the unit", function()
    h.canned_http('{ { status = 200, body = "ok" } }', function(_, port)
      local ok, why = healthz.probe("127.0.0.1", port, 10000) -- a loaded machine may be slow to schedule the server
      assert(ok, why)
      assert.is_true(systemd.kubelet_healthy({ root = "/" }, "127.0.0.1", port))
      -- under another --root the host's kubelet is not this node's
      assert.is_false(systemd.kubelet_healthy({ root = "/tmp/x" }, "127.0.0.1", port))
    end)
    h.canned_http('{ { status = 500, body = "[-]ping failed" } }', function(_, port)
      assert.is_false(healthz.probe("127.0.0.1", port, 10000))
    end)
    local closed
    h.canned_http('{ { status = 200, body = "ok" } }', function(_, port) closed = port end)
    assert.is_false(healthz.probe("127.0.0.1", closed))
  end)

  it("waits until a probe passes, skips at port 0, and times out naming the URL", function()
    local printed, out = {}, log.out
    log.out = { write = function(_, ...) for _, s in ipairs { ... } do printed[#printed + 1] = s end end, flush = function() end }
    local n = 0
    local rt = { kubelet_healthy = function(_, host, port)
      assert.equal("127.0.0.1", host)
      assert.equal(10248, port)
      n = n + 1
      return n >= 3
    end }
    healthz.wait(ctx_with {}, rt, 5, secs)
    assert.equal(3, n)
    local zero = ctx_with { ["/var/lib/kubelet/config.yaml"] = "kind: KubeletConfiguration\nhealthzPort: 0\n" }
    healthz.wait(zero, { kubelet_healthy = function() error("probed at port 0") end }, 5, secs)
    local ok, err = pcall(healthz.wait, ctx_with {}, { kubelet_healthy = function() return false end }, 0.3, secs)
    log.out = out
    local text = table.concat(printed)
    assert.matches("[kubelet-check] Waiting for a healthy kubelet at http://127.0.0.1:10248/healthz. This can take up to 5.0s", text, 1, true)
    assert.matches("[kubelet-check] Skipping the kubelet health check because the healthz port is set to 0", text, 1, true)
    assert.matches("[kubelet-check] The kubelet is not healthy after", text, 1, true)
    assert.is_false(ok)
    assert.matches("failed while waiting for the kubelet to start: The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz'", err, 1, true)
  end)

  it("a probe's deadline counts from the probe, not from the event loop's last run", function()
    -- libuv caches its clock per loop iteration: without updating it, a probe seconds after the last
    -- uv.run found its 1 s timer already due and read a live kubelet (or a live port of reset's
    -- wait) as down
    h.canned_http('{ { status = 200, body = "ok" } }', function(_, port)
      uv.run("nowait")
      core.sleep(1.5)
      local ok, why = healthz.probe("127.0.0.1", port, 1000)
      assert(ok, why)
      core.sleep(1.5)
      assert.is_true(wait_stopped.port_answers("127.0.0.1", port, 1000))
    end)
  end)
end)
