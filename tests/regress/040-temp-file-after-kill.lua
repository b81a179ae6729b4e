-- Issue 18.9: a run killed (-9) between creating the temp file of an atomic write and renaming it left
-- `.init.json.tmp-XXXXXX` behind, and --resume kept it until the next reset. The next run that changes
-- the node removes such files (moonadm's own pattern only, not held by a live writer, from an earlier
-- second) in the dirs runs write to; other files stay, and --dry-run touches nothing.
local h = require "helpers"

describe("regress 040: temp files of a killed run", function()
  local function plant(path)
    h.write(path, "half")
    assert(os.execute("touch -d '-1 minute' " .. h.q(path)))
  end

  it("are removed by the next run, and only they", function()
    local dir = h.tmpdir()
    local root = dir .. "/root"
    local cfg = dir .. "/c.yaml"
    h.write(cfg, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: ECDSA-P256\n")
    local dead = { "/var/lib/moonadm/journal/.init.json.tmp-AbC123", "/etc/kubernetes/pki/.ca.key.tmp-x9Y8z7",
      "/etc/kubernetes/pki/etcd/.peer.crt.tmp-Q1w2E3", "/etc/kubernetes/.admin.conf.tmp-zzzzzz",
      "/etc/kubernetes/manifests/.etcd.yaml.tmp-000aaa", "/var/lib/kubelet/.config.yaml.tmp-K3l4M5" }
    local kept = { "/etc/kubernetes/pki/.notes.tmp-short", "/etc/kubernetes/pki/ca.key.tmp-AbC123",
      "/etc/kubernetes/keep-me.txt", "/var/lib/moonadm/journal/.x.tmp-AbC12!" }
    for _, p in ipairs(dead) do plant(root .. p) end
    for _, p in ipairs(kept) do plant(root .. p) end
    os.execute("chmod 0700 " .. h.q(root .. "/var/lib/moonadm/journal") .. " " .. h.q(root .. "/var/lib/kubelet"))
    -- --dry-run changes nothing
    local code, _, err = h.moonadm { "init", "phase", "certs", "all", "--root", root, "--config", cfg, "--dry-run" }
    assert.equal(0, code, err)
    for _, p in ipairs(dead) do assert.truthy(h.read(root .. p), p) end
    local out
    code, out, err = h.moonadm { "init", "phase", "certs", "all", "--root", root, "--config", cfg }
    assert.equal(0, code, err)
    for _, p in ipairs(dead) do assert.is_nil(h.read(root .. p), p .. " is removed") end
    for _, p in ipairs(kept) do assert.truthy(h.read(root .. p), p .. " is kept") end
    assert.matches("removed %d temp file%(s%) an interrupted run left", out .. err)
    h.rmrf(dir)
  end)
end)
