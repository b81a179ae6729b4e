-- The phase runner: order, skips, gates, filters, run_if, error wrapping, the requires check.
local runner = require "framework.runner"
local results = require "framework.results"
local phase = require "framework.phase"
local flow_mod = require "framework.flow"
local errors = require "framework.errors"
local h = require "helpers"

local ctx_with = h.ctx_with

-- A flow of recording phases: every run appends its path to `ran`.
local function recording_flow(ran)
  local function rec(path) return function() ran[#ran + 1] = path end end
  local f = flow_mod.new("test")
  f:append { name = "a", run = rec("a"), provides = { "cap-a" } }
  f:append { name = "b", desc = "parent", children = {
    { name = "x", run = rec("b/x") },
    { name = "y", run = rec("b/y"), children = { { name = "z", run = rec("b/y/z") } } },
  } }
  f:append_when(phase.gate("G", true), { name = "g-on", run = rec("g-on") })
  f:append_when(phase.gate("G", false), { name = "g-off", run = rec("g-off") })
  f:append { name = "c", run = rec("c"), requires = { "cap-a" } }
  return f
end

describe("runner", function()
  it("runs phases depth-first in declaration order with / paths", function()
    local ran = {}
    assert.is_true(runner.run(recording_flow(ran), ctx_with { G = true }, {}))
    assert.same({ "a", "b/x", "b/y", "b/y/z", "g-on", "c" }, ran)
  end)

  it("runs the other branch when the gate is off, and reports gated phases", function()
    local ran = {}
    local f = recording_flow(ran)
    assert.is_true(runner.run(f, ctx_with { G = false }, {}))
    assert.same({ "a", "b/x", "b/y", "b/y/z", "g-off", "c" }, ran)
    local nodes = runner.resolve(f, ctx_with { G = false })
    local status = {}
    for _, n in ipairs(nodes) do status[n.path] = n.status end
    assert.equal("gated", status["g-on"])
    assert.equal("run", status["g-off"])
  end)

  it("skipping a parent skips its children; skipping a child keeps the parent", function()
    local ran = {}
    assert.is_true(runner.run(recording_flow(ran), ctx_with { G = true }, { skip = { "b/y" } }))
    assert.same({ "a", "b/x", "g-on", "c" }, ran)
  end)

  it("refuses an unknown phase name in --skip-phases", function()
    local ran = {}
    local ok, err = runner.run(recording_flow(ran), ctx_with {}, { skip = { "nope" } })
    assert.is_nil(ok)
    assert.equal("invalid phase name: nope", err)
    assert.same({}, ran)
  end)

  it("runs only a filtered subtree for `phase X`", function()
    local ran = {}
    assert.is_true(runner.run(recording_flow(ran), ctx_with {}, { filter = "b/y" }))
    assert.same({ "b/y", "b/y/z" }, ran)
  end)

  it("evaluates run_if right before the phase and still visits children", function()
    local ran = {}
    local f = flow_mod.new("t")
    f:append { name = "p", run_if = function() return false end, run = function() ran[#ran + 1] = "p" end,
      children = { { name = "c", run = function() ran[#ran + 1] = "p/c" end } } }
    assert.is_true(runner.run(f, ctx_with {}, {}))
    assert.same({ "p/c" }, ran)
  end)

  it("hands a phase's prepare the children that will run; its error is the first child's", function()
    local got, ran = nil, {}
    local f = flow_mod.new("t")
    f:append { name = "p", prepare = function(_, selected) got = selected end, children = {
      { name = "a", run = function() ran[#ran + 1] = "a" end },
      { name = "b", run = function() ran[#ran + 1] = "b" end } } }
    assert.is_true(runner.run(f, ctx_with {}, { skip = { "p/a" } }))
    assert.same({ b = true }, got)
    assert.same({ "b" }, ran)
    f = flow_mod.new("t")
    f:append { name = "p", prepare = function() error("bad tree", 0) end, children = {
      { name = "a", run = function() ran[#ran + 1] = "never" end } } }
    local ok, err = runner.run(f, ctx_with {}, {})
    assert.is_nil(ok)
    assert.equal("error execution phase p/a: bad tree", err)
  end)

  it("wraps a phase error as kubeadm does and stops there", function()
    local ran = {}
    local f = flow_mod.new("t")
    f:append { name = "one", run = function() error("boom", 0) end }
    f:append { name = "two", run = function() ran[#ran + 1] = "two" end }
    local ok, err = runner.run(f, ctx_with {}, {})
    assert.is_nil(ok)
    assert.equal("error execution phase one: boom", err)
    assert.same({}, ran)
  end)

  it("fails a phase that hands on ctx.data it does not declare (strict), and passes the declared one", function()
    local strict = results.strict
    results.strict = true
    local f = flow_mod.new("t")
    f:append { name = "maker", data = { "made" }, run = function(ctx) ctx.data.made = 1 end }
    f:append { name = "sneaky", run = function(ctx) ctx.data.hidden = 2 end }
    local ctx = ctx_with {}
    ctx.data = {}
    local ok, err = runner.run(f, ctx, {})
    results.strict = strict
    assert.is_nil(ok)
    assert.equal(1, ctx.data.made)
    assert.matches("phase sneaky set ctx.data.hidden without declaring it", errors.message(err), 1, true)
  end)

  it("keeps the exit code a phase's error carries", function()
    local f = flow_mod.new("t")
    f:append { name = "coded", run = function() error(errors.new(3, "a site check failed"), 0) end }
    local ok, err = runner.run(f, ctx_with {}, {})
    assert.is_nil(ok)
    assert.equal(3, errors.code(err))
    assert.equal("error execution phase coded: a site check failed", errors.message(err))
  end)

  it("refuses a flow whose requires come later, before any phase runs, naming both phases", function()
    local ran = {}
    local f = flow_mod.new("t")
    f:append { name = "first", run = function() ran[#ran + 1] = "first" end }
    f:append { name = "needs", requires = { "thing" }, run = function() ran[#ran + 1] = "needs" end }
    f:append { name = "makes", provides = { "thing" }, run = function() ran[#ran + 1] = "makes" end }
    local ok, err = runner.run(f, ctx_with {}, {})
    assert.is_nil(ok)
    assert.matches('refused before any phase ran', err, 1, true)
    assert.matches('"needs" requires "thing", which phase "makes" provides only later', err, 1, true)
    assert.same({}, ran)
  end)

  it("refuses a requirement nobody provides, and accepts one whose provider the user skipped", function()
    local f = flow_mod.new("t")
    f:append { name = "makes", provides = { "thing" }, run = function() end }
    f:append { name = "needs", requires = { "thing", "other" }, run = function() end }
    local ok, err = runner.run(f, ctx_with {}, {})
    assert.is_nil(ok)
    assert.matches('requires "other", which no earlier phase of this flow provides', err, 1, true)
    local g = flow_mod.new("t2")
    g:append { name = "makes", provides = { "thing" }, run = function() error("must not run") end }
    g:append { name = "needs", requires = { "thing" }, run = function() end }
    assert.is_true(runner.run(g, ctx_with {}, { skip = { "makes" } }))
  end)

  it("evaluates requires given as a function of the context (gates)", function()
    local f = flow_mod.new("t")
    f:append { name = "needs", requires = function(ctx) return ctx:gate("G") and { "x" } or {} end, run = function() end }
    assert.is_true(runner.run(f, ctx_with { G = false }, {}))
    assert.is_nil(runner.run(f, ctx_with { G = true }, {}))
  end)

  it("moving a phase with flow:insert is checked, not silent", function()
    local f = flow_mod.new("t")
    f:append { name = "makes", provides = { "thing" }, run = function() end }
    f:append { name = "needs", requires = { "thing" }, run = function() end }
    f:remove("needs")
    f:insert({ name = "needs", requires = { "thing" }, run = function() end }, { before = "makes" })
    local ok, err = runner.run(f, ctx_with {}, {})
    assert.is_nil(ok)
    assert.matches("move \"makes\" before \"needs\"", err, 1, true)
  end)
end)

describe("stock flows", function()
  local function paths(name, gates)
    package.loaded["flows." .. name] = nil
    local nodes = runner.resolve(require("flows." .. name), ctx_with(gates))
    local out = {}
    for _, n in ipairs(nodes) do if n.status == "run" then out[#out + 1] = n.path end end
    return out, nodes
  end

  it("init has kubeadm v1.35's phases in order (and moonadm's own virtual-IP phases, off by default)", function()
    local p = paths("init", {})
    local top = {}
    for _, x in ipairs(p) do if not x:find("/") then top[#top + 1] = x end end
    assert.same({ "preflight", "certs", "kubeconfig", "etcd", "control-plane", "kubelet-start", "control-plane-endpoint",
      "wait-control-plane", "control-plane-endpoint-reader", "upload-config", "upload-certs", "mark-control-plane", "bootstrap-token",
      "kubelet-finalize", "addon", "show-join-command" }, top)
    assert.truthy(require("framework.util").contains(p, "certs/etcd-healthcheck-client"))
  end)

  it("join runs etcd-join and kubelet-wait-bootstrap between kubelet-start and control-plane-join by default", function()
    local p = paths("join", { ControlPlaneKubeletLocalMode = true })
    assert.same({ "preflight", "control-plane-prepare", "control-plane-prepare/download-certs",
      "control-plane-prepare/certs", "control-plane-prepare/kubeconfig", "control-plane-prepare/control-plane",
      "check-etcd", "kubelet-start", "etcd-join", "kubelet-wait-bootstrap", "control-plane-join",
      "control-plane-join/mark-control-plane", "control-plane-endpoint", "wait-control-plane" }, p)
  end)

  it("join runs kubeadm's old order with the gate off", function()
    local p = paths("join", { ControlPlaneKubeletLocalMode = false })
    assert.same({ "preflight", "control-plane-prepare", "control-plane-prepare/download-certs",
      "control-plane-prepare/certs", "control-plane-prepare/kubeconfig", "control-plane-prepare/control-plane",
      "check-etcd", "kubelet-start", "kubelet-wait-bootstrap", "control-plane-join", "control-plane-join/etcd",
      "control-plane-join/mark-control-plane", "control-plane-endpoint", "wait-control-plane" }, p)
  end)

  it("every stock flow passes its own requires check in both gate states", function()
    for _, name in ipairs { "init", "join", "reset", "upgrade-apply", "upgrade-node" } do
      for _, on in ipairs { true, false } do
        local _, nodes = paths(name, { ControlPlaneKubeletLocalMode = on, NodeLocalCRISocket = on })
        assert.is_true(runner.check(nodes, ctx_with { ControlPlaneKubeletLocalMode = on }), name)
      end
    end
  end)

  it("refuses the old join order with a kubelet that talks to its own apiserver, explaining why (KEP-4471)", function()
    local function cp_ctx(gate, kubelet_server)
      return { gates = { ControlPlaneKubeletLocalMode = gate }, flags = { ["kubelet-server"] = kubelet_server },
        cfg = { join = { controlPlane = {} }, cluster = {} },
        gate = function(self, g) return self.gates[g] == true end }
    end
    local function check(ctx)
      package.loaded["flows.join"] = nil
      local nodes = runner.resolve(require("flows.join"), ctx)
      return runner.check(nodes, ctx)
    end
    assert.is_true(check(cp_ctx(true)))                 -- stock order, local kubelet: fine
    assert.is_true(check(cp_ctx(false)))                -- old order, endpoint kubelet: fine
    local ok, err = check(cp_ctx(false, "local"))       -- old order, local kubelet: never finishes
    assert.is_nil(ok)
    assert.matches('"kubelet-wait-bootstrap" requires "local-etcd", which phase "control-plane-join/etcd" provides only later', err, 1, true)
    assert.matches("would never end", err, 1, true)
    -- a reordered stock flow that waits for the bootstrap before joining etcd is refused too
    package.loaded["flows.join"] = nil
    local f = require("flows.join")
    local wait = require("phases.join.kubelet-wait-bootstrap")
    f:remove("kubelet-wait-bootstrap")
    f:insert(require("framework.phase").when(require("framework.phase").gate("ControlPlaneKubeletLocalMode", true), wait), { before = "etcd-join" })
    local ctx = cp_ctx(true)
    ok, err = runner.check(runner.resolve(f, ctx), ctx)
    assert.is_nil(ok)
    assert.matches('"kubelet-wait-bootstrap" requires "local-etcd", which phase "etcd-join" provides only later', err, 1, true)
    package.loaded["flows.join"] = nil
  end)
end)
