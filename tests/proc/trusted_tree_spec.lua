-- Issue 18.8: moonadm trusted whatever it found under the root: in a world-writable root a CA planted
-- by user nobody was adopted and every leaf signed by it; keys at 0644/0666 and a 0777 journal dir were
-- reused as they were. Before a command that changes the node reads its tree, the root, the dirs down to
-- the PKI and journal dirs, and their files must be owned by root or the invoking user and writable by
-- the owner only, private keys readable by the owner only; else the run is refused naming the file, its
-- mode or owner and the fix. --insecure-root warns instead. Also: symlinks in the tree.
local h = require "helpers"

local NOBODY <const> = 65534

describe("the trusted tree under --root", function()
  local dir, cfg, root
  before_each(function()
    dir = h.tmpdir()
    root = dir .. "/root"
    cfg = dir .. "/ecdsa.yaml"
    h.write(cfg, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: ECDSA-P256\n")
  end)
  after_each(function() h.rmrf(dir) end)

  local function certs(...)
    local args = { "init", "phase", "certs", "all", "--root", root, "--config", cfg, ... }
    return h.moonadm(args)
  end
  local function pki(f) return root .. "/etc/kubernetes/pki/" .. f end

  it("takes a fresh mkdtemp root (0700) and a 0755 one", function()
    local code, _, err = certs()
    assert.equal(0, code, err)
    assert.equal("", (err:gsub("[^\n]*WARNING[^\n]*\n", "")))
  end)

  it("refuses a world-writable root, naming it, its mode and the fix", function()
    h.sh_ok("mkdir -p " .. h.q(root) .. " && chmod 0777 " .. h.q(root))
    local code, _, err = certs()
    assert.not_equal(0, code)
    assert.matches(("refusing the root %s"):format(root), err, 1, true)
    assert.matches(("%s is writable by others (mode 0777): chmod go-w %s"):format(root, root), err, 1, true)
    assert.matches("--insecure-root", err, 1, true)
    assert.is_nil(h.read(pki("ca.crt")), "nothing written")
  end)

  it("refuses a CA planted by another user (nobody), naming the owner", function()
    assert.equal(0, (certs()))
    h.sh_ok(("chown %d %s %s"):format(NOBODY, h.q(pki("ca.crt")), h.q(pki("ca.key"))))
    os.remove(pki("apiserver.crt")); os.remove(pki("apiserver.key"))
    local code, _, err = certs()
    assert.not_equal(0, code)
    assert.matches(("%s is owned by uid %d, neither root nor the invoking user"):format(pki("ca.crt"), NOBODY), err, 1, true)
    assert.is_nil(h.read(pki("apiserver.crt")), "no leaf signed by it")
  end)

  it("refuses private keys others can read (0644) or write (0666), and a 0777 journal dir", function()
    assert.equal(0, (certs()))
    h.sh_ok("chmod 0644 " .. h.q(pki("ca.key")))
    h.sh_ok("chmod 0666 " .. h.q(pki("etcd/peer.key")))
    h.sh_ok("chmod 0640 " .. h.q(pki("sa.key")))
    h.sh_ok("chmod 0777 " .. h.q(root .. "/var/lib/moonadm/journal"))
    local code, _, err = certs()
    assert.not_equal(0, code)
    assert.matches(("%s is a private key readable by others (mode 0644): chmod 0600 %s"):format(pki("ca.key"), pki("ca.key")), err, 1, true)
    assert.matches(("%s is writable by others (mode 0666)"):format(pki("etcd/peer.key")), err, 1, true)
    assert.matches(("%s is a private key readable by its group (mode 0640)"):format(pki("sa.key")), err, 1, true)
    assert.matches(("%s/var/lib/moonadm/journal is writable by others (mode 0777)"):format(root), err, 1, true)
    -- the same from every command that changes the node
    for _, args in ipairs { { "certs", "renew", "apiserver" }, { "init", "phase", "kubeconfig", "admin" },
      { "kubeconfig", "user", "--client-name", "x" } } do
      args[#args + 1] = "--root"
      args[#args + 1] = root
      local c, _, e = h.moonadm(args)
      assert.not_equal(0, c, table.concat(args, " "))
      assert.matches("refusing the root", e, 1, true)
    end
  end)

  it("--insecure-root warns and goes on", function()
    assert.equal(0, (certs()))
    h.sh_ok("chmod 0644 " .. h.q(pki("ca.key")))
    local code, _, err = certs("--insecure-root")
    assert.equal(0, code, err)
    assert.matches("[WARNING] --insecure-root: trusting the node's files under " .. root, err, 1, true)
  end)

  it("reset still cleans a tree with readable keys (it deletes them, trusts none)", function()
    assert.equal(0, (certs()))
    h.sh_ok("chmod 0644 " .. h.q(pki("ca.key")))
    local code, _, err = h.moonadm { "reset", "-f", "--root", root, "--node-runtime", "none" }
    assert.equal(0, code, err)
    assert.is_nil(h.read(pki("ca.key")))
  end)

  it("a symlinked pki dir: followed when it points to a safe dir, refused when to a world-writable one", function()
    local elsewhere = dir .. "/pki-elsewhere"
    h.sh_ok("mkdir -p " .. h.q(elsewhere) .. " " .. h.q(root .. "/etc/kubernetes") .. " && ln -s " .. h.q(elsewhere) .. " " .. h.q(root .. "/etc/kubernetes/pki"))
    local code, _, err = certs()
    assert.equal(0, code, err)
    assert.truthy(h.read(elsewhere .. "/ca.key"), "written through the operator's symlink")
    h.sh_ok("chmod 0777 " .. h.q(elsewhere))
    code, _, err = certs()
    assert.not_equal(0, code)
    assert.matches(("%s (a symlink; its target) is writable by others (mode 0777)"):format(root .. "/etc/kubernetes/pki"), err, 1, true)
    h.sh_ok("chmod 0755 " .. h.q(elsewhere))
    h.sh_ok(("chown -h %d %s"):format(NOBODY, h.q(root .. "/etc/kubernetes/pki")))
    code, _, err = certs()
    assert.not_equal(0, code)
    assert.matches(("%s is a symlink owned by uid %d"):format(root .. "/etc/kubernetes/pki", NOBODY), err, 1, true)
  end)

  it("a key that is a symlink to /etc/shadow: refused, and /etc/shadow is never read into a run or written", function()
    local before = h.sha256(h.read("/etc/shadow"))
    h.sh_ok("mkdir -p " .. h.q(pki("")) .. " && ln -s /etc/shadow " .. h.q(pki("ca.key")))
    local code, out, err = certs()
    assert.not_equal(0, code)
    assert.matches(("%s (a symlink; its target) is a private key readable by its group (mode 0640)"):format(pki("ca.key")), err, 1, true)
    assert.not_matches("root:[^:\n]*:%d+:", out .. err) -- no /etc/shadow line in the output
    assert.equal(before, h.sha256(h.read("/etc/shadow")))
    -- with --insecure-root the key is unreadable as a key: an error, and still no write through the link
    code = certs("--insecure-root")
    assert.not_equal(0, code)
    assert.equal(before, h.sha256(h.read("/etc/shadow")))
  end)

  it("a run by user nobody on a root nobody owns is the invoking user's: accepted", function()
    h.sh_ok("mkdir -p " .. h.q(root) .. " && chown " .. NOBODY .. " " .. h.q(root) .. " && chmod 0755 " .. h.q(dir))
    -- nobody runs a copy in this 0755 dir: the checkout may sit where only root may enter (a clone
    -- under `mktemp -d`)
    local bin = dir .. "/moonadm"
    h.sh_ok("cp " .. h.q(h.bin) .. " " .. h.q(bin) .. " && chmod 0755 " .. h.q(bin))
    local code = os.execute(("runuser -u nobody -- %s init phase certs ca --root %s --config %s >/dev/null 2>&1")
      :format(h.q(bin), h.q(root), h.q(cfg)))
    assert.is_true(code == true, "nobody's own root")
    assert.truthy(h.read(pki("ca.key")))
    -- and root running there: nobody's files are not root's or the invoking user's
    local c, _, err = certs()
    assert.not_equal(0, c)
    assert.matches("owned by uid " .. NOBODY, err, 1, true)
  end)
end)

-- Issue 46 (defects 2, 5, 7): site paths (scripts, phase and flow files, patches, exported trees) are
-- judged by framework.trust.problem_of, which resolves a path as the kernel does and judges every
-- directory and symlink on the way. The commands' refusals are in tests/regress/041-043.
describe("trust.problem_of: a site path, resolved and judged step by step", function()
  local trust = require "framework.trust"
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmrf(dir) end)

  it("follows links as the kernel does: '..' from the link's real dir, relative and absolute targets", function()
    h.sh_ok(("mkdir -p %s/a/b %s/c && touch %s/c/f.lua && ln -s ../../c %s/a/b/up && ln -s %s/a/b/up/f.lua %s/abs")
      :format(dir, dir, dir, dir, dir, dir))
    assert.equal(dir .. "/c/f.lua", trust.problem_of(dir .. "/a/b/up/f.lua"))
    assert.equal(dir .. "/c/f.lua", trust.problem_of(dir .. "/abs"))
    assert.is_nil(trust.problem_of(dir .. "/a/b/up/missing.lua"), "missing: nil, no problem")
    h.sh_ok(("chmod 0777 %s/c"):format(dir))
    local real, why, fix = trust.problem_of(dir .. "/abs")
    assert.is_nil(real)
    assert.equal(("%s/c is writable by others (mode 0777), reached through the symlink %s/abs -> %s/a/b/up/f.lua")
      :format(dir, dir, dir), why)
    assert.equal(("chmod go-w %s/c"):format(dir), fix)
  end)

  it("a link loop ends with a message; a root-owned sticky dir passes on the way, not at the end", function()
    h.sh_ok(("ln -s loop2 %s/loop1 && ln -s loop1 %s/loop2"):format(dir, dir))
    local _, why = trust.problem_of(dir .. "/loop1")
    assert.matches("too many levels of symbolic links", why, 1, true)
    h.sh_ok(("mkdir -m 1777 %s/sticky && mkdir -m 0755 %s/sticky/mine"):format(dir, dir))
    assert.equal(dir .. "/sticky/mine", trust.problem_of(dir .. "/sticky/mine", { tree = true }))
    _, why = trust.problem_of(dir .. "/sticky", { tree = true })
    assert.matches(dir .. "/sticky is writable by others (mode 1777)", why, 1, true)
    assert.equal(dir .. "/sticky", trust.problem_of(dir .. "/sticky", { sticky_end = true }))
  end)

  it("follows at most 40 links, the kernel's own limit: a chain of 40 resolves, of 41 is refused", function()
    h.sh_ok(("touch %s/f && ln -s f %s/l0"):format(dir, dir))
    for i = 1, 40 do h.sh_ok(("ln -s l%d %s/l%d"):format(i - 1, dir, i)) end
    assert.equal(dir .. "/f", trust.problem_of(dir .. "/l39"))
    local real, why = trust.problem_of(dir .. "/l40")
    assert.is_nil(real)
    assert.matches("too many levels of symbolic links", why, 1, true)
  end)

  it("with links = false, any symlink under the tree is a problem; without, its target is judged", function()
    h.sh_ok(("mkdir -p %s/t/sub && ln -s %s/t/sub %s/t/link"):format(dir, dir, dir))
    assert.equal(dir .. "/t", trust.problem_of(dir .. "/t", { tree = true }))
    local _, why, fix = trust.problem_of(dir .. "/t", { tree = true, links = false })
    assert.equal(dir .. "/t/link is a symlink moonadm did not make", why)
    assert.matches("rm " .. dir .. "/t/link", fix, 1, true)
  end)
end)
