-- A reset never costs etcd its quorum, even when it cannot read the cluster. On a lab of three
-- control planes behind the lab's load balancer: cp3 is reset (its member removed: two left); then,
-- with the load balancer held (SIGSTOP: connections are accepted by the kernel and never answered,
-- as a balancer still routing to a member just removed), cp2's reset cannot read kubeadm-config,
-- finds its member through its own local etcd and removes it: cp1 alone keeps its quorum (kubeadm
-- would have skipped the removal and wiped the data, leaving one live member of two). Last, with
-- cp1's etcd stopped too, the reset refuses to delete the data until --unsafe-wipe-etcd-data.
local cjson = require "cjson"
local core = require "moonadm.core"
local fixture = require "lab_fixture"
local h = require "helpers"
local proc = require "moonadm.proc"

local NAME, SUB = "e2equo", "10.252.43"

local function etcdctl(st, node, args)
  local argv = { "etcdctl", "--endpoints", "https://127.0.0.1:2379", "--cacert", "/etc/kubernetes/pki/etcd/ca.crt",
    "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt", "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key",
    "--command-timeout", "5s" }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local code, out, err = fixture.exec(st, node, argv)
  return code, out .. err
end

local function member_names(st, node)
  local code, out = etcdctl(st, node, { "member", "list", "-w", "json" })
  assert.equal(0, code, out)
  local names = {}
  for _, m in ipairs(cjson.decode(out).members) do names[#names + 1] = m.name end
  table.sort(names)
  return names
end

describe("reset keeps etcd's quorum when the cluster cannot be read (3 control planes)", function()
  local st
  local function hold_lb(on) proc.signal(math.tointeger(st.lb.pid), on and "STOP" or "CONT") end
  local function reset(node, extra)
    local argv = { "moonadm", "reset", "--force" }
    for _, a in ipairs(extra or {}) do argv[#argv + 1] = a end
    local code, out, err = fixture.exec(st, node, argv)
    return code, out .. err
  end

  setup(function()
    fixture.LABS.quorum = { name = NAME, subnet = SUB, args = { "--control-planes", "3" } }
    st = fixture.get("quorum")
  end)
  teardown(function()
    if st and st.lb then hold_lb(false) end
    h.moonadm { "lab", "down", "--name", NAME }
  end)
  after_each(function() if st and st.lb then hold_lb(false) end end)

  it("resets cp3 through the cluster: its member removed, two left", function()
    assert.truthy(st.lb and st.lb.pid, "the lab has a load balancer")
    local code, out = reset("cp3")
    assert.equal(0, code, out)
    assert.matches("[etcd] Removed etcd member ", out, 1, true)
    assert.same({ "cp1", "cp2" }, member_names(st, "cp1"))
  end)

  it("with the load balancer held, cp2's reset removes its member through its local etcd: cp1 keeps quorum", function()
    hold_lb(true)
    local code, out = reset("cp2")
    hold_lb(false)
    assert.equal(0, code, out)
    assert.matches("Unable to fetch the kubeadm-config ConfigMap from cluster", out, 1, true)
    assert.matches("[etcd] Finding this node's etcd member through the local etcd at https://" .. SUB .. ".12:2379", out, 1, true)
    assert.matches("[etcd] Removed etcd member ", out, 1, true)
    assert.matches("[reset] Deleted contents of the etcd data directory: /var/lib/etcd", out, 1, true)
    assert.is_nil(io.open(st.dir .. "/cp2/var/lib/etcd/member", "r"))
    assert.same({ "cp1" }, member_names(st, "cp1"))
    local hc, hout = etcdctl(st, "cp1", { "endpoint", "health" })
    assert.equal(0, hc, hout)
    assert.matches("is healthy", hout, 1, true)
    local pc, pout = etcdctl(st, "cp1", { "put", "/moonadm-e2e/quorum", "kept" })
    assert.equal(0, pc, pout)
  end)

  it("with cp1's etcd stopped as well, the reset refuses to delete the data, then --unsafe-wipe-etcd-data does", function()
    local manifest = st.dir .. "/cp1/etc/kubernetes/manifests/etcd.yaml"
    local away = st.dir .. "/cp1-etcd.yaml.away"
    assert(os.rename(manifest, away))
    local deadline = core.monotonic() + 60
    while etcdctl(st, "cp1", { "endpoint", "health" }) == 0 and core.monotonic() < deadline do core.sleep(0.5) end
    assert.is_true(core.monotonic() < deadline, "cp1's etcd did not stop")
    hold_lb(true)
    local code, out = reset("cp1")
    hold_lb(false)
    assert.equal(1, code, out)
    assert.matches("error execution phase remove-etcd-member: refusing to delete the etcd data directory /var/lib/etcd: " ..
      "this member may still be in the etcd cluster", out, 1, true)
    assert.matches("Nothing was stopped or deleted", out, 1, true)
    -- nothing went: the data, the other manifests, the certificates
    for _, kept in ipairs { "/var/lib/etcd/member", "/etc/kubernetes/manifests/kube-apiserver.yaml",
      "/etc/kubernetes/pki/ca.key", "/etc/kubernetes/admin.conf" } do
      assert.truthy(io.open(st.dir .. "/cp1" .. kept, "r"), kept .. " was deleted")
    end
    code, out = reset("cp1", { "--unsafe-wipe-etcd-data" })
    assert.equal(0, code, out)
    assert.matches("--unsafe-wipe-etcd-data: deleting the etcd data directory /var/lib/etcd although", out, 1, true)
    assert.is_nil(io.open(st.dir .. "/cp1/var/lib/etcd/member", "r"))
    os.remove(away)
  end)
end)
