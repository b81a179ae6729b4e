-- `moonadm kubeconfig user` against a real apiserver, on an own 1-node lab (e2ekcu, 10.252.17):
-- the kubeconfig it prints (client certificate signed by the cluster CA, CN alice, O team-a) is
-- read back by kube-apiserver with that identity (`kubectl auth whoami`). On the same lab,
-- `moonadm upgrade diff`: empty for the cluster's own version, and to another patch release
-- exactly the image lines of the three components. The lab is taken down in teardown().
local cjson = require "cjson"
local fixture = require "lab_fixture"
local h = require "helpers"

local LAB = { name = "e2ekcu", subnet = "10.252.17" }
local IP = LAB.subnet .. ".11"

describe("kubeconfig user on the lab", function()
  local st, tmp

  setup(function()
    fixture.LABS.kcu = { name = LAB.name, subnet = LAB.subnet, args = {} }
    st = fixture.get("kcu")
    tmp = h.tmpdir()
  end)
  teardown(function()
    if tmp then h.rmrf(tmp) end
    h.moonadm { "lab", "down", "--name", LAB.name }
  end)

  local function node_root() return st.dir .. "/cp1" end

  it("prints a kubeconfig the apiserver reads as user alice in group team-a", function()
    local cfg = tmp .. "/cluster.yaml"
    h.write(cfg, ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: %s:6443\n"):format(IP))
    local code, out, err = h.moonadm { "kubeconfig", "user", "--root", node_root(), "--config", cfg,
      "--client-name", "alice", "--org", "team-a", "--validity-period", "1h" }
    assert.equal(0, code, err)
    assert.matches("server: https://" .. IP:gsub("%.", "%%.") .. ":6443\n", out)
    assert.matches("current-context: alice@kubernetes\n", out, 1, true)
    local kc = tmp .. "/alice.conf"
    h.write(kc, out)
    local rc, text = fixture.kubectl(st, { "auth", "whoami", "-o", "json" }, kc)
    assert.equal(0, rc, text)
    local review = cjson.decode(text:match("%b{}"))
    local ui = review.status.userInfo
    assert.equal("alice", ui.username)
    local groups = {}
    for _, g in ipairs(ui.groups) do groups[g] = true end
    assert.is_true(groups["team-a"], text)
    assert.is_true(groups["system:authenticated"], text)
    -- and the identity has no rights it was not given
    rc, text = fixture.kubectl(st, { "get", "nodes" }, kc)
    assert.are_not.equal(0, rc)
    assert.matches('User "alice" cannot list resource "nodes"', text, 1, true)
  end)

  it("upgrade diff: nothing for the cluster's version, the image lines for another patch release", function()
    local HEAD = '[upgrade/diff] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...\n' ..
      "[upgrade/diff] Use 'moonadm init phase upload-config kubeadm --config your-config-file' to re-upload it.\n"
    local code, out, err = fixture.exec(st, "cp1", { "moonadm", "upgrade", "diff" })
    assert.equal(0, code, out .. err)
    assert.equal(HEAD, out)
    code, out, err = fixture.exec(st, "cp1", { "moonadm", "upgrade", "diff", "v1.35.9", "-c", "1" })
    assert.equal(0, code, out .. err)
    assert.equal(HEAD, out:sub(1, #HEAD))
    out = out:sub(#HEAD + 1)
    local removed, added, files = {}, {}, {}
    for line in out:gmatch("[^\n]*\n") do
      if line:match("^%-%-%- ") then files[#files + 1] = line:match("^%-%-%- (%S+)")
      elseif line:match("^%+%+%+ ") then assert.equal("+++ new manifest\n", line)
      elseif line:match("^%-") then removed[#removed + 1] = line
      elseif line:match("^%+") then added[#added + 1] = line end
    end
    assert.same({ "/etc/kubernetes/manifests/kube-apiserver.yaml", "/etc/kubernetes/manifests/kube-controller-manager.yaml",
      "/etc/kubernetes/manifests/kube-scheduler.yaml" }, files)
    assert.equal(3, #removed, out)
    assert.equal(3, #added, out)
    for i, comp in ipairs { "kube-apiserver", "kube-controller-manager", "kube-scheduler" } do
      assert.matches("^%-%s+image: registry%.k8s%.io/" .. comp:gsub("%-", "%%-") .. ":v1%.35%.4\n$", removed[i])
      assert.matches("^%+%s+image: registry%.k8s%.io/" .. comp:gsub("%-", "%%-") .. ":v1%.35%.9\n$", added[i])
    end
  end)

  it("upgrade diff prints what the reference kubeadm prints on the same node (sections in any order)", function()
    -- kubeadm walks a Go map: the three components come in any order
    local function sections(text)
      local head, rest = text:match("^(.-\n)(%-%-%- .*)$")
      if not rest then return text, {} end
      local all, pos = {}, 1
      while true do
        local nxt = rest:find("\n%-%-%- ", pos)
        all[#all + 1] = rest:sub(pos, nxt or #rest)
        if not nxt then break end
        pos = nxt + 1
      end
      table.sort(all)
      return head, all
    end
    for _, args in ipairs { { "v1.35.9" }, { "v1.35.9", "-c", "2" }, { "v1.35.9", "--context-lines=0" }, {} } do
      local kargv, margv = { "kubeadm", "upgrade", "diff" }, { "moonadm", "upgrade", "diff" }
      for _, a in ipairs(args) do kargv[#kargv + 1] = a; margv[#margv + 1] = a end
      local kc, kout, kerr = fixture.exec(st, "cp1", kargv)
      local mc, mout, merr = fixture.exec(st, "cp1", margv)
      assert.equal(0, kc, kerr)
      assert.equal(0, mc, merr)
      kout = kout:gsub("'kubeadm init phase", "'moonadm init phase")
      local kh, ks = sections(kout)
      local mh, ms = sections(mout)
      assert.equal(kh, mh)
      assert.same(ks, ms)
    end
  end)
end)
