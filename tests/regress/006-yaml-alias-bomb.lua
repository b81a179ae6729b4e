-- Issue 18, defect 1: YAML aliases expanded without limit (engine/yaml_doc.c copied the anchored
-- subtree for every alias): a 432-byte config of 9 aliases of 9 aliases, 7 levels deep, took 2.8 GB
-- and 17 s and was then accepted; 9 levels took all memory. The same through --patches and through
-- the cluster-info kubeconfig, read before the CA pin is checked. The decoder now measures an alias
-- before it copies it and holds aliases to Go yaml.v2's ratio (kubeadm: "yaml: document contains
-- excessive aliasing"), and caps nodes, depth, keys per mapping and bytes.
local h = require "helpers"
local yaml = require "moonadm.yaml"
local discovery = require "cluster.discovery"
local kubeconfig = require "kube.kubeconfig"

-- head (the document's first lines), then `levels` lines of 9 aliases of the line before
local function bomb(head, levels, tail)
  local lines = { head, "a0: &a0 [x, x, x, x, x, x, x, x, x]" }
  for i = 1, levels - 1 do
    lines[#lines + 1] = ("a%d: &a%d [%s]"):format(i, i, ("*a" .. (i - 1) .. ", "):rep(8) .. "*a" .. (i - 1))
  end
  lines[#lines + 1] = tail
  return table.concat(lines, "\n") .. "\n"
end
local CONFIG = bomb("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration", 7, "")
local KUBECONFIG = bomb("apiVersion: v1\nkind: Config", 9, "clusters:\n- cluster:\n    server: https://192.0.2.1:6443\n" ..
  "    certificate-authority-data: eA==\n  name: \"\"")
local WHAT = "document contains excessive aliasing"

describe("regress 006: YAML alias bombs", function()
  it("the 432-byte config of the issue is that small", function()
    assert.is_true(#CONFIG < 500, #CONFIG)
  end)

  it("yaml.decode refuses them at the alias that tips the ratio, naming the file", function()
    for _, levels in ipairs { 7, 9, 20 } do
      local docs, err = yaml.decode(bomb("k: v", levels, ""), "b.yaml")
      assert.is_nil(docs)
      assert.equal("b.yaml:5:15: " .. WHAT, err:sub(1, 13 + #WHAT))
    end
  end)

  it("--config: refused with the file and line", function()
    local dir = h.tmpdir()
    h.write(dir .. "/bomb.yaml", CONFIG)
    local code, out, err = h.moonadm { "init", "--config", dir .. "/bomb.yaml", "--dry-run", "--root", dir .. "/root" }
    h.rmrf(dir)
    assert.not_equal(0, code)
    assert.matches("bomb.yaml:6:15: " .. WHAT, out .. err, 1, true)
  end)

  it("--patches: refused with the patch file", function()
    local dir = h.tmpdir()
    h.write(dir .. "/patches/kube-apiserver.yaml", bomb("spec: {}", 8, ""))
    local code, out, err = h.moonadm { "init", "phase", "control-plane", "apiserver", "--patches", dir .. "/patches",
      "--root", dir .. "/root", "--apiserver-advertise-address", "192.0.2.1" }
    h.rmrf(dir)
    assert.not_equal(0, code)
    assert.matches("kube-apiserver.yaml:5:15: " .. WHAT, out .. err, 1, true)
  end)

  it("the cluster-info kubeconfig (read before the CA pin is checked): refused as discovery's error", function()
    local ok, err = pcall(discovery.cluster_of, KUBECONFIG, "cluster-info")
    assert.is_false(ok)
    assert.matches("[discovery] cluster-info holds no valid kubeconfig: cluster-info:6:15: " .. WHAT, err, 1, true)
  end)

  it("a kubeconfig file", function()
    local r, err = kubeconfig.parse(KUBECONFIG, { filename = "admin.conf" })
    assert.is_nil(r)
    assert.matches("admin.conf:6:15: " .. WHAT, err, 1, true)
  end)

  it("anchors used as configs use them still decode", function()
    local text = "base: &b {image: pause, pullPolicy: IfNotPresent}\nitems:\n" ..
      ("- {name: c, spec: *b}\n"):rep(500)
    local docs = assert(yaml.decode(text, "ok.yaml"))
    assert.equal(500, #docs[1].items)
    assert.equal("pause", docs[1].items[500].spec.image)
  end)
end)
