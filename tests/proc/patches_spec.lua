-- kubeadm patches: file names, strategic/merge/json on decoded tables, order, every target,
-- and every bad patch file an error naming the file.
local patches = require "manifests.patches"
local yaml = require "moonadm.yaml"
local h = require "helpers"

local function Y(text) return yaml.decode(text)[1] end

local POD = [[
apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
spec:
  containers:
  - name: kube-apiserver
    command: [kube-apiserver, --a=1]
    resources:
      requests:
        cpu: 250m
    volumeMounts:
    - name: k8s-certs
      mountPath: /etc/kubernetes/pki
  - name: sidecar
    image: x
  volumes:
  - name: k8s-certs
    hostPath:
      path: /etc/kubernetes/pki
]]

describe("patches", function()
  it("finds the patches directory of a join, which has no InitConfiguration (regression)", function()
    local patches = require "manifests.patches"
    assert.equal("/srv/p", patches.directory { cfg = { join = { patches = { directory = "/srv/p" } } } })
    assert.equal("/srv/u", patches.directory { cfg = { upgrade = { node = { patches = { directory = "/srv/u" } } } } })
    assert.is_nil(patches.directory { cfg = {} })
  end)

  it("parses kubeadm's file names", function()
    assert.same({ target = "kube-apiserver", suffix = "", type = "strategic" }, patches.parse_name("kube-apiserver.yaml"))
    assert.same({ target = "etcd", suffix = "0", type = "merge" }, patches.parse_name("etcd0+merge.json"))
    assert.same({ target = "kubeletconfiguration", suffix = "-x", type = "json" }, patches.parse_name("kubeletconfiguration-x+json.yaml"))
    assert.same({ target = "corednsdeployment", suffix = "", type = "strategic" }, patches.parse_name("corednsdeployment+strategic.yaml"))
    assert.is_nil((patches.parse_name("README.md")))
    assert.is_nil((patches.parse_name("kube-proxy.yaml")))
    local bad, why = patches.parse_name("kube-scheduler+bogus.yaml")
    assert.is_false(bad)
    assert.matches("unknown or missing patch type", why, 1, true)
  end)

  it("strategic: containers and volumes merge by name, lists without a key replace, null and $patch delete", function()
    local out = patches.strategic(Y(POD), Y([[
metadata:
  labels:
    extra: "yes"
spec:
  containers:
  - name: kube-apiserver
    command: [kube-apiserver, --b=2]
    resources:
      requests:
        cpu: null
        memory: 1Gi
    volumeMounts:
    - name: audit
      mountPath: /var/log/audit
  - name: sidecar
    $patch: delete
  volumes:
  - name: audit
    hostPath:
      path: /var/log/audit
]]))
    local c = out.spec.containers
    assert.equal(1, #c)
    assert.same({ "kube-apiserver", "--b=2" }, { table.unpack(c[1].command) })
    assert.same({ requests = { memory = "1Gi" } }, c[1].resources)
    assert.equal(2, #c[1].volumeMounts)
    assert.equal(2, #out.spec.volumes)
    assert.equal("yes", out.metadata.labels.extra)
    assert.equal("kube-apiserver", out.metadata.name)
    -- $patch: replace on a list and a map
    local r = patches.strategic(Y(POD), Y("spec:\n  volumes:\n  - $patch: replace\n  - name: only\n    emptyDir: {}\n"))
    assert.equal(1, #r.spec.volumes); assert.equal("only", r.spec.volumes[1].name)
    local m = patches.strategic(Y(POD), Y("metadata:\n  $patch: replace\n  name: new\n"))
    assert.same({ name = "new" }, m.metadata)
  end)

  it("merge (RFC 7386): maps merge, lists replace, null deletes", function()
    local out = patches.merge(Y(POD), Y("metadata:\n  name: null\n  labels: {a: b}\nspec:\n  volumes: []\n"))
    assert.is_nil(out.metadata.name)
    assert.same({ a = "b" }, out.metadata.labels)
    assert.equal(0, #out.spec.volumes)
    assert.equal(2, #out.spec.containers)
  end)

  it("json (RFC 6902): add, remove, replace, move, copy, test", function()
    local out = patches.json(Y(POD), Y([[
- op: add
  path: /spec/containers/0/command/-
  value: --c=3
- op: replace
  path: /spec/containers/0/resources/requests/cpu
  value: 500m
- op: remove
  path: /spec/containers/1
- op: copy
  from: /metadata/name
  path: /metadata/labels
- op: move
  from: /metadata/labels
  path: /metadata/component
- op: test
  path: /metadata/component
  value: kube-apiserver
- op: add
  path: /metadata/annotations
  value: {"a~b/c": "1"}
- op: test
  path: /metadata/annotations/a~0b~1c
  value: "1"
]]))
    assert.same({ "kube-apiserver", "--a=1", "--c=3" }, { table.unpack(out.spec.containers[1].command) })
    assert.equal("500m", out.spec.containers[1].resources.requests.cpu)
    assert.equal(1, #out.spec.containers)
    assert.equal("kube-apiserver", out.metadata.component)
    assert.is_nil(out.metadata.labels)
    assert.has_error(function() patches.json(Y(POD), Y("- op: test\n  path: /metadata/name\n  value: nope\n")) end)
    assert.has_error(function() patches.json(Y(POD), Y("- op: remove\n  path: /spec/nothing\n")) end)
  end)

  describe("from a directory", function()
    local root, pdir
    before_each(function() root = h.tmpdir(); pdir = root .. "/patches" end)
    after_each(function() h.rmrf(root) end)

    it("applies in file-name order, documents in order, per target; ignores other files", function()
      h.write(pdir .. "/kube-apiserver1+merge.yaml", "metadata:\n  labels:\n    order: second\n")
      h.write(pdir .. "/kube-apiserver0.yaml", "metadata:\n  labels:\n    order: first\n    keep: a\n---\nmetadata:\n  labels:\n    doc2: b\n")
      h.write(pdir .. "/etcd+json.json", '[{"op": "add", "path": "/metadata/p", "value": "q"}]')
      h.write(pdir .. "/README.md", "not a patch")
      h.write(pdir .. "/kube-proxy.yaml", "unknown target")
      local sets, ignored = patches.load(pdir)
      assert.equal(3, #sets["kube-apiserver"])
      assert.equal(2, #ignored)
      local out = patches.apply("kube-apiserver", Y(POD), sets["kube-apiserver"], true)
      assert.same({ order = "second", keep = "a", doc2 = "b" }, out.metadata.labels)
      local e = patches.apply("etcd", Y(POD), sets.etcd, true)
      assert.equal("q", e.metadata.p)
    end)

    it("every bad patch file is an error naming the file", function()
      local cases = {
        ["kube-scheduler+bogus.yaml"] = "unknown or missing patch type",
        ["kube-scheduler.yaml"] = "kube-scheduler.yaml",
        ["etcd+json.yaml"] = "must be a list of operations",
        ["kube-apiserver+merge.yaml"] = "must be a mapping",
      }
      local bodies = {
        ["kube-scheduler+bogus.yaml"] = "a: b\n",
        ["kube-scheduler.yaml"] = "a: [unclosed\n",
        ["etcd+json.yaml"] = "a: b\n",
        ["kube-apiserver+merge.yaml"] = "- 1\n",
      }
      for name, want in pairs(cases) do
        local d = root .. "/p-" .. name:gsub("[^%w]", "_")
        h.write(d .. "/" .. name, bodies[name])
        local ok, err = pcall(patches.load, d)
        assert.is_false(ok, name)
        assert.matches(d .. "/" .. name, err, 1, true)
        assert.matches(want, err, 1, true)
      end
      -- a patch that does not apply names its file too
      local d = root .. "/p-apply"
      h.write(d .. "/kube-controller-manager+json.yaml", "- op: replace\n  path: /spec/missing\n  value: 1\n")
      local sets = patches.load(d)
      local ok, err = pcall(patches.apply, "kube-controller-manager", Y(POD), sets["kube-controller-manager"], true)
      assert.is_false(ok)
      assert.matches(d .. "/kube-controller-manager+json.yaml", err, 1, true)
      assert.matches("/spec/missing", err, 1, true)
    end)

    it("patches every control-plane target and etcd through the phases (--config patches.directory)", function()
      h.write(pdir .. "/kube-apiserver.yaml", "spec:\n  containers:\n  - name: kube-apiserver\n    resources:\n      requests:\n        cpu: 999m\n")
      h.write(pdir .. "/kube-controller-manager+merge.yaml", "metadata:\n  labels:\n    patched: cm\n")
      h.write(pdir .. "/kube-scheduler+json.yaml", "- op: add\n  path: /metadata/labels/patched\n  value: sched\n")
      h.write(pdir .. "/etcd.yaml", "spec:\n  containers:\n  - name: etcd\n    resources:\n      requests:\n        memory: 1Gi\n")
      h.write(root .. "/k.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: 192.0.2.135\n" ..
        "patches:\n  directory: " .. pdir .. "\n")
      for _, ph in ipairs { { "control-plane", "all" }, { "etcd", "local" } } do
        local code, out, err = h.moonadm { "init", "phase", ph[1], ph[2], "--root", root, "--config", root .. "/k.yaml" }
        assert.equal(0, code, out .. err)
        assert.matches('[patches] Applied patch of type', out, 1, true)
      end
      local function pod(c) return yaml.decode(h.read(root .. "/etc/kubernetes/manifests/" .. c .. ".yaml"))[1] end
      assert.equal("999m", pod("kube-apiserver").spec.containers[1].resources.requests.cpu)
      assert.equal("cm", pod("kube-controller-manager").metadata.labels.patched)
      assert.equal("sched", pod("kube-scheduler").metadata.labels.patched)
      assert.equal("1Gi", pod("etcd").spec.containers[1].resources.requests.memory)
      assert.equal("100m", pod("etcd").spec.containers[1].resources.requests.cpu)
    end)

    it("corednsdeployment: strategic merge into a Deployment's pod template", function()
      h.write(pdir .. "/corednsdeployment.yaml", "spec:\n  template:\n    spec:\n      containers:\n      - name: coredns\n        image: my/coredns:1\n")
      local dep = Y("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - name: coredns\n        image: registry.k8s.io/coredns/coredns:v1.13.1\n        args: [-conf]\n")
      local out = patches.apply("corednsdeployment", dep, patches.load(pdir).corednsdeployment, true)
      assert.equal("my/coredns:1", out.spec.template.spec.containers[1].image)
      assert.same({ "-conf" }, { table.unpack(out.spec.template.spec.containers[1].args) })
    end)
  end)
end)
