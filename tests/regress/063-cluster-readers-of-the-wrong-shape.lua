-- Issue 46 #8, the other readers of the cluster's answers: a bootstrap token Secret whose data is
-- not a map of strings gave "scripts/cluster/tokens.lua:115: bad argument" (`token list`, init's
-- show-join-command, upload-certs), and the Node patches, the addon gate, the etcd endpoints and
-- the kubeadm-config readers of join, reset and upgrade indexed their answers blindly. Each now
-- checks the shape first (kube/shape.lua): a token Secret of another shape is skipped with a warning
-- naming it; anything else is an error naming the object and the field.
local h = require "helpers"
local cjson = require "cjson"
local encoding = require "moonadm.encoding"
local tokens = require "cluster.tokens"
local show_join = require "cluster.show_join"
local cnode = require "cluster.node"
local up = require "cluster.upload_config"
local addon = require "upgrade.addon"
local endpoints = require "etcd.endpoints"
local shape = require "kube.shape"

local function b64(t)
  local o = {}
  for k, v in pairs(t) do o[k] = encoding.base64_encode(v) end
  return o
end
local GOOD = { metadata = { name = "bootstrap-token-abcdef" }, type = "bootstrap.kubernetes.io/token",
  data = b64 { ["token-id"] = "abcdef", ["token-secret"] = "0123456789abcdef", ["usage-bootstrap-authentication"] = "true",
    ["auth-extra-groups"] = tokens.DEFAULT_GROUP } }
local BAD_SECRETS = {
  7, "x", { metadata = "x", data = GOOD.data }, { metadata = { name = 5 }, data = GOOD.data },
  { metadata = { name = "bootstrap-token-abcdef" }, data = "x" },
  { metadata = { name = "bootstrap-token-abcdef" }, data = { ["token-id"] = { a = 1 } } },
  { metadata = { name = "bootstrap-token-abcdef" }, data = { "x" } },
}


describe("regress 063: the cluster's readers with answers of the wrong shape", function()
  it("tokens.from_secret refuses a Secret of another shape with a message", function()
    assert.equal("abcdef.0123456789abcdef", assert(tokens.from_secret(GOOD)).token)
    for i, s in ipairs(BAD_SECRETS) do
      local ok, t, err = pcall(tokens.from_secret, s)
      assert.is_true(ok, tostring(t))
      assert.is_nil(t, i)
      assert.matches("is not a bootstrap token Secret: ", err, 1, true)
      h.no_raw_error(err)
    end
  end)

  it("token list skips them with a warning and lists the good one", function()
    local items = { GOOD }
    for _, s in ipairs(BAD_SECRETS) do items[#items + 1] = s end
    local list = cjson.encode { kind = "SecretList", metadata = {}, items = items }
    h.canned_http(("{ { status = 200, body = %q } }"):format(list), function(url)
      local dir = h.tmpdir()
      h.write(dir .. "/kc", ("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n" ..
        "contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: t}\n")
        :format(url))
      local code, out, err = h.moonadm { "token", "list", "--kubeconfig", dir .. "/kc" }
      h.rmrf(dir)
      assert.equal(0, code, out .. err)
      assert.matches("abcdef.0123456789abcdef", out, 1, true)
      assert.matches("is not a bootstrap token Secret: data is a string, not an object", err, 1, true)
      h.no_raw_error(out .. err)
    end)
  end)

  it("show-join-command's token lookup skips them", function()
    local items = { GOOD }
    for _, s in ipairs(BAD_SECRETS) do items[#items + 1] = s end
    local c = { list = function() return { items = items } end }
    local got = show_join.cluster_tokens(c)
    assert.equal(1, #got)
    assert.equal("abcdef.0123456789abcdef", show_join.pick(got, os.time()).token)
  end)

  it("a Node to patch, the addon gate and the etcd endpoints refuse an answer of another shape", function()
    local node = { metadata = { name = "cp1", resourceVersion = "7", labels = {}, annotations = {} }, spec = { taints = {} } }
    assert.equal("7", cnode.check(node))
    for _, bad in ipairs {
      { { metadata = { name = "cp1", resourceVersion = 7 } }, "metadata.resourceVersion is a number, not a string" },
      { { metadata = { name = "cp1", resourceVersion = "7", annotations = "x" } }, "metadata.annotations is a string" },
      { { metadata = { name = "cp1", resourceVersion = "7" }, spec = { taints = { 7 } } }, "spec.taints[0]: it is a number" },
      { { metadata = 7 }, "metadata is a number, not an object" },
    } do
      local rv, why = cnode.check(bad[1])
      assert.is_nil(rv)
      assert.matches(bad[2], why, 1, true)
    end
    local behind, why = addon.not_upgraded({ { spec = { nodeName = "cp1", containers = { { name = "kube-apiserver", image = 7 } } } } }, "i")
    assert.is_nil(behind)
    assert.matches("Pod 1 of the list: spec.containers[0]: image is a number, not a string", why, 1, true)
    behind, why = addon.not_upgraded({ 7 }, "i")
    assert.is_nil(behind)
    assert.matches("it is a number, not an object", why, 1, true)
    local urls, err = endpoints.endpoints_from_pods({ list = function() return { items = { { metadata = { name = "etcd-cp1",
      annotations = { [endpoints.ANNOTATION] = {} } } } } } end }, { timeout = 0, sleep = function() end })
    assert.is_nil(urls)
    assert.matches("Pod 1 of the list: metadata.annotations", err, 1, true)
  end)

  it("the kubeadm-config reader of join, reset, upgrade and plan names what is wrong", function()
    local function read(cm)
      return up.read_kubeadm { get = function()
        if cm then return cm end
        return nil, setmetatable({ code = 404 }, { __tostring = function() return "not found" end })
      end }
    end
    local cluster = read { data = { ClusterConfiguration = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n" } }
    assert.is_table(cluster)
    local _, why, absent = read(nil)
    assert.equal("ConfigMap kube-system/kubeadm-config does not exist", why)
    assert.is_true(absent)
    for _, bad in ipairs {
      { { data = 7 }, "ConfigMap kube-system/kubeadm-config: data is a number, not an object" },
      { { data = { ClusterConfiguration = true } }, "data.ClusterConfiguration is a boolean, not a string" },
      { { data = {} }, "it has no ClusterConfiguration key" },
    } do
      local got, w = read(bad[1])
      assert.is_nil(got)
      assert.matches(bad[2], w, 1, true)
    end
  end)

  it("shape quotes what it shows on one line, cut short", function()
    assert.equal('"a\\nb"', shape.quote("a\nb"))
    assert.equal(('"%s"... (1000 bytes)'):format(("x"):rep(64)), shape.quote(("x"):rep(1000)))
    assert.equal("7", shape.quote(7))
  end)
end)
