-- Slow join scenarios (make test-long): a control-plane join killed right after its etcd member was
-- added, re-run with --resume, converges without a second member; endpoint discovery returns exactly
-- the live members once a control plane's manifests are removed and its Node deleted.
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"
local proc = require "moonadm.proc"
local yaml = require "moonadm.yaml"
local pki = require "moonadm.pki"

local function members(st)
  local code, out = fixture.exec(st, "cp1", { "etcdctl", "--endpoints", "https://127.0.0.1:2379",
    "--cacert", "/etc/kubernetes/pki/etcd/ca.crt", "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt",
    "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key", "member", "list", "-w", "json" })
  if code ~= 0 then return nil end
  return cjson.decode(out).members
end

describe("a control-plane join killed after the etcd member add", function()
  local st, joinfile
  setup(function()
    fixture.LABS.kill = { name = "e2ekill", subnet = "10.252.4", args = { "--control-planes", "2", "--spares", "1" } }
    st = fixture.get("kill")
    local s1
    for _, n in ipairs(st.nodes) do if n.name == "s1" then s1 = n end end
    local pin = pki.read_cert(h.read(st.nodes[1].root .. "/etc/kubernetes/pki/ca.crt")):pin()
    joinfile = st.dir .. "/s1-cp-join.yaml"
    h.write(joinfile, yaml.encode {
      apiVersion = "kubeadm.k8s.io/v1beta4", kind = "JoinConfiguration",
      discovery = { bootstrapToken = { token = st.token, apiServerEndpoint = st.endpoint, caCertHashes = { pin } } },
      nodeRegistration = { name = "s1" },
      controlPlane = { localAPIEndpoint = { advertiseAddress = s1.ip, bindPort = 6443 }, certificateKey = st.certificate_key },
    })
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", "e2ekill" } end)

  it("converges with --resume and never adds a second member", function()
    assert.equal(2, #members(st))
    local pid = assert(proc.spawn { argv = { h.bin, "lab", "exec", "s1", "--name", st.name, "--", "moonadm", "join",
      "--config", joinfile }, log = st.dir .. "/s1-killed-join.log", new_session = true })
    local deadline = os.time() + 180
    while os.time() < deadline do
      local m = members(st)
      if m and #m == 3 then break end
      os.execute("sleep 0.2")
    end
    os.execute("/bin/kill -KILL -- -" .. pid)
    proc.wait(pid)
    assert.equal(3, #members(st), "the member was added before the kill")
    local code, out, err = fixture.exec(st, "s1", { "moonadm", "join", "--config", joinfile, "--resume" })
    assert.equal(0, code, out .. err)
    local m = members(st)
    assert.equal(3, #m)
    for _, x in ipairs(m) do assert.is_not_true(x.isLearner, x.name) end
    local rc, nodes = fixture.kubectl(st, { "get", "node", "s1", "-o", "jsonpath={.metadata.labels.node-role\\.kubernetes\\.io/control-plane}" })
    assert.equal(0, rc, nodes)
  end)

  it("discovers exactly the live etcd members after a control plane's manifests and Node are gone", function()
    local script = h.top .. "/tests/e2e/scripts/etcd_endpoints.lua"
    local code, out, err = fixture.exec(st, "cp1", { "moonadm", "lua", script })
    assert.equal(0, code, err)
    assert.equal(3, #cjson.decode(out))
    local s1
    for _, n in ipairs(st.nodes) do if n.name == "s1" then s1 = n end end
    os.execute("rm -f " .. h.q(s1.root) .. "/etc/kubernetes/manifests/*.yaml")
    fixture.kubectl(st, { "delete", "node", "s1" })
    local want = { "https://" .. st.nodes[1].ip .. ":2379", "https://" .. st.nodes[2].ip .. ":2379" }
    table.sort(want)
    local deadline, got = os.time() + 60, nil
    while os.time() < deadline do
      code, out = fixture.exec(st, "cp1", { "moonadm", "lua", script })
      got = code == 0 and cjson.decode(out)
      if got and #got == 2 then break end
      os.execute("sleep 1")
    end
    assert.same(want, got)
  end)
end)
