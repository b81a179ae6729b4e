-- The real minor upgrade, twice, on an own 3 control plane + 1 worker lab behind its load balancer
-- (e2eminha, 10.253.22): v1.35.4 -> v1.36.3 -> v1.37.2. Each step: `moonadm upgrade plan` offers the
-- next minor, `upgrade apply` on cp1, `upgrade node` on cp2, cp3 and w1; then every control plane
-- runs the new release, every etcd member the new etcd, and the reference kubeadm of the new release
-- finds nothing to do (`upgrade plan`) and accepts every node (`upgrade node --dry-run`). A poller
-- counts /readyz failures through the load balancer for the whole of each step; each command's time
-- and the failures are printed as [figure] lines. make test-long (needs LAB_RELEASES="v1.36.3 v1.37.2").
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"

local LAB = { name = "e2eminha", subnet = "10.253.22" }
local STEPS = {
  { from = "v1.35.4", to = "v1.36.3", etcd = "3.6.8-0", coredns = "v1.14.2" },
  { from = "v1.36.3", to = "v1.37.2", etcd = "3.7.0-0", coredns = "v1.14.6" },
}
local CONTROL_PLANES = { "cp1", "cp2", "cp3" }

local function pat(s) return (s:gsub("%p", "%%%0")) end

describe("the minor upgrade v1.35.4 -> v1.36.3 -> v1.37.2 of an HA lab (3 control planes + 1 worker)", function()
  local st

  local function kubectl(args) return fixture.kubectl(st, args) end
  local function on(node, argv) return fixture.run_on(st, node, argv) end

  -- every etcd member's version, by its own status (etcdctl from the host with cp1's healthcheck client)
  local function etcd_versions()
    local pki = st.nodes[1].root .. "/etc/kubernetes/pki/etcd/"
    local eps = {}
    for _, n in ipairs(st.nodes) do
      if n.name:match("^cp") then eps[#eps + 1] = "https://" .. n.ip .. ":2379" end
    end
    local cmd = ("%s --endpoints=%s --cacert=%s --cert=%s --key=%s endpoint status -w json 2>&1"):format(
      h.q(fixture.bin_dir .. "/etcdctl"), table.concat(eps, ","), h.q(pki .. "ca.crt"),
      h.q(pki .. "healthcheck-client.crt"), h.q(pki .. "healthcheck-client.key"))
    local p = io.popen(cmd)
    local out = p:read("a")
    p:close()
    local ok, list = pcall(cjson.decode, out)
    assert(ok and type(list) == "table", "etcdctl endpoint status: " .. out)
    local versions = {}
    for _, e in ipairs(list) do versions[#versions + 1] = e.Status.version end
    return versions
  end

  setup(function()
    for _, s in ipairs(STEPS) do
      assert(io.open(h.top .. "/.lab/bin/" .. s.to .. "/kubeadm"),
        ("the release %s is missing: LAB_RELEASES=%s make lab-bins"):format(s.to, s.to))
    end
    local t0 = os.time()
    local code, out, err = h.moonadm({ "lab", "up", "--name", LAB.name, "--subnet", LAB.subnet,
      "--control-planes", "3", "--workers", "1" })
    assert(code == 0, ("lab %s did not come up:\n%s\n%s"):format(LAB.name, out, err))
    io.stderr:write(("\n[figure] lab up 3+1 at v1.35.4: %ds\n"):format(os.time() - t0))
    st = assert(fixture.state(LAB.name), "no lab.json")
    assert(st.endpoint, "the HA lab has no load-balanced endpoint")
  end)

  teardown(function()
    h.moonadm({ "lab", "down", "--name", LAB.name })
  end)

  for _, s in ipairs(STEPS) do
    local kubeadm = h.top .. "/.lab/bin/" .. s.to .. "/kubeadm"

    it(s.from .. " -> " .. s.to .. ": plan offers it, apply on cp1, upgrade node on cp2, cp3 and w1, /readyz served", function()
      local code, out = on("cp1", { "moonadm", "upgrade", "plan" })
      assert.equal(0, code, out)
      assert.matches("Latest version in the v" .. pat(s.to:match("^v(%d+%.%d+)")) .. " series: " .. pat(s.to), out)
      assert.matches("etcd%s+cp1%s+" .. pat(s.from == "v1.35.4" and "3.6.6-0" or "3.6.8-0") .. "%s+" .. pat(s.etcd), out)
      assert.matches("moonadm upgrade apply " .. pat(s.to), out)
      -- before the apply, upgrade node on the worker only reconfigures it to the cluster's unchanged version
      code, out = on("w1", { "moonadm", "upgrade", "node" })
      assert.equal(0, code, out)
      assert.matches("successfully completed %(cluster version " .. pat(s.from) .. "%)", out)
      local stop = fixture.readyz_poller(st)
      local took = {}
      code, out, took.apply = on("cp1", { "moonadm", "upgrade", "apply", s.to, "--yes" })
      if code ~= 0 then stop() end
      assert.equal(0, code, out)
      assert.matches('SUCCESS! A control plane node of your cluster was upgraded to "' .. pat(s.to) .. '"', out)
      for _, node in ipairs { "cp2", "cp3", "w1" } do
        code, out, took[node] = on(node, { "moonadm", "upgrade", "node" })
        if code ~= 0 then stop() end
        assert.equal(0, code, node .. ":\n" .. out)
        assert.matches("successfully completed %(cluster version " .. pat(s.to) .. "%)", out)
      end
      local ok_n, fail_n = stop()
      io.stderr:write(("\n[figure] %s -> %s (3 control planes + 1 worker): apply cp1 %ds, node cp2 %ds, cp3 %ds, w1 %ds; "
        .. "/readyz through the load balancer failed %d of %d polls\n"):format(s.from, s.to, took.apply, took.cp2,
        took.cp3, took.w1, fail_n, ok_n + fail_n))
      -- the balancer checks /readyz each second: what fails is a request that reached an apiserver in
      -- the second between its SIGTERM (readyz fails at once) and the next check; under 5 %
      assert.is_true(ok_n > 0)
      assert.is_true(fail_n * 20 < ok_n + fail_n, ("/readyz failed %d of %d polls"):format(fail_n, ok_n + fail_n))
      -- every control plane on the new release, every etcd member on the new etcd
      for _, node in ipairs(CONTROL_PLANES) do
        assert.same({ "etcd:" .. s.etcd, "kube-apiserver:" .. s.to, "kube-controller-manager:" .. s.to,
          "kube-scheduler:" .. s.to }, fixture.running_images(st, node), node)
      end
      local want = s.etcd:match("^(.-)%-")
      assert.same({ want, want, want }, etcd_versions())
      local rc, v = kubectl({ "-n", "kube-system", "get", "deployment", "coredns", "-o",
        "jsonpath={.spec.template.spec.containers[0].image}" })
      assert.equal(0, rc, v)
      assert.equal("registry.k8s.io/coredns/coredns:" .. s.coredns, v)
      rc, v = kubectl({ "-n", "kube-system", "get", "daemonset", "kube-proxy", "-o",
        "jsonpath={.spec.template.spec.containers[0].image}" })
      assert.equal(0, rc, v)
      assert.equal("registry.k8s.io/kube-proxy:" .. s.to, v)
      rc, v = kubectl({ "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}" })
      assert.equal(0, rc, v)
      assert.matches("kubernetesVersion: " .. pat(s.to), v)
    end)

    it(s.to .. ": the reference kubeadm " .. s.to .. " finds nothing to do and accepts every node", function()
      -- the stand-in cannot run kubeadm's health-check Job: that check only
      local code, out = on("cp1", { kubeadm, "upgrade", "plan", "--ignore-preflight-errors=CreateJob" })
      assert.equal(0, code, out)
      assert.matches("Cluster version: " .. pat(s.to:sub(2)), out)
      assert.is_nil(out:find("You can now apply the upgrade", 1, true), out)
      for _, node in ipairs { "cp1", "cp2", "cp3", "w1" } do
        -- the lab has no container runtime or cgroup v2 for kubeadm's node preflight
        code, out = on(node, { kubeadm, "upgrade", "node", "--dry-run", "--ignore-preflight-errors=all" })
        assert.equal(0, code, node .. ":\n" .. out)
        assert.matches("Finished dryrunning successfully", out)
      end
    end)
  end
end)
