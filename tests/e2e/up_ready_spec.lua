-- `lab up` says "up" only when it is (issue 20, item 4): right after it returns, every static Pod
-- manifest of every node has its mirror Pod in kube-system and every Node is Ready. A named lab
-- without --subnet picks a free /24 by itself, and a taken --subnet is refused naming its holder.
-- Each wait says what it waits for and its timeout, and the time it took (item 6).
local fixture = require "lab_fixture"
local h = require "helpers"

local NAME = "e2eup"

describe("lab up (own lab " .. NAME .. ", no --subnet)", function()
  local code, out, err, st
  setup(function()
    code, out, err = h.moonadm { "lab", "up", "--name", NAME, "--workers", "1" }
    if code == 0 then st = assert(fixture.state(NAME)) end
  end)
  teardown(function()
    h.moonadm { "lab", "down", "--name", NAME }
    h.moonadm { "lab", "down", "--name", NAME .. "2" }
  end)

  it("comes up on a subnet it chose itself, and says which", function()
    assert.equal(0, code, out .. err)
    assert.matches("^%d+%.%d+%.%d+$", st.subnet)
    assert.matches(("[lab] %s: subnet %s.0/24"):format(NAME, st.subnet), out, 1, true)
    assert.matches(("(subnet %s.0/24)"):format(st.subnet), out, 1, true)
    assert.equal(st.subnet .. ".11", st.nodes[1].ip)
  end)

  it("has every static Pod's mirror Pod and every Node Ready the moment it says up", function()
    assert.equal(0, code, out .. err)
    -- no retry here: this is what a user's first kubectl after `lab up` sees
    local rc, pods = fixture.kubectl(st, { "get", "pods", "-n", "kube-system", "-o", "name" })
    assert.equal(0, rc, pods)
    for _, n in ipairs(st.nodes) do
      local p = io.popen("ls " .. h.q(n.root .. "/etc/kubernetes/manifests"))
      for f in p:lines() do
        local pod = f:match("^(.-)%.yaml$")
        if pod then assert.matches("pod/" .. pod .. "-" .. n.name .. "\n", pods .. "\n", 1, true) end
      end
      p:close()
    end
    assert.matches("pod/kube-apiserver-cp1", pods, 1, true)
    local nrc, nodes = fixture.kubectl(st, { "get", "nodes", "-o",
      "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status} {end}" })
    assert.equal(0, nrc, nodes)
    assert.matches("cp1=True", nodes, 1, true)
    assert.matches("w1=True", nodes, 1, true)
  end)

  it("says what each wait waits for and its timeout, then how long it took", function()
    assert.equal(0, code, out .. err)
    assert.matches("[lab] Waiting for every static Pod's mirror Pod and every Node Ready (cp1 w1). This can take up to 3m0s",
      out, 1, true)
    assert.matches("%[lab%] Every static Pod has its mirror Pod and every Node is Ready after [%d.]+%S*s\n", out)
    assert.matches("%[kubelet%-check%] The kubelet is healthy after [%d.]+%S*s\n", out)
    assert.matches("%[control%-plane%-check%] kube%-apiserver is healthy after [%d.]+%S*s\n", out)
    assert.matches("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap. This can take up to 5m0s", out, 1, true)
    assert.matches("%[kubelet%-start%] The kubelet performed the TLS Bootstrap after [%d.]+%S*s\n", out)
  end)

  it("refuses another lab on the same --subnet, naming who holds it", function()
    assert.equal(0, code, out .. err)
    local c2, o2, e2 = h.moonadm { "lab", "up", "--name", NAME .. "2", "--subnet", st.subnet }
    assert.equal(1, c2, o2 .. e2)
    assert.matches(("subnet %s is already taken (%s.1/24 on %s"):format(st.subnet, st.subnet, NAME .. "0"), e2, 1, true)
  end)
end)
