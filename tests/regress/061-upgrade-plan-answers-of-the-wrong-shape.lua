-- Issue 46 #8: `upgrade plan` indexed the cluster's answers blindly (a Node without metadata gave
-- "scripts/upgrade/plan.lua:29: attempt to index a nil value") and went on without a readable
-- kubeadm-config, printing a plan and exiting 0. Now every answer it reads is shape-checked
-- (kube/shape.lua) and the plan needs the cluster's configuration: each case exits non-zero with a
-- message naming the object and the field, never a raw Lua error. The server: canned_http on
-- 127.0.0.1 answering by path (plain HTTP, a kubeconfig with a token).
local h = require "helpers"
local cjson = require "cjson"

local CC = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.34.3\n"
local function pod(node, image)
  return { metadata = { name = "kube-apiserver-" .. node }, spec = { nodeName = node, containers = { { image = image } } } }
end
local P = {
  version = "/version",
  kubeadm = "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
  nodes = "/api/v1/nodes",
  pods = "/api/v1/namespaces/kube-system/pods",
  coredns = "/apis/apps/v1/namespaces/kube-system/deployments/coredns",
  proxy = "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy",
}
local GOOD = {
  version = { gitVersion = "v1.34.3" },
  kubeadm = { kind = "ConfigMap", metadata = { name = "kubeadm-config" }, data = { ClusterConfiguration = CC } },
  nodes = { kind = "NodeList", metadata = {}, items = { { metadata = { name = "cp1" },
    status = { nodeInfo = { kubeletVersion = "v1.34.3" }, conditions = { { type = "Ready", status = "True" } } } } } },
  pods = { kind = "PodList", metadata = {}, items = { pod("cp1", "registry.k8s.io/kube-apiserver:v1.34.3") } },
  coredns = { spec = { template = { spec = { containers = { { image = "registry.k8s.io/coredns/coredns:v1.12.1" } } } } } },
  proxy = { spec = { template = { spec = { containers = { { image = "registry.k8s.io/kube-proxy:v1.34.3" } } } } } },
}
local NOT_FOUND = { status = 404, body = '{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}' }

