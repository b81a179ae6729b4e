-- Taking over kubeadm's clusters, and the reverse, across a minor (e2etko, 10.253.23). On one lab:
--   kubeadm's cluster: the reference kubeadm v1.35.4 inits the spare s1 and joins the spare s2 as a
--     worker; then `moonadm upgrade apply v1.36.3` on s1 and `moonadm upgrade node` on s2;
--   moonadm's cluster: the lab's cp1 (moonadm init) and w1 (moonadm join); then the reference kubeadm
--     v1.36.3 `upgrade apply v1.36.3` on cp1 and `upgrade node` on w1.
-- Both end on v1.36.3 everywhere and healthy, and the other tool then finds nothing to do: kubeadm
-- v1.36.3's `upgrade plan` on the cluster moonadm upgraded; on the one kubeadm upgraded, moonadm's
-- `upgrade plan` offers only the next minor and its `upgrade node` converges. make test-long (needs LAB_RELEASES=v1.36.3).
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"

local NAME, SUB = "e2etko", "10.253.23"
local FROM, TO = "v1.35.4", "v1.36.3"
local IP = { cp1 = SUB .. ".11", s1 = SUB .. ".13", s2 = SUB .. ".14" }
local KUBEADM_TOKEN = "kbdmtk.0123456789abcdef"
local KUBEADM_FROM = fixture.bin_dir .. "/kubeadm"
local KUBEADM_TO = h.top .. "/.lab/bin/" .. TO .. "/kubeadm"
local IMAGES_TO = { "etcd:3.6.8-0", "kube-apiserver:" .. TO, "kube-controller-manager:" .. TO, "kube-scheduler:" .. TO }

