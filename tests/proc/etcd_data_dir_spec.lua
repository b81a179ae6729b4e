-- etcd/data_dir.lua: the upgrade's backup of a local etcd's data dir and its restore in place,
-- where the data dir is a mount point (issue 46, defect 0: the rollback emptied /var/lib/etcd,
-- failed to remove the mount point and never copied the backup back).
local h = require "helpers"
local fs = require "moonadm.fs"
local data_dir = require "etcd.data_dir"

local function tree(dir)
  local out = {}
  local p = io.popen("cd " .. h.q(dir) .. " && find . -type f | sort | xargs -r sha256sum")
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return table.concat(out, "\n")
end

local function is_root()
  local p = io.popen("id -u")
  local u = p:read("l")
  p:close()
  return u == "0"
end

describe("etcd data dir restore", function()
  local root, mounted
  local DDIR, BACKUP, KEEP = "/var/lib/etcd", "/etc/kubernetes/tmp/kubeadm-backup-etcd-t/etcd",
    "/etc/kubernetes/tmp/kubeadm-backup-etcd-t/etcd-failed"

  before_each(function()
    root = h.tmpdir()
    os.execute("mkdir -p " .. h.q(root .. DDIR))
    -- the data dir on a file system of its own, as etcd's docs advise (and as in the lab)
    mounted = is_root() and os.execute("mount -t tmpfs -o size=16m moonadm-spec " .. h.q(root .. DDIR) .. " 2>/dev/null")
    h.write(root .. DDIR .. "/member/snap/db", ("bolt"):rep(1000))
    h.write(root .. DDIR .. "/member/wal/0000000000000000-0000000000000000.wal", "wal-1")
    fs.set_root(root)
  end)

  after_each(function()
    fs.set_root("/")
    if mounted then os.execute("umount " .. h.q(root .. DDIR)) end
    h.rmrf(root)
  end)

  it("backs up, then restores over the failed data in place, keeping the failed data beside the backup", function()
    local before = tree(root .. DDIR)
    local n = assert(data_dir.backup(DDIR, BACKUP))
    assert.equal(2, n)
    -- the failed etcd rewrote the db, added a WAL segment and a file of its own
    h.write(root .. DDIR .. "/member/snap/db", "corrupt")
    h.write(root .. DDIR .. "/member/wal/0000000000000001-0000000000000009.wal", "wal-2")
    h.write(root .. DDIR .. "/stray", "x")
    local failed = tree(root .. DDIR)
    assert(data_dir.restore(DDIR, BACKUP, n, KEEP))
    assert.equal(before, tree(root .. DDIR))
    assert.equal(failed, tree(root .. KEEP))
    assert.is_nil(h.read(root .. DDIR .. "/stray"))
    assert.is_false(fs.exists(DDIR .. "/" .. data_dir.STAGING))
    if mounted then -- still the mount point: restored inside it
      local _, _, code = os.execute("mountpoint -q " .. h.q(root .. DDIR))
      assert.equal(0, code)
    end
  end)

  it("leaves the data dir as it was when the backup is incomplete", function()
    local n = assert(data_dir.backup(DDIR, BACKUP))
    os.remove(root .. BACKUP .. "/member/wal/0000000000000000-0000000000000000.wal")
    local before = tree(root .. DDIR)
    local ok, err = data_dir.restore(DDIR, BACKUP, n, KEEP)
    assert.is_nil(ok)
    assert.matches("holds 1 files, 2 when it was made %(the data dir is unchanged%)", err)
    assert.equal(before, tree(root .. DDIR))
    assert.is_false(fs.exists(DDIR .. "/" .. data_dir.STAGING))
  end)

  it("converges after a run that died with a half-made staging copy", function()
    local before = tree(root .. DDIR)
    local n = assert(data_dir.backup(DDIR, BACKUP))
    h.write(root .. DDIR .. "/member/snap/db", "corrupt")
    h.write(root .. DDIR .. "/" .. data_dir.STAGING .. "/member/snap/db", "half")
    assert(data_dir.restore(DDIR, BACKUP, n, KEEP))
    assert.equal(before, tree(root .. DDIR))
  end)

  it("refuses to back up an empty data dir", function()
    os.execute("rm -rf " .. h.q(root .. DDIR .. "/member"))
    local n, err = data_dir.backup(DDIR, BACKUP)
    assert.is_nil(n)
    assert.matches("the etcd data dir /var/lib/etcd is empty", err)
  end)
end)

describe("fs.rename", function()
  local root
  before_each(function() root = h.tmpdir(); fs.set_root(root) end)
  after_each(function() fs.set_root("/"); h.rmrf(root) end)

  it("swaps two trees atomically and never replaces an existing one", function()
    h.write(root .. "/a/f", "A")
    h.write(root .. "/b/f", "B")
    assert(fs.rename("/a", "/b", true))
    assert.equal("B", h.read(root .. "/a/f"))
    assert.equal("A", h.read(root .. "/b/f"))
    local ok, err = fs.rename("/a", "/b")
    assert.is_nil(ok)
    assert.matches("rename .*/a to .*/b: File exists", err)
    ok, err = fs.rename("/a", "/c", true)
    assert.is_nil(ok)
    assert.matches("exchange .*/a with .*/c", err)
    assert(fs.rename("/a", "/c"))
    assert.equal("B", h.read(root .. "/c/f"))
  end)
end)