-- The answers file's text: GOOD with `over` (name -> JSON text, or {status=, body=}) in its place.
local function answers(over)
  local paths = {}
  for name, path in pairs(P) do
    local o = over[name]
    local a = type(o) == "table" and o or { status = 200, body = o or cjson.encode(GOOD[name]) }
    paths[#paths + 1] = ("[%q] = { status = %d, body = %q }"):format(path, a.status, a.body)
  end
  return ("{ { status = %d, body = %q }, paths = { %s } }"):format(NOT_FOUND.status, NOT_FOUND.body, table.concat(paths, ", "))
end

-- Runs `moonadm upgrade plan ARGS` against a server answering `over`: code, stdout .. stderr.
local function plan(over, args)
  local code, out
  h.canned_http(answers(over), function(url)
    local dir = h.tmpdir()
    h.write(dir .. "/kc", ("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n" ..
      "contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: t}\n")
      :format(url))
    local argv = { "upgrade", "plan", "--kubeconfig", dir .. "/kc" }
    for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
    local c, o, e = h.moonadm(argv)
    code, out = c, o .. e
    h.rmrf(dir)
  end)
  return code, out
end


describe("regress 061: upgrade plan with answers of the wrong shape", function()
  it("plans with well-formed answers (the baseline the cases below break)", function()
    local code, out = plan({}, { "--print-config" })
    assert.equal(0, code, out)
    assert.matches("kube%-apiserver%s+cp1%s+v1%.34%.3%s+v1%.35%.4", out)
    assert.matches("kubernetesVersion: v1.34.3", out, 1, true) -- --print-config: the kubeadm-config read once
  end)

  local j = cjson.encode
  for _, case in ipairs {
    -- the cluster's configuration: without it there is no plan
    { "kubeadm-config missing", { kubeadm = NOT_FOUND },
      "ConfigMap kube-system/kubeadm-config does not exist: `upgrade plan` needs the cluster's configuration" },
    { "kubeadm-config forbidden", { kubeadm = { status = 403, body = j { kind = "Status", code = 403, reason = "Forbidden",
      message = "configmaps \"kubeadm-config\" is forbidden" } } }, "reading ConfigMap kube-system/kubeadm-config: " },
    { "kubeadm-config data a string", { kubeadm = j { data = "x" } }, "ConfigMap kube-system/kubeadm-config: data is a string, not an object" },
    { "kubeadm-config data an array", { kubeadm = j { data = { "x" } } }, "data is an array, not an object" },
    { "ClusterConfiguration a number", { kubeadm = j { data = { ClusterConfiguration = 5 } } },
      "data.ClusterConfiguration is a number, not a string" },
    { "no ClusterConfiguration key", { kubeadm = j { data = { other = "x" } } }, "it has no ClusterConfiguration key" },
    { "ClusterConfiguration not YAML", { kubeadm = j { data = { ClusterConfiguration = "a: [" } } },
      "its ClusterConfiguration is invalid" },
    -- the version
    { "gitVersion a number", { version = j { gitVersion = 7 } }, "gitVersion is a number, not a string" },
    { "gitVersion missing", { version = "{}" }, "gitVersion is missing" },
    { "gitVersion not a version", { version = j { gitVersion = "x\ny" } }, 'gitVersion "x\\ny" is not a version' },
    { "/version a JSON string", { version = '"v1.34.3"' }, "the answer is a JSON string, not an object" },
    -- the Nodes (plan.lua:29 in the issue)
    { "a Node a number", { nodes = j { items = { 7 } } }, "Node 1 of the list: it is a number, not an object" },
    { "a Node's metadata a string", { nodes = j { items = { { metadata = "x" } } } }, "metadata is a string, not an object" },
    { "a Node without metadata", { nodes = j { items = { { status = {} } } } }, "metadata.name is missing" },
    { "a Node's name a number", { nodes = j { items = { { metadata = { name = 5 } } } } }, "metadata.name is a number, not a string" },
    { "a Node's name not a name", { nodes = j { items = { { metadata = { name = "cp1\n[ERROR] x" } } } } },
      'metadata.name "cp1\\n[ERROR] x" is not a Kubernetes name' },
    { "a kubelet version an array", { nodes = j { items = { { metadata = { name = "cp1" },
      status = { nodeInfo = { kubeletVersion = { "v1" } } } } } } }, "status.nodeInfo.kubeletVersion is an array, not a string" },
    { "a Node's conditions a string", { nodes = j { items = { { metadata = { name = "cp1" }, status = { conditions = "x" } } } } },
      "status.conditions is a string, not an array" },
    { "the Node list's items an object", { nodes = j { kind = "NodeList", items = { a = 1 } } }, '"items" is not an array' },
    -- the static Pods
    { "a Pod's containers a string", { pods = j { items = { { spec = { nodeName = "cp1", containers = "x" } } } } },
      "listing the kube-apiserver Pods: Pod 1 of the list: spec.containers is a string, not an object" },
    { "a Pod's nodeName not a name", { pods = j { items = { pod("cp 1", "i:1") } } }, 'spec.nodeName "cp 1" is not a Kubernetes name' },
    { "a Pod's image a number", { pods = j { items = { pod("cp1", 7) } } }, "spec.containers[0].image is a number, not a string" },
    -- the addons
    { "coredns without a template spec", { coredns = j { spec = { template = { "x" } } } },
      "Deployment kube-system/coredns: spec.template.spec.containers[0].image is missing" },
    { "kube-proxy's image an object", { proxy = j { spec = { template = { spec = { containers = { { image = { a = 1 } } } } } } } },
      "DaemonSet kube-system/kube-proxy: spec.template.spec.containers[0].image is an object, not a string" },
  } do
    it(case[1] .. ": exits non-zero with a clear message", function()
      local code, out = plan(case[2])
      assert.is_not.equal(0, code, out)
      assert.matches("[upgrade/versions] ", out, 1, true)
      assert.matches(case[3], out, 1, true)
      h.no_raw_error(out)
    end)
  end
end)
