-- Issue 18 (known defect): `init phase bootstrap-token` with an admin.conf whose cluster has no CA
-- raised a Lua error ("tokens.lua:220: bad argument #1 to 'b64encode'") after it had created the
-- tokens and RBAC; `token create --print-join-command` did the same in joincmd.hashes after the
-- token existed. Both now refuse first, with a message naming the file and what is missing.
local h = require "helpers"

local KC = [[
apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster:
    server: https://192.0.2.10:6443
users:
- name: kubernetes-admin
  user:
    token: abcdef.0123456789abcdef
contexts:
- name: kubernetes-admin@kubernetes
  context: {cluster: kubernetes, user: kubernetes-admin}
current-context: kubernetes-admin@kubernetes
]]

describe("regress 021: a kubeconfig without a CA", function()
  local dir
  before_each(function()
    dir = h.tmpdir()
    os.execute("mkdir -p " .. h.q(dir .. "/root/etc/kubernetes"))
    h.write(dir .. "/root/etc/kubernetes/admin.conf", KC)
    os.execute("chmod 600 " .. h.q(dir .. "/root/etc/kubernetes/admin.conf"))
  end)
  after_each(function() h.rmrf(dir) end)

  it("init phase bootstrap-token refuses it before doing anything", function()
    local code, out, err = h.moonadm { "init", "phase", "bootstrap-token", "--dry-run", "--root", dir .. "/root" }
    assert.not_equal(0, code)
    assert.matches("/etc/kubernetes/admin.conf has no certificate authority for its cluster", err, 1, true)
    assert.not_matches("bad argument", err, 1, true)
    assert.not_matches("%.lua:%d+:", err)
    assert.not_matches("Would create Secret", out .. err, 1, true) -- refused before the first token
  end)

  it("token create --print-join-command refuses it before creating the token", function()
    local kc = dir .. "/root/etc/kubernetes/admin.conf"
    local code, out, err = h.moonadm { "token", "create", "--print-join-command", "--dry-run", "--kubeconfig", kc }
    assert.not_equal(0, code)
    assert.matches(kc .. " has no certificate authority for its cluster", err, 1, true)
    assert.not_matches("%.lua:%d+:", err)
    assert.not_matches("Would create Secret", out .. err, 1, true)
  end)
end)
