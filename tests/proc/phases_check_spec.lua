-- `moonadm phases check --flow FILE` on a join flow: one flow file serves both roles, so it is
-- checked for a joining worker and for a joining control plane unless --worker or --control-plane
-- names one, and a refusal says which role it is for (issue 20, item 4).
local h = require "helpers"

local put = h.put -- (the trust check refuses files others may write)

-- The stock join order with kubelet-wait-bootstrap moved above etcd-join: fine for a worker
-- (no local etcd), a wait that never ends for a control plane whose kubelet talks to its own
-- kube-apiserver (KEP-4471).
local SWAPPED = [[
return {
  "preflight",
  "control-plane-prepare",
  "check-etcd",
  "kubelet-start",
  "kubelet-wait-bootstrap",
  "etcd-join",
  "control-plane-join",
  "wait-control-plane",
}
]]

local STOCK = [[
return {
  "preflight",
  "control-plane-prepare",
  "check-etcd",
  "kubelet-start",
  "etcd-join",
  "kubelet-wait-bootstrap",
  "control-plane-join",
  "wait-control-plane",
}
]]

describe("phases check on a join flow", function()
  local root, swapped, stock
  before_each(function()
    root = h.tmpdir()
    swapped = put(root .. "/join-swapped.lua", SWAPPED)
    stock = put(root .. "/join-stock.lua", STOCK)
  end)
  after_each(function() h.rmrf(root) end)

  it("checks both roles by default and refuses the swapped flow for a control-plane join", function()
    local code, out, err = h.moonadm { "phases", "check", "--flow", swapped }
    assert.equal(1, code, out .. err)
    assert.matches('flow "join" is refused for a control-plane join: phase "kubelet-wait-bootstrap" requires "local-etcd"',
      err, 1, true)
    assert.matches('move "etcd-join" before "kubelet-wait-bootstrap"', err, 1, true)
    assert.not_matches("passes the static check", out, 1, true)
    -- the command named explicitly: the same
    code, _, err = h.moonadm { "phases", "check", "join", "--flow", swapped }
    assert.equal(1, code)
    assert.matches("refused for a control-plane join", err, 1, true)
  end)

  it("--control-plane checks only the control plane; --worker only the worker", function()
    local code, _, err = h.moonadm { "phases", "check", "--flow", swapped, "--control-plane" }
    assert.equal(1, code)
    assert.matches("refused for a control-plane join", err, 1, true)
    local out
    code, out, err = h.moonadm { "phases", "check", "--flow", swapped, "--worker" }
    assert.equal(0, code, out .. err)
    assert.matches('flow "join" passes the static check for a worker join', out, 1, true)
  end)

  it("says which roles a passing join flow was checked for", function()
    local code, out, err = h.moonadm { "phases", "check", "--flow", stock }
    assert.equal(0, code, out .. err)
    assert.matches("passes the static check for a worker join and a control-plane join", out, 1, true)
    code, out = h.moonadm { "phases", "check", "join" }
    assert.equal(0, code)
    assert.matches("for a worker join and a control-plane join", out, 1, true)
  end)

  it("the old join order is refused only for a control plane bootstrapping against its own apiserver", function()
    local code, _, err = h.moonadm { "phases", "check", "join", "--feature-gates", "ControlPlaneKubeletLocalMode=false",
      "--kubelet-server", "local" }
    assert.equal(1, code)
    assert.matches('flow "join" is refused for a control-plane join: phase "kubelet-wait-bootstrap" requires "local-etcd"', err, 1, true)
    assert.equal(0, (h.moonadm { "phases", "check", "join", "--feature-gates", "ControlPlaneKubeletLocalMode=false" }))
  end)

  it("refuses contradictory role flags with a clear message", function()
    local code, _, err = h.moonadm { "phases", "check", "--flow", stock, "--worker", "--control-plane" }
    assert.equal(1, code)
    assert.matches("--worker and --control-plane exclude each other", err, 1, true)
    code, _, err = h.moonadm { "phases", "check", "--flow", stock, "--worker", "--kubelet-server", "local" }
    assert.equal(1, code)
    assert.matches("--kubelet-server is for a joining control plane", err, 1, true)
  end)

  it("`phases join` (the listing) says a refused flow would be refused and for which role", function()
    local code, out, err = h.moonadm { "phases", "join", "--flow", swapped }
    assert.equal(1, code)
    assert.matches("kubelet-wait-bootstrap", out, 1, true)
    assert.matches('flow "join" would be refused for a control-plane join', err, 1, true)
  end)

  it("a flow of another command is checked once, with no role in its messages", function()
    local code, out, err = h.moonadm { "phases", "check", "init" }
    assert.equal(0, code, out .. err)
    assert.matches('flow "init" passes the static check: every phase', out, 1, true)
  end)
end)
