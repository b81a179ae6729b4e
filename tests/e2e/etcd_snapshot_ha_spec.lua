-- `moonadm etcd snapshot` on the HA lab's control planes (the shared fixture: 3 stacked members),
-- as an operator runs it there: no --endpoint, no --cert-dir (the node's etcd manifest and PKI), into
-- a directory kept to N; the API answers throughout (a poller through the endpoint counts).
local h = require "helpers"
local fixture = require "lab_fixture"

local CPS = { "cp1", "cp2", "cp3" }

describe("etcd snapshots on the HA lab", function()
  local st, dir, marker

  setup(function()
    st = fixture.get("ha")
    dir = h.tmpdir()
    marker = "snap-e2e-" .. os.time()
    local rc, out = fixture.kubectl(st, { "create", "configmap", marker, "-n", "default", "--from-literal=k=" .. marker })
    assert(rc == 0, out)
  end)

  teardown(function()
    if st then fixture.kubectl(st, { "delete", "configmap", marker, "-n", "default", "--ignore-not-found" }) end
    if dir then h.rmrf(dir) end
  end)

  it("saves each member's database with the objects written before, keeping the newest", function()
    local stop = fixture.readyz_poller(st)
    local saved = {}
    for _, node in ipairs(CPS) do
      for round = 1, 2 do
        if round == 2 then os.execute("sleep 1.1") end -- names carry the second
        local code, text = fixture.run_on(st, node, { "moonadm", "etcd", "snapshot", "save", "--dir", dir .. "/" .. node,
          "--keep", "1" })
        assert.equal(0, code, text)
        local path = text:match("to (%S+%.db)\n")
        assert.truthy(path, text)
        assert.truthy(text:find("etcd 3.6.6", 1, true), text)
        saved[node] = path
      end
    end
    local ok, failed = stop()
    io.stderr:write(("figure: /readyz through the endpoint while 6 snapshots were taken: %d answered, %d failed\n")
      :format(ok, failed))
    assert.equal(0, failed)
    for _, node in ipairs(CPS) do
      local names = {}
      local p = io.popen("ls " .. h.q(dir .. "/" .. node))
      for l in p:lines() do names[#names + 1] = l end
      p:close()
      assert.equal(2, #names, table.concat(names, " ")) -- --keep 1: the newest and its .sha256
      assert.truthy(names[1]:find("^etcd%-snapshot%-" .. node .. "%-%d+T%d+Z%.db$"), names[1])
      local data = assert(h.read(saved[node]))
      assert.truthy(data:find(marker, 1, true), node .. "'s snapshot lacks the ConfigMap written before it")
      assert.truthy(data:find("/registry/configmaps/kube-system/kubeadm-config", 1, true))
      local code, text = fixture.run_on(st, node, { "moonadm", "etcd", "snapshot", "status", saved[node] })
      assert.equal(0, code, text)
      assert.truthy(text:find("HASH FILE      matches", 1, true), text)
    end
  end)
end)
