-- Issue 18.5: the lab's files hand out no secret. lab.json and the node configs hold the bootstrap token
-- and the certificate key (with both, anyone can fetch the kubeadm-certs Secret and decrypt the cluster
-- CA key): each is 0600 in a lab dir that is 0700, and user nobody can read none of it. The node root's
-- files have kubeadm's modes, on the control plane and on a joined worker. An own lab (e2eperm,
-- 10.252.40: cp1 and w1), taken down in teardown().
local h = require "helpers"

local LAB = { name = "e2eperm", subnet = "10.252.40" }

local function mode(path)
  local p = io.popen("stat -c %a " .. h.q(path) .. " 2>/dev/null")
  local m = p:read("l")
  p:close()
  return m
end

-- The checkout may sit where nobody cannot enter (a clone under `mktemp -d`, 0700), which would make
-- every refusal below prove nothing. So nobody looks at the lab dir through a bind mount (modes kept)
-- in a world-enterable dir, in a mount namespace of the check's own: only the lab's own modes stand
-- in the way. as_root runs the same way as root (the control that the mount is there).
local function in_view(dir, view, who, cmd)
  local inner = ("mount --bind %s %s && %s%s"):format(h.q(dir), h.q(view .. "/lab"),
    who == "nobody" and "runuser -u nobody -- " or "", cmd)
  return os.execute("unshare -m --propagation private sh -c " .. h.q(inner) .. " >/dev/null 2>&1") == true
end

describe("the lab's files (e2eperm)", function()
  local dir = h.top .. "/.lab/" .. LAB.name

  setup(function()
    local code, out, err = h.moonadm { "lab", "up", "--name", LAB.name, "--subnet", LAB.subnet, "--workers", "1" }
    assert(code == 0, ("lab %s did not come up (exit %d):\n%s\n%s"):format(LAB.name, code, out, err))
  end)
  teardown(function() h.moonadm { "lab", "down", "--name", LAB.name } end)

  it("holds the join secrets in 0600 files of a 0700 dir", function()
    assert.equal("700", mode(dir))
    local lab = h.read(dir .. "/lab.json")
    local token = lab:match('"token":"([^"]+)"')
    local key = lab:match('"certificate_key":"(%x+)"')
    assert.truthy(token and key, "lab.json records the token and the certificate key")
    assert.matches(key, h.read(dir .. "/cp1-init.yaml"), 1, true)
    for _, f in ipairs { "lab.json", "cp1-init.yaml", "w1-join.yaml", "admin.conf", "super-admin.conf" } do
      assert.equal("600", mode(dir .. "/" .. f), f)
    end
    -- every file directly in the lab dir that holds a secret is 0600
    local p = io.popen("find " .. h.q(dir) .. " -maxdepth 1 -type f")
    for path in p:lines() do
      local text = h.read(path) or ""
      if text:find(token, 1, true) or text:find(key, 1, true) or text:find("PRIVATE KEY", 1, true)
        or text:find("client-key-data", 1, true) then
        assert.equal("600", mode(path), path)
      end
    end
    p:close()
  end)

  it("user nobody can read none of it", function()
    local view = h.tmpdir()
    assert(os.execute("chmod 0755 " .. h.q(view) .. " && mkdir " .. h.q(view .. "/lab")))
    local seen = view .. "/lab"
    -- controls (else this proves nothing): nobody enters the view, root reads the lab through it
    assert.is_true(in_view(dir, view, "nobody", "test -x " .. h.q(view)), "nobody enters " .. view)
    assert.is_true(in_view(dir, view, "root", "test -r " .. h.q(seen .. "/lab.json")), "the lab dir is bound at " .. seen)
    assert.is_false(in_view(dir, view, "nobody", "ls " .. h.q(seen)))
    for _, f in ipairs { "lab.json", "cp1-init.yaml", "w1-join.yaml", "super-admin.conf", "cp1/etc/kubernetes/pki/ca.key",
      "cp1/etc/kubernetes/admin.conf", "w1/etc/kubernetes/kubelet.conf" } do
      assert.is_false(in_view(dir, view, "nobody", "cat " .. h.q(seen .. "/" .. f)), f)
    end
    h.rmrf(view)
  end)

  it("gives the node root kubeadm's modes", function()
    local r = dir .. "/cp1"
    assert.equal("755", mode(r))
    local want = {
      ["etc/kubernetes"] = "755", ["etc/kubernetes/pki"] = "755", ["etc/kubernetes/pki/etcd"] = "755",
      ["etc/kubernetes/manifests"] = "700", ["var/lib/etcd"] = "700", ["var/lib/kubelet"] = "700",
      ["var/lib/moonadm/journal"] = "700",
      ["etc/kubernetes/pki/ca.key"] = "600", ["etc/kubernetes/pki/ca.crt"] = "644", ["etc/kubernetes/pki/sa.key"] = "600",
      ["etc/kubernetes/pki/etcd/ca.key"] = "600", ["etc/kubernetes/pki/front-proxy-client.key"] = "600",
      ["etc/kubernetes/admin.conf"] = "600", ["etc/kubernetes/super-admin.conf"] = "600",
      ["etc/kubernetes/kubelet.conf"] = "600", ["etc/kubernetes/manifests/kube-apiserver.yaml"] = "600",
      ["etc/kubernetes/manifests/etcd.yaml"] = "600",
    }
    for path, m in pairs(want) do assert.equal(m, mode(r .. "/" .. path), path) end
    local p = io.popen("find " .. h.q(r .. "/etc/kubernetes/pki") .. " -name '*.key' -type f")
    for path in p:lines() do assert.equal("600", mode(path), path) end
    p:close()
    -- the root lock of init went with it
    assert.is_nil(mode(r .. "/etc/kubernetes/.moonadm.lock"))
    local w = dir .. "/w1"
    for path, m in pairs { ["etc/kubernetes/kubelet.conf"] = "600", ["etc/kubernetes/pki/ca.crt"] = "644",
      ["var/lib/kubelet"] = "700", ["etc/kubernetes/manifests"] = "700" } do
      assert.equal(m, mode(w .. "/" .. path), "w1 " .. path)
    end
    assert.is_nil(mode(w .. "/etc/kubernetes/.moonadm.lock"))
  end)
end)
