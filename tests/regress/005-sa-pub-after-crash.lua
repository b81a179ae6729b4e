-- Found by tests/e2e/crash_spec.lua (init write:53): a run killed right after writing sa.key left
-- no sa.pub; the re-run reused the key and never wrote the public key, and the kube-apiserver
-- exited at once ("open /etc/kubernetes/pki/sa.pub: no such file or directory"). The certs phase
-- now derives a missing sa.pub from the existing sa.key.
local h = require "helpers"
local pki = require "moonadm.pki"

describe("regress 005: sa.key without sa.pub after a killed run", function()
  local f = io.open(h.hooks, "r")
  if f then f:close() end

  it("the next run writes sa.pub from the existing key", function()
    local dir = h.tmpdir()
    local keyp, pubp = dir .. "/root/etc/kubernetes/pki/sa.key", dir .. "/root/etc/kubernetes/pki/sa.pub"
    if f then
      h.certs_all(dir .. "/root", { MOONADM_HOOK_LOG = dir .. "/count.log" }, h.hooks)
      local n
      for line in io.lines(dir .. "/count.log") do
        local i, path = line:match("^write (%d+) (.+)$")
        if path and path:match("/pki/sa%.key$") then n = tonumber(i) end
      end
      os.execute("rm -rf " .. h.q(dir .. "/root"))
      assert.equal(137, (h.certs_all(dir .. "/root", { MOONADM_CRASH_AFTER = "write:" .. assert(n) }, h.hooks)))
    else -- without the hooked build: the state such a kill leaves
      assert.equal(0, (h.certs_all(dir .. "/root")))
      os.remove(pubp)
    end
    local key = assert(h.read(keyp))
    assert.is_nil(h.read(pubp))
    local code, out = h.certs_all(dir .. "/root")
    assert.equal(0, code, out)
    assert.equal(key, h.read(keyp))
    assert.equal(pki.read_key(key):public_pem(), h.read(pubp))
    h.rmrf(dir)
  end)
end)
