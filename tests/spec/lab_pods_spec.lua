-- lab.pods: the stand-in kubelet runs the binary of the release each static pod's image names
-- (.lab/bin/images/<image>:<tag>, linked by lab/build-bins.sh), and refuses a tag nobody built.
local pods = require "lab.pods"
local h = require "helpers"

describe("lab.pods", function()
  local dir
  setup(function()
    dir = h.tmpdir()
    os.execute(("mkdir -p %s/images && touch %s/kube-apiserver %s/images/kube-apiserver:v1.36.3 %s/images/etcd:3.6.8-0")
      :format(h.q(dir), h.q(dir), h.q(dir), h.q(dir)))
  end)
  teardown(function() h.rmrf(dir) end)

  it("picks the binary by image tag", function()
    local argv = assert(pods.argv({ name = "kube-apiserver", image = "registry.k8s.io/kube-apiserver:v1.36.3",
      command = { "kube-apiserver", "--secure-port=6443" } }, dir))
    assert.same({ dir .. "/images/kube-apiserver:v1.36.3", "--secure-port=6443" }, argv)
    argv = assert(pods.argv({ name = "etcd", image = "example.test/mirror/etcd:3.6.8-0", command = { "etcd" } }, dir))
    assert.same({ dir .. "/images/etcd:3.6.8-0" }, argv)
  end)

  it("refuses an image tag the lab has no binary for, saying how to build it", function()
    local argv, err = pods.argv({ name = "kube-apiserver", image = "registry.k8s.io/kube-apiserver:v1.36.9",
      command = { "kube-apiserver" } }, dir)
    assert.is_nil(argv)
    assert.matches("the lab has no binary for image registry.k8s.io/kube%-apiserver:v1.36.9", err)
    assert.matches("LAB_RELEASES=<release> make lab%-bins", err)
  end)

  it("falls back to the command's name in a bin dir without images/", function()
    local old = h.tmpdir()
    os.execute("touch " .. h.q(old .. "/kube-apiserver"))
    local argv = assert(pods.argv({ name = "kube-apiserver", image = "registry.k8s.io/kube-apiserver:v1.35.4",
      command = { "kube-apiserver" } }, old))
    assert.same({ old .. "/kube-apiserver" }, argv)
    h.rmrf(old)
  end)
end)

describe("lab.pods with an images/ folder of another release only", function()
  it("runs the default release from the top of the bin dir", function()
    local dir = h.tmpdir()
    os.execute(("mkdir -p %s/images && touch %s/etcd %s/images/etcd:3.6.8-0"):format(h.q(dir), h.q(dir), h.q(dir)))
    local argv = assert(pods.argv({ name = "etcd", image = "registry.k8s.io/etcd:3.6.6-0", command = { "etcd" } }, dir))
    assert.same({ dir .. "/etcd" }, argv)
    h.rmrf(dir)
  end)
end)
