-- Issue 18.7: two runs on one root raced (1 round in 70 left front-proxy-client.key not matching its
-- certificate, exit 0). Every command that changes the node takes the root lock
-- /etc/kubernetes/.moonadm.lock (flock, non-blocking): a second run stops at once, naming the holder's
-- pid; a crashed holder's lock is free; read-only commands take none.
local h = require "helpers"
local pki = require "moonadm.pki"

-- Holds the lock of root from another process (moonadm's own fs.lock) until killed; returns its pid.
local function hold(root, dir)
  local script = dir .. "/hold.lua"
  h.write(script, ([[
local fs = require "moonadm.fs"
fs.set_root(%q)
fs.mkdir("/etc/kubernetes", "0755")
local l = assert(fs.lock("/etc/kubernetes/.moonadm.lock"))
io.open(%q, "w"):close()
while true do require("moonadm.core").sleep(0.1) end
]]):format(root, dir .. "/held"))
  local p = io.popen(("%s lua %s >/dev/null 2>&1 & echo $!"):format(h.q(h.bin), h.q(script)))
  local pid = tonumber(p:read("l"))
  p:close()
  for _ = 1, 100 do
    if io.open(dir .. "/held", "r") then return pid end
    os.execute("sleep 0.05")
  end
  error("the holder did not take the lock")
end

local function matching(root)
  local bad = {}
  local p = io.popen("find " .. h.q(root .. "/etc/kubernetes/pki") .. " -name '*.key' ! -name sa.key")
  for keyp in p:lines() do
    local crtp = keyp:gsub("%.key$", ".crt")
    local k, c = pki.read_key(h.read(keyp) or ""), pki.read_cert(h.read(crtp) or "")
    if not (k and c and k:matches(c)) then bad[#bad + 1] = keyp end
  end
  p:close()
  return bad
end

describe("the root lock", function()
  local dir, cfg
  before_each(function()
    dir = h.tmpdir()
    cfg = dir .. "/ecdsa.yaml" -- quick keys: the test is about the lock, not RSA
    h.write(cfg, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: ECDSA-P256\n")
  end)
  after_each(function() h.rmrf(dir) end)

  it("stops a second run at once, naming the holder's pid and the root", function()
    local root = dir .. "/root"
    local pid = hold(root, dir)
    local t0 = os.time()
    local code, out, err = h.moonadm { "init", "phase", "certs", "all", "--root", root, "--config", cfg }
    os.execute("kill -9 " .. pid)
    assert.not_equal(0, code, out)
    assert.matches(("another moonadm (pid %d) is working on this root (%s): wait for it"):format(pid, root), err, 1, true)
    assert.is_true(os.time() - t0 < 5, "it does not wait")
    assert.is_nil(h.read(root .. "/etc/kubernetes/pki/ca.crt"), "it wrote nothing")
  end)

  it("is free once its holder is killed (-9): the next run takes it and removes the file", function()
    local root = dir .. "/root"
    local pid = hold(root, dir)
    os.execute("kill -9 " .. pid .. "; sleep 0.2")
    assert.truthy(h.read(root .. "/etc/kubernetes/.moonadm.lock"), "a crashed holder leaves the file")
    local code, _, err = h.moonadm { "init", "phase", "certs", "all", "--root", root, "--config", cfg }
    assert.equal(0, code, err)
    assert.is_nil(h.read(root .. "/etc/kubernetes/.moonadm.lock"))
  end)

  it("is taken by certs renew and kubeadm's other writers; read-only commands run beside a holder", function()
    local root = dir .. "/root"
    assert.equal(0, (h.moonadm { "init", "phase", "certs", "all", "--root", root, "--config", cfg }))
    local pid = hold(root, dir)
    for _, args in ipairs {
      { "certs", "renew", "apiserver" }, { "certs", "generate-csr" }, { "reset", "-f" },
      { "init", "phase", "kubeconfig", "admin" }, { "upgrade", "node", "phase", "control-plane" },
    } do
      args[#args + 1] = "--root"
      args[#args + 1] = root
      local code, _, err = h.moonadm(args)
      assert.not_equal(0, code, table.concat(args, " "))
      assert.matches(("another moonadm (pid %d)"):format(pid), err, 1, true)
    end
    for _, args in ipairs { { "certs", "check-expiration" }, { "version" }, { "init", "--help" },
      { "init", "--dry-run", "--ignore-preflight-errors", "all" }, { "config", "print", "init-defaults" } } do
      args[#args + 1] = "--root"
      args[#args + 1] = root
      local _, _, err = h.moonadm(args)
      assert.not_matches("another moonadm", err, 1, true)
    end
    os.execute("kill -9 " .. pid)
  end)

  it("two concurrent runs, 20 rounds: one wins, the other names it, and every key matches its certificate", function()
    local lost = 0
    for round = 1, 20 do
      local root = ("%s/r%d"):format(dir, round)
      local sh = ([[
b=%s; r=%s; d=%s; c=%s
$b init phase certs all --root "$r" --config "$c" >"$d/o1" 2>&1 & p1=$!
$b init phase certs all --root "$r" --config "$c" >"$d/o2" 2>&1 & p2=$!
wait $p1; c1=$?; wait $p2; c2=$?
echo "$p1 $c1 $p2 $c2"]]):format(h.q(h.bin), h.q(root), h.q(dir), h.q(cfg))
      local p = io.popen(sh)
      local p1, c1, p2, c2 = p:read("l"):match("^(%d+) (%d+) (%d+) (%d+)$")
      p:close()
      local outs = { h.read(dir .. "/o1"), h.read(dir .. "/o2") }
      local pids, codes = { p1, p2 }, { tonumber(c1), tonumber(c2) }
      assert.is_true(codes[1] == 0 or codes[2] == 0, "one of them wins:\n" .. outs[1] .. outs[2])
      for i = 1, 2 do
        if codes[i] ~= 0 then
          lost = lost + 1
          assert.matches(("another moonadm (pid %s) is working on this root (%s)"):format(pids[3 - i], root), outs[i], 1, true)
        end
      end
      assert.same({}, matching(root))
      assert.is_nil(h.read(root .. "/etc/kubernetes/.moonadm.lock"))
    end
    print(("\n[root_lock_spec] 20 rounds: the second run was stopped by the lock in %d"):format(lost))
  end)
end)
