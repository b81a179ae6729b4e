-- moonadm reset on temp roots (node runtime "none", no cluster reachable): what it deletes, what it
-- keeps, --dry-run, idempotency, the prompt; and its modules with fakes (etcd member removal, the
-- data dir's sources, waiting for the components, mount points).
local fs = require "moonadm.fs"
local h = require "helpers"

local ETCD_MANIFEST = [[
apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --initial-advertise-peer-urls=https://192.0.2.199:2380
    - --data-dir=/srv/etcd-data
    name: etcd
  volumes:
  - hostPath:
      path: /srv/etcd-data
      type: DirectoryOrCreate
    name: etcd-data
]]

-- A control plane's files, as init leaves them (plus what reset must keep).
local function populate(root)
  local files = {
    "/etc/kubernetes/manifests/etcd.yaml", "/etc/kubernetes/manifests/kube-apiserver.yaml",
    "/etc/kubernetes/manifests/kube-controller-manager.yaml", "/etc/kubernetes/manifests/kube-scheduler.yaml",
    "/var/lib/kubelet/instance-config.yaml", "/var/lib/kubelet/kubeadm-flags.env", "/var/lib/kubelet/config.yaml",
    "/var/lib/kubelet/pki/kubelet-client-current.pem", "/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/pki/etcd/ca.key",
    "/etc/kubernetes/admin.conf", "/etc/kubernetes/super-admin.conf", "/etc/kubernetes/kubelet.conf",
    "/etc/kubernetes/bootstrap-kubelet.conf", "/etc/kubernetes/controller-manager.conf", "/etc/kubernetes/scheduler.conf",
    "/etc/kubernetes/tmp/kubeadm-backup-etcd-x/member/snap", "/srv/etcd-data/member/wal/0.wal",
    "/var/lib/moonadm/journal/init.json",
    -- kept
    "/etc/cni/net.d/10-net.conflist", "/etc/kubernetes/keep-me.txt", "/root/.kube/config",
  }
  for _, f in ipairs(files) do h.write(root .. f, f == "/etc/kubernetes/manifests/etcd.yaml" and ETCD_MANIFEST or "x") end
end

local snapshot = h.snapshot

local function reset(root, extra, stdin, phase)
  local args = { "reset", "--root", root, "--node-runtime", "none", "--kubeconfig", "/etc/kubernetes/admin.conf" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  if phase then table.insert(args, 2, "phase") table.insert(args, 3, phase) end
  if stdin == nil then return h.moonadm(args) end
  local out, err = os.tmpname(), os.tmpname()
  local parts = { h.q(h.bin) }
  for _, a in ipairs(args) do parts[#parts + 1] = h.q(a) end
  local _, _, code = os.execute(table.concat(parts, " ") .. " <" .. stdin .. " >" .. out .. " 2>" .. err)
  return code, h.read(out), h.read(err)
end

describe("moonadm reset on a temp root", function()
  local root
  before_each(function() root = h.tmpdir() populate(root) end)
  after_each(function() h.rmrf(root) end)

  it("without the cluster or its local etcd it refuses to delete the etcd data, stopping and deleting nothing", function()
    local before = snapshot(root)
    local code, out, err = reset(root, { "--force" })
    assert.equal(1, code, out .. err)
    assert.matches("error execution phase remove-etcd-member: refusing to delete the etcd data directory /srv/etcd-data: " ..
      "this member may still be in the etcd cluster", err, 1, true)
    assert.matches("through the local etcd: ", err, 1, true)
    assert.matches("--unsafe-wipe-etcd-data deletes the data anyway", err, 1, true)
    assert.equal(before, snapshot(root))
  end)

  it("deletes kubeadm's files and dirs' contents, the etcd data dir from the manifest, the journal; keeps the rest", function()
    local code, out, err = reset(root, { "--force", "--unsafe-wipe-etcd-data" })
    assert.equal(0, code, out .. err)
    for _, gone in ipairs { "/etc/kubernetes/manifests/etcd.yaml", "/var/lib/kubelet/instance-config.yaml",
      "/var/lib/kubelet/kubeadm-flags.env", "/var/lib/kubelet/config.yaml", "/var/lib/kubelet/pki",
      "/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/pki/etcd", "/etc/kubernetes/admin.conf",
      "/etc/kubernetes/super-admin.conf", "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/bootstrap-kubelet.conf",
      "/etc/kubernetes/controller-manager.conf", "/etc/kubernetes/scheduler.conf", "/srv/etcd-data/member",
      "/var/lib/moonadm" } do
      assert.is_nil(io.open(root .. gone, "r"), gone .. " should be gone")
    end
    -- the dirs themselves stay (kubeadm's CleanDir), and so does what reset does not own
    for _, kept in ipairs { "/etc/kubernetes/manifests", "/var/lib/kubelet", "/etc/kubernetes/pki", "/srv/etcd-data",
      "/etc/cni/net.d/10-net.conflist", "/etc/kubernetes/keep-me.txt", "/root/.kube/config",
      "/etc/kubernetes/tmp/kubeadm-backup-etcd-x/member/snap" } do
      assert.truthy(fs.stat(root .. kept) or io.open(root .. kept, "r"), kept .. " should stay")
    end
    assert.matches("[reset] Deleting contents of directories: [/etc/kubernetes/manifests /var/lib/kubelet /etc/kubernetes/pki]", out, 1, true)
    assert.matches("[reset] Deleting files: [/etc/kubernetes/admin.conf /etc/kubernetes/super-admin.conf " ..
      "/etc/kubernetes/kubelet.conf /etc/kubernetes/bootstrap-kubelet.conf /etc/kubernetes/controller-manager.conf " ..
      "/etc/kubernetes/scheduler.conf]", out, 1, true)
    assert.matches("[reset] Deleted contents of the etcd data directory: /srv/etcd-data", out, 1, true)
    assert.matches("does not perform cleanup of CNI plugin configuration", out, 1, true)
    assert.matches("$HOME/.kube/config", out, 1, true)
  end)

  it("is idempotent: a second reset succeeds and changes nothing", function()
    assert.equal(0, (reset(root, { "--force", "--unsafe-wipe-etcd-data" })))
    local before = snapshot(root)
    local code, out, err = reset(root, { "--force" })
    assert.equal(0, code, out .. err)
    assert.equal(before, snapshot(root))
    assert.not_matches("Deleted contents", out, 1, true)
    assert.not_matches("journal directory", out, 1, true)
  end)

  it("--dry-run changes nothing and says what it would do", function()
    local before = snapshot(root)
    local code, out, err = reset(root, { "--force", "--dry-run", "--cleanup-tmp-dir" })
    assert.equal(0, code, out .. err)
    assert.equal(before, snapshot(root))
    assert.matches("[reset] Would delete contents of directories: [/etc/kubernetes/manifests /var/lib/kubelet " ..
      "/etc/kubernetes/pki /etc/kubernetes/tmp]", out, 1, true)
    assert.matches("[reset] Would delete files: [/etc/kubernetes/admin.conf", out, 1, true)
    assert.matches("[reset] Would remove the static pod manifests", out, 1, true)
    assert.matches("[reset] Would delete contents of the etcd data directory: /srv/etcd-data", out, 1, true)
    assert.matches("Would delete moonadm's journal directory /var/lib/moonadm", out, 1, true)
  end)

  it("--cleanup-tmp-dir also empties /etc/kubernetes/tmp", function()
    assert.equal(0, (reset(root, { "--force", "--cleanup-tmp-dir", "--unsafe-wipe-etcd-data" })))
    assert.is_nil(io.open(root .. "/etc/kubernetes/tmp/kubeadm-backup-etcd-x", "r"))
    assert.truthy(fs.stat(root .. "/etc/kubernetes/tmp"))
  end)

  it("without --force and without a terminal it refuses, touching nothing", function()
    local before = snapshot(root)
    local code, out, err = reset(root, {}, "/dev/null")
    assert.equal(1, code, out .. err)
    assert.matches("standard input is not a terminal", err, 1, true)
    assert.matches("--force", err, 1, true)
    assert.equal(before, snapshot(root))
  end)

  it("reset phase preflight runs alone (preparing the reset itself) and touches nothing", function()
    local before = snapshot(root)
    local code, out, err = reset(root, { "--force" }, nil, "preflight")
    assert.equal(0, code, out .. err)
    assert.matches("[preflight] Running pre-flight checks", out .. err, 1, true)
    assert.is_nil((out .. err):find("without declaring it", 1, true))
    assert.equal(before, snapshot(root))
  end)

  it("takes force, cleanupTmpDir and certificatesDir from a ResetConfiguration", function()
    h.write(root .. "/etc/custom-pki/ca.crt", "x")
    h.write(root .. "/reset.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ResetConfiguration\nforce: true\n" ..
      "cleanupTmpDir: true\ncertificatesDir: /etc/custom-pki\n")
    local code, out, err = reset(root, { "--config", root .. "/reset.yaml", "--unsafe-wipe-etcd-data" }, "/dev/null")
    assert.equal(0, code, out .. err)
    assert.is_nil(io.open(root .. "/etc/custom-pki/ca.crt", "r"))
    assert.truthy(io.open(root .. "/etc/kubernetes/pki/ca.crt", "r")) -- not the dir in use
    assert.is_nil(io.open(root .. "/etc/kubernetes/tmp/kubeadm-backup-etcd-x", "r"))
    assert.matches("Cleaning a non-default certificates directory: \"/etc/custom-pki\"", err, 1, true)
  end)

  it("reset phase cleanup-node runs alone and prints no closing note; it keeps the data of a member not removed", function()
    local code, out, err = reset(root, {}, nil, "cleanup-node")
    assert.equal(0, code, out .. err)
    assert.is_nil(io.open(root .. "/etc/kubernetes/admin.conf", "r"))
    assert.not_matches("CNI plugin", out, 1, true)
    assert.truthy(io.open(root .. "/srv/etcd-data/member/wal/0.wal", "r"), "the etcd data went without its member removed")
    assert.matches("Keeping the etcd data directory /srv/etcd-data: this node's etcd member was not removed", err, 1, true)
    -- --skip-phases remove-etcd-member is the same
    populate(root)
    code, out, err = reset(root, { "--force", "--skip-phases", "remove-etcd-member" })
    assert.equal(0, code, out .. err)
    assert.truthy(io.open(root .. "/srv/etcd-data/member/wal/0.wal", "r"))
  end)

  it("a member an earlier reset removed (its marker in the data dir) lets the data go without the cluster", function()
    h.write(root .. "/srv/etcd-data/.moonadm-member-removed", "removed")
    local code, out, err = reset(root, { "--force" })
    assert.equal(0, code, out .. err)
    assert.matches("was removed from the cluster by an earlier reset", out, 1, true)
    assert.is_nil(io.open(root .. "/srv/etcd-data/member", "r"))
    assert.is_nil(io.open(root .. "/srv/etcd-data/.moonadm-member-removed", "r"))
  end)
end)

describe("reset modules", function()
  local root
  before_each(function() root = h.tmpdir() fs.set_root(root) end)
  after_each(function() fs.set_root("/") h.rmrf(root) end)

  it("etcd data dir: the cluster's, else the manifest's etcd-data hostPath, else /var/lib/etcd; external: none", function()
    local etcd = require "etcd.local_member"
    assert.same({ "/var/lib/etcd", "default" }, { etcd.data_dir(nil) })
    h.write(root .. "/etc/kubernetes/manifests/etcd.yaml", ETCD_MANIFEST)
    assert.same({ "/srv/etcd-data", "manifest" }, { etcd.data_dir(nil) })
    assert.same({ "/data/e", "cluster" }, { etcd.data_dir { etcd = { ["local"] = { dataDir = "/data/e" } } } })
    assert.is_nil((etcd.data_dir { etcd = { external = { endpoints = { "https://x:2379" } } } }))
    h.write(root .. "/etc/kubernetes/manifests/etcd.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n")
    local dir, why = etcd.data_dir(nil)
    assert.is_nil(dir)
    assert.matches("invalid etcd pod manifest", why, 1, true)
  end)

  it("the advertise address falls back to the local manifests", function()
    local data = require "flows.reset.data"
    assert.is_nil(data.advertise_address(nil, nil))
    h.write(root .. "/etc/kubernetes/manifests/etcd.yaml", ETCD_MANIFEST)
    assert.equal("192.0.2.199", (data.advertise_address(nil, nil)))
    h.write(root .. "/etc/kubernetes/manifests/kube-apiserver.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  annotations:\n" ..
      "    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: 192.0.2.123:6443\nspec:\n  containers: []\n")
    assert.equal("192.0.2.123", (data.advertise_address(nil, nil)))
  end)

  local function fake_members(list, remove_result)
    local calls = {}
    return calls, { new = function(o)
      calls.new = o
      return { list = function() return list end,
        remove = function(_, peer) calls.remove = peer return table.unpack(remove_result) end,
        close = function() calls.closed = true end }
    end }
  end

  it("removes this node's member by its peer URL; gone already and last member are fine, at once", function()
    local etcd = require "etcd.local_member"
    local ctx = { cfg = {} }
    local r = { advertise = "192.0.2.133", cert_dir = "/etc/kubernetes/pki" }
    local me = { id_hex = "abc", peer_urls = { "https://192.0.2.133:2380" } }
    local calls, fake = fake_members({ me, { peer_urls = { "https://192.0.2.131:2380" } } }, { "removed" })
    assert.equal("removed", (etcd.remove_member(ctx, r, { members = fake, endpoints = { "https://192.0.2.131:2379" } })))
    assert.equal("https://192.0.2.133:2380", calls.remove)
    assert.same({ "https://192.0.2.131:2379" }, calls.new.endpoints)
    assert.equal("healthcheck", calls.new.client)
    assert.truthy(calls.closed)
    _, fake = fake_members({}, { "not_found" })
    assert.equal("not_found", (etcd.remove_member(ctx, r, { members = fake, endpoints = { "https://x:2379" } })))
    _, fake = fake_members({ me }, { nil, "last", "last_member" })
    assert.equal("last_member", (etcd.remove_member(ctx, r, { members = fake, endpoints = { "https://x:2379" } })))
    _, fake = fake_members({ me }, { nil, "boom", "timeout" })
    assert.same({ "failed", "through the cluster's etcd endpoints: boom; through the local etcd: boom", 1 },
      { etcd.remove_member(ctx, r, { members = fake, endpoints = { "https://x:2379" }, local_endpoints = { "https://l:2379" } }) })
    -- the cluster cannot be read: the local etcd is asked, with this node's certificates
    calls, fake = fake_members({ me, { peer_urls = { "https://192.0.2.131:2380" } } }, { "removed" })
    assert.same({ "removed", "https://192.0.2.133:2380", 2 },
      { etcd.remove_member(ctx, r, { members = fake, local_endpoints = { "https://192.0.2.133:2379" } }) })
    assert.same({ "https://192.0.2.133:2379" }, calls.new.endpoints)
    assert.equal("/etc/kubernetes/pki", calls.new.cert_dir)
    assert.equal("failed", (etcd.remove_member(ctx, {}, {})))
    assert.equal("https://[fd00::3]:2380", etcd.peer_url("fd00::3"))
  end)

  -- right after an init the API may not list the etcd pod yet: a reset of that node must not wait for it
  it("asks the local etcd after one look for the etcd pods, and waits for the pods only if it fails too", function()
    local etcd = require "etcd.local_member"
    local endpoints = require "etcd.endpoints"
    local me = { id_hex = "abc", peer_urls = { "https://192.0.2.133:2380" } }
    local r = { advertise = "192.0.2.133", cert_dir = "/etc/kubernetes/pki", client = {} }
    local local_eps = { "https://192.0.2.133:2379" }
    local looks, orig = {}, endpoints.endpoints_from_pods
    endpoints.endpoints_from_pods = function(_, o)
      looks[#looks + 1] = o.timeout
      return nil, "no etcd pods (component=etcd,tier=control-plane) in kube-system"
    end
    local ok, err = pcall(function()
      local calls, fake = fake_members({ me }, { nil, "last", "last_member" })
      assert.same({ "last_member", "https://192.0.2.133:2380", 1 },
        { etcd.remove_member({ cfg = {} }, r, { members = fake, local_endpoints = local_eps }) })
      assert.same({ 0 }, looks) -- one look, no wait
      assert.same(local_eps, calls.new.endpoints)
      looks = {}
      _, fake = fake_members({ me }, { nil, "boom", "timeout" })
      local how, detail = etcd.remove_member({ cfg = {} }, r, { members = fake, local_endpoints = local_eps })
      assert.equal("failed", how)
      assert.same({ 0, etcd.ENDPOINTS_TIMEOUT }, looks) -- the local etcd failed: the pods waited for
      assert.matches("through the local etcd: boom", detail, 1, true)
    end)
    endpoints.endpoints_from_pods = orig
    assert(ok, err)
  end)

  it("a member removed through its own etcd, which stopped before it answered, is confirmed by the others", function()
    local etcd = require "etcd.local_member"
    local me = { id_hex = "abc", peer_urls = { "https://192.0.2.133:2380" }, client_urls = { "https://192.0.2.133:2379" } }
    local other = { id_hex = "def", peer_urls = { "https://192.0.2.131:2380" }, client_urls = { "https://192.0.2.131:2379" } }
    local asked, removed = {}, false
    local fake = { new = function(o)
      asked[#asked + 1] = table.concat(o.endpoints, ",")
      return { list = function() return removed and { other } or { me, other } end,
        remove = function() removed = true return nil, "connection refused", "unavailable" end,
        close = function() end }
    end }
    local r = { advertise = "192.0.2.133", cert_dir = "/etc/kubernetes/pki" }
    assert.same({ "removed", "https://192.0.2.133:2380", 2 },
      { etcd.remove_member({ cfg = {} }, r, { members = fake, local_endpoints = { "https://192.0.2.133:2379" } }) })
    assert.same({ "https://192.0.2.133:2379", "https://192.0.2.131:2379" }, asked)
    -- still listed by the others: the removal failed
    removed = false
    fake.new = function(o)
      asked[#asked + 1] = table.concat(o.endpoints, ",")
      return { list = function() return { me, other } end, remove = function() return nil, "boom", "timeout" end,
        close = function() end }
    end
    assert.equal("failed", (etcd.remove_member({ cfg = {} }, r, { members = fake, local_endpoints = { "https://192.0.2.133:2379" } })))
  end)

  it("the real etcd.members refuses the last member without retrying", function()
    -- etcd.members' remove on a one-member list returns kind last_member at the first attempt
    local members = require "etcd.members"
    local slept = 0
    local m = setmetatable({ c = { member_list = function() return { members = { { id = 1, id_hex = "1",
      peer_urls = { "https://192.0.2.133:2380" } } } } end }, timeout = 120, interval = 0.5,
      sleep = function(s) slept = slept + s end, clock = function() return 0 end },
      getmetatable(assert(members.new { endpoints = { "https://127.0.0.1:1" } })))
    local how, _, kind = m:remove("https://192.0.2.133:2380")
    assert.is_nil(how)
    assert.equal("last_member", kind)
    assert.equal(0, slept)
  end)

  it("waits until the components' ports stop answering, or the stand-in's status lists no pods", function()
    local wait = require "node.wait_stopped"
    local t, up = 0, { [6443] = 3, [2379] = 1 }
    local ok, how = wait.until_stopped({ "kube-apiserver", "etcd", "kube-scheduler" }, {
      status = function() return nil end,
      probe = function(port) if (up[port] or 0) > 0 then up[port] = up[port] - 1 return true end return false end,
      sleep = function(s) t = t + s end, clock = function() return t end })
    assert.is_true(ok)
    assert.equal("ports", how)
    local polls = 0
    ok, how = wait.until_stopped({ "etcd" }, { status = function() polls = polls + 1 return polls < 3 and { "etcd-cp1" } or {} end,
      sleep = function(s) t = t + s end, clock = function() return t end })
    assert.is_true(ok)
    assert.equal("status", how)
    local still
    ok, still = wait.until_stopped({ "etcd" }, { status = function() return nil end, probe = function() return true end,
      timeout = 1, sleep = function(s) t = t + s end, clock = function() return t end })
    assert.is_nil(ok)
    assert.same({ "etcd (port 2379)" }, still)
    -- the stand-in's status file under the root
    h.write(root .. wait.STATUS, ('{"pid":%d,"pods":[{"pod":"etcd-cp1"},{"pod":"etcd-cp1"}]}'):format(require("moonadm.core").getpid()))
    assert.same({ "etcd-cp1" }, wait.status_pods())
    h.write(root .. wait.STATUS, ('{"pid":%d,"pods":{}}'):format(require("moonadm.core").getpid()))
    assert.same({}, wait.status_pods())
  end)

  it("finds mount points below a dir (deepest first) and whether the journal dir is bound into a lab node", function()
    local clean = require "node.clean"
    local mi = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n" ..
      "30 22 8:1 /x /var/lib/kubelet rw - ext4 /dev/sda1 rw\n" ..
      "31 30 0:5 / /var/lib/kubelet/pods/a/volumes/kubernetes.io~secret/t rw - tmpfs tmpfs rw\n" ..
      "32 30 0:6 / /var/lib/kubelet/pods/a/volumes/b\\040c rw - tmpfs tmpfs rw\n"
    assert.same({ "/var/lib/kubelet/pods/a/volumes/kubernetes.io~secret/t", "/var/lib/kubelet/pods/a/volumes/b c" },
      clean.mounts_under("/var/lib/kubelet", mi))
    assert.is_true(clean.is_mount_point("/var/lib/kubelet", mi))
    assert.is_false(clean.is_mount_point("/var/lib/moonadm", mi))
    local cleanup = require "reset.cleanup"
    fs.set_root("/")
    assert.is_false(cleanup.journal_dir_is_nodes({ name = "lab" }, mi))
    assert.is_true(cleanup.journal_dir_is_nodes({ name = "lab" }, mi .. "40 22 8:1 /n /var/lib/moonadm rw - ext4 /dev/sda1 rw\n"))
    assert.is_true(cleanup.journal_dir_is_nodes({ name = "systemd" }, mi))
  end)

  it("the prompt: y goes on, anything else aborts, no terminal refuses", function()
    local prompt = require "flows.reset.prompt"
    local written = {}
    local w = function(s) written[#written + 1] = s end
    assert.is_true(prompt.confirm { isatty = true, read = function() return "Y" end, write = w })
    assert.matches("[y/N]", table.concat(written), 1, true)
    local ok, err = pcall(prompt.confirm, { isatty = true, read = function() return "n" end, write = w })
    assert.is_false(ok)
    assert.matches("aborted reset operation", tostring(err), 1, true)
    ok, err = pcall(prompt.confirm, { isatty = true, read = function() return nil end, write = w })
    assert.is_false(ok)
    ok, err = pcall(prompt.confirm, { isatty = false })
    assert.is_false(ok)
    assert.matches("--force", tostring(err), 1, true)
  end)

  it("certificates dir: the flag, else a non-default ResetConfiguration value, else the cluster's", function()
    local data = require "flows.reset.data"
    local rc = { certificatesDir = "/etc/kubernetes/pki" }
    assert.equal("/f", data.cert_dir({ flags = { ["cert-dir"] = "/f" }, flags_set = { ["cert-dir"] = true }, cfg = { reset = rc } }, { certificatesDir = "/c" }))
    assert.equal("/c", data.cert_dir({ flags = {}, flags_set = {}, cfg = { reset = rc } }, { certificatesDir = "/c" }))
    assert.equal("/r", data.cert_dir({ flags = {}, flags_set = {}, cfg = { reset = { certificatesDir = "/r" } } }, { certificatesDir = "/c" }))
    assert.equal("/etc/kubernetes/pki", data.cert_dir({ flags = {}, flags_set = {}, cfg = { reset = rc } }, nil))
  end)
end)
