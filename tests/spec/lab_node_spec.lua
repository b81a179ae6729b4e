-- The real-kubelet lab node's installed kubelet (issue 21): lab/node.lua starts the kubelet of the
-- release its /var/lib/moonadm-lab/kubelet.release names (.lab/bin/<release>/kubelet), the top of
-- the bin dir when none is recorded, and says what to build when that release's kubelet is missing;
-- containerd's sandbox image is that release's pause tag.
local h = require "helpers"
local lab_node = require "lab.node"

describe("lab node: the installed kubelet release", function()
  local dir, root, bin
  local function node() return lab_node.new { root = root, bin_dir = bin, unit = h.top .. "/packaging/10-kubeadm.conf" } end
  before_each(function()
    dir = h.tmpdir()
    root, bin = dir .. "/cp1", dir .. "/bin"
    h.write(bin .. "/kubelet", "#!/bin/sh\n")
    h.write(bin .. "/v1.36.3/kubelet", "#!/bin/sh\n")
    h.write(root .. "/var/lib/kubelet/kubeadm-flags.env", 'KUBELET_KUBEADM_ARGS="--node-ip=192.0.2.131"\n')
  end)
  after_each(function() h.rmrf(dir) end)

  it("runs the top of the bin dir when no release is recorded", function()
    local argv = assert(node():kubelet_argv())
    assert.equal(bin .. "/kubelet", argv[1])
    assert.equal("--node-ip=192.0.2.131", argv[#argv])
  end)

  it("runs the recorded release's kubelet, read again at each start (a swap is a write and a restart)", function()
    h.write(root .. lab_node.RELEASE, "v1.36.3\n")
    local n = node()
    assert.equal(bin .. "/v1.36.3/kubelet", assert(n:kubelet_argv())[1])
    h.write(root .. lab_node.RELEASE, "v1.37.2\n")
    local argv, err = n:kubelet_argv()
    assert.is_nil(argv)
    assert.matches(bin .. "/v1.37.2/kubelet is missing", err, 1, true)
    assert.matches("LAB_RELEASES=v1.37.2 make lab-bins-node", err, 1, true)
  end)

  it("says when the kubelet unit drop-in cannot be read", function()
    local n = lab_node.new { root = root, bin_dir = bin, unit = dir .. "/no-such-10-kubeadm.conf" }
    local argv, err = n:kubelet_argv()
    assert.is_nil(argv)
    assert.equal(dir .. "/no-such-10-kubeadm.conf: cannot read the kubelet unit drop-in", err)
  end)

  it("refuses a file that names no release", function()
    h.write(root .. lab_node.RELEASE, "1.36\n")
    local argv, err = node():kubelet_argv()
    assert.is_nil(argv)
    assert.matches("is not a release", err, 1, true)
  end)

  it("pins containerd's sandbox image to the release's pause tag", function()
    assert.matches("sandbox = 'registry.k8s.io/pause:3.10.1'", lab_node.containerd_config(nil), 1, true)
    assert.matches("sandbox = 'registry.k8s.io/pause:3.10.1'", lab_node.containerd_config("v1.35.4"), 1, true)
    assert.matches("sandbox = 'registry.k8s.io/pause:3.10.2'", lab_node.containerd_config("v1.36.3"), 1, true)
  end)
end)
