-- Issue 46, defect 5: the patches directory (--patches, patches.directory) had no owner or mode check:
-- a patch owned by nobody in a 0777 dir rewrote the kube-apiserver's command, which the kubelet runs
-- as root. Patches now get the site scripts' trust check (framework/trust.lua): the dir, every
-- file in it, every directory and symlink on the way, owned by root or the invoking user and writable
-- by the owner only; --insecure-scripts (the one override of site input) warns instead.
local h = require "helpers"
local patches = require "manifests.patches"

local NOBODY <const> = 65534
local HOSTILE = "spec:\n  containers:\n  - name: kube-apiserver\n    command: [/bin/sh, -c, 'echo pwned > /tmp/x']\n"

describe("regress 042: the patches directory is trusted like site scripts", function()
  local dir, root
  before_each(function()
    dir = h.tmpdir()
    root = dir .. "/root"
  end)
  after_each(function() h.rmrf(dir) end)

  local function apiserver(pdir, ...)
    return h.moonadm { "init", "phase", "control-plane", "apiserver", "--patches", pdir, "--root", root,
      "--apiserver-advertise-address", "192.0.2.1", ... }
  end
  local function manifest() return h.read(root .. "/etc/kubernetes/manifests/kube-apiserver.yaml") end

  it("a patch owned by nobody in a 0777 dir (the issue's reproduction): refused, no manifest written", function()
    local pdir = dir .. "/patches"
    h.write(pdir .. "/kube-apiserver+merge.yaml", HOSTILE)
    h.sh_ok(("chmod 0777 %s && chown %d %s"):format(h.q(pdir), NOBODY, h.q(pdir .. "/kube-apiserver+merge.yaml")))
    local code, out, err = apiserver(pdir)
    assert.not_equal(0, code, out .. err)
    assert.matches(("refusing the patches dir %s: %s is writable by others (mode 0777); fix: chmod go-w %s")
      :format(pdir, pdir, pdir), err, 1, true)
    assert.matches("--insecure-scripts", err, 1, true)
    assert.is_nil(manifest(), "no manifest")
    -- the dir made 0755: the file's owner still refuses it
    h.sh_ok("chmod 0755 " .. h.q(pdir))
    code, out, err = apiserver(pdir)
    assert.not_equal(0, code, out .. err)
    assert.matches(("%s is owned by uid %d, neither root nor the invoking user")
      :format(pdir .. "/kube-apiserver+merge.yaml", NOBODY), err, 1, true)
    assert.is_nil(manifest(), "no manifest")
  end)

  it("the same through patches.directory in --config, and through a patch linked into a 0777 dir", function()
    local pdir, evil = dir .. "/patches", dir .. "/evil"
    h.write(evil .. "/p.yaml", HOSTILE)
    h.sh_ok(("chmod 0777 %s && mkdir -m 0755 %s && ln -s %s %s"):format(h.q(evil), h.q(pdir), h.q(evil .. "/p.yaml"),
      h.q(pdir .. "/kube-apiserver+merge.yaml")))
    h.write(dir .. "/k.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n" ..
      "  advertiseAddress: 192.0.2.1\npatches:\n  directory: " .. pdir .. "\n")
    local code, out, err = h.moonadm { "init", "phase", "control-plane", "apiserver", "--root", root, "--config", dir .. "/k.yaml" }
    assert.not_equal(0, code, out .. err)
    assert.matches(("refusing the patches dir %s: %s is writable by others (mode 0777), reached through the symlink %s -> %s")
      :format(pdir, evil, pdir .. "/kube-apiserver+merge.yaml", evil .. "/p.yaml"), err, 1, true)
    assert.is_nil(manifest(), "no manifest")
    -- and patches.load itself (every caller goes through it)
    local ok, lerr = pcall(patches.load, pdir)
    assert.is_false(ok)
    assert.matches("refusing the patches dir " .. pdir, lerr, 1, true)
  end)

  it("--insecure-scripts warns and applies; a safe dir applies without a word", function()
    local pdir = dir .. "/patches"
    h.write(pdir .. "/kube-apiserver+merge.yaml", "metadata:\n  labels:\n    patched: yes-it-is\n")
    h.sh_ok("chmod 0775 " .. h.q(pdir))
    local code, out, err = apiserver(pdir, "--insecure-scripts")
    assert.equal(0, code, out .. err)
    assert.matches(("[WARNING] --insecure-scripts: applying the patches dir %s anyway: %s is writable by its group (mode 0775)")
      :format(pdir, pdir), err, 1, true)
    assert.matches("patched: yes-it-is", manifest(), 1, true)
    h.sh_ok("chmod 0755 " .. h.q(pdir) .. " && rm -rf " .. h.q(root))
    code, out, err = apiserver(pdir)
    assert.equal(0, code, out .. err)
    assert.is_nil(err:find("WARNING", 1, true), err)
    assert.matches("patched: yes-it-is", manifest(), 1, true)
  end)
end)