describe("taking over across a minor: moonadm upgrades kubeadm's cluster, kubeadm upgrades moonadm's", function()
  local st
  local kubeadm_kc

  local function on(node, argv) return fixture.run_on(st, node, argv) end
  local function timed(node, argv)
    local code, out, secs = on(node, argv)
    io.stderr:write(("\n[figure] %s on %s: %ds\n"):format(table.concat(argv, " "):gsub("^%S*/", ""), node, secs))
    return code, out
  end
  local function server_version(kc)
    local rc, v = fixture.kubectl(st, { "version", "-o", "json" }, kc)
    assert.equal(0, rc, v)
    return cjson.decode(v:match("{.*}")).serverVersion.gitVersion
  end

  setup(function()
    assert(io.open(KUBEADM_TO), ("the reference kubeadm %s is missing: LAB_RELEASES=%s make lab-bins"):format(TO, TO))
    fixture.LABS.takeover = { name = NAME, subnet = SUB, args = { "--control-planes", "1", "--workers", "1", "--spares", "2" } }
    st = fixture.get("takeover")
    kubeadm_kc = st.dir .. "/s1/etc/kubernetes/admin.conf"
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", NAME } end)

  it("the reference kubeadm " .. FROM .. " makes a cluster of the spares", function()
    -- kubeadm's init on s1 with cp1's config: its address, name and token swapped
    local init = h.read(st.dir .. "/cp1-init.yaml")
    init = init:gsub(IP.cp1:gsub("%.", "%%."), IP.s1):gsub("name: cp1", "name: s1")
      :gsub("%f[%w]" .. st.token:gsub("%.", "%%."), KUBEADM_TOKEN)
    h.write(st.dir .. "/s1-init.yaml", init)
    -- the stand-in lab has no container runtime or cgroup v2 for kubeadm's node preflight
    local code, out = on("s1", { KUBEADM_FROM, "init", "--config", st.dir .. "/s1-init.yaml", "--ignore-preflight-errors=all" })
    assert.equal(0, code, out)
    code, out = on("s2", { KUBEADM_FROM, "join", IP.s1 .. ":6443", "--token", KUBEADM_TOKEN,
      "--discovery-token-unsafe-skip-ca-verification", "--node-name", "s2", "--ignore-preflight-errors=all" })
    assert.equal(0, code, out)
    assert.is_true(fixture.nodes_ready(st, kubeadm_kc, 2))
    assert.equal(FROM, server_version(kubeadm_kc))
  end)

  it("moonadm upgrades kubeadm's cluster to " .. TO .. " (apply on s1, node on s2)", function()
    local code, out = on("s1", { "moonadm", "upgrade", "plan" })
    assert.equal(0, code, out)
    assert.matches("moonadm upgrade apply " .. TO:gsub("%.", "%%."), out)
    code, out = timed("s1", { "moonadm", "upgrade", "apply", TO, "--yes" })
    assert.equal(0, code, out)
    assert.matches('SUCCESS! A control plane node of your cluster was upgraded to "' .. TO:gsub("%.", "%%.") .. '"', out)
    -- what kubeadm kept: its backups are where moonadm wrote its own
    assert.matches("/etc/kubernetes/tmp/kubeadm%-backup%-manifests%-", out)
    code, out = timed("s2", { "moonadm", "upgrade", "node" })
    assert.equal(0, code, out)
    assert.same(IMAGES_TO, fixture.running_images(st, "s1"))
    assert.equal(TO, server_version(kubeadm_kc))
    assert.is_true(fixture.nodes_ready(st, kubeadm_kc, 2))
    -- the reference kubeadm of the new release finds nothing to do and accepts both nodes
    code, out = on("s1", { KUBEADM_TO, "upgrade", "plan", "--ignore-preflight-errors=CreateJob" })
    assert.equal(0, code, out)
    assert.is_nil(out:find("You can now apply the upgrade", 1, true), out)
    for _, node in ipairs { "s1", "s2" } do
      code, out = on(node, { KUBEADM_TO, "upgrade", "node", "--dry-run", "--ignore-preflight-errors=all" })
      assert.equal(0, code, node .. ":\n" .. out)
      assert.matches("Finished dryrunning successfully", out)
    end
  end)

  it("the reference kubeadm " .. TO .. " upgrades moonadm's cluster (apply on cp1, node on w1)", function()
    -- all: the stand-in has no runtime to pull images with, and cannot run kubeadm's health-check Job
    local code, out = timed("cp1", { KUBEADM_TO, "upgrade", "apply", TO, "--yes", "--ignore-preflight-errors=all" })
    assert.equal(0, code, out)
    assert.matches('SUCCESS! A control plane node of your cluster was upgraded to "' .. TO:gsub("%.", "%%.") .. '"', out)
    code, out = timed("w1", { KUBEADM_TO, "upgrade", "node", "--ignore-preflight-errors=all" })
    assert.equal(0, code, out)
    assert.same(IMAGES_TO, fixture.running_images(st, "cp1"))
    local kc = st.dir .. "/super-admin.conf"
    assert.equal(TO, server_version(kc))
    assert.is_true(fixture.nodes_ready(st, kc, 2))
    -- moonadm reads what kubeadm wrote: nothing left in v1.36 (only the next minor, which moonadm also
    -- speaks), and its node upgrade converges
    code, out = on("cp1", { "moonadm", "upgrade", "plan" })
    assert.equal(0, code, out)
    assert.matches("Cluster version: " .. TO:gsub("%.", "%%."), out)
    assert.is_nil(out:find("Upgrade to the latest version in the v1.36 series", 1, true), out)
    assert.matches("Upgrade to the latest version in the v1%.37 series", out)
    for _, node in ipairs { "cp1", "w1" } do
      code, out = on(node, { "moonadm", "upgrade", "node" })
      assert.equal(0, code, node .. ":\n" .. out)
      assert.matches("successfully completed %(cluster version " .. TO:gsub("%.", "%%.") .. "%)", out)
    end
    assert.same(IMAGES_TO, fixture.running_images(st, "cp1"))
  end)
end)
