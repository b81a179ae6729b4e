-- Issue 46 #8: a Node named with 60 MB (an answer under the client's 64 MiB body cap,
-- kube/client.lua MAX_BODY) cost `upgrade plan` 1 GB: the name was sorted, padded and printed.
-- Names from the cluster are now held to the API's own limit (a DNS subdomain, at most 253 bytes,
-- kube/shape.lua) before any use: the plan refuses the answer, naming the Node and the limit with
-- the name cut short, and the command runs within an address space of 384 MiB (the body, its
-- decoded copy and the JSON rewrite's; it took 640 MiB of memory before).
local h = require "helpers"
local core = require "moonadm.core"

local ANSWERS = [[(function()
  local cjson = require "cjson"
  local cc = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.34.3\n"
  local big = ("a"):rep(60 * 1000 * 1000)
  return { { status = 404, body = '{"kind":"Status","code":404,"reason":"NotFound"}' }, paths = {
    ["/version"] = { status = 200, body = '{"gitVersion":"v1.34.3"}' },
    ["/api/v1/namespaces/kube-system/configmaps/kubeadm-config"] = { status = 200,
      body = cjson.encode { kind = "ConfigMap", data = { ClusterConfiguration = cc } } },
    ["/api/v1/nodes"] = { status = 200, body = '{"kind":"NodeList","metadata":{},"items":[{"metadata":{"name":"' .. big ..
      '"},"status":{"nodeInfo":{"kubeletVersion":"v1.34.3"}}}]}' },
  } }
end)()]]

describe("regress 062: a huge Node name", function()
  it("is refused by upgrade plan, with the name cut short, in bounded memory", function()
    h.canned_http(ANSWERS, function(url)
      local dir = h.tmpdir()
      h.write(dir .. "/kc", ("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n" ..
        "contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: t}\n")
        :format(url))
      local t0 = core.monotonic()
      -- (no address-space limit under ASan, whose shadow memory alone is terabytes of it)
      local limit = os.getenv("ASAN_OPTIONS") and "" or ("ulimit -v %d && "):format(384 * 1024)
      local cmd = ("%sexec %s upgrade plan --kubeconfig %s >%s/out 2>&1"):format(limit, h.q(h.bin),
        h.q(dir .. "/kc"), h.q(dir))
      local _, _, code = os.execute(cmd)
      local out = h.read(dir .. "/out")
      h.rmrf(dir)
      assert.is_not.equal(0, code, out)
      assert.matches("[upgrade/versions] listing the Nodes: Node 1 of the list: metadata.name \"aaaa", out, 1, true)
      assert.matches('"... (60000000 bytes) is not a Kubernetes name (a DNS subdomain of at most 253 bytes)', out, 1, true)
      assert.is_true(#out < 1024, ("the message is %d bytes"):format(#out))
      assert.is_nil(out:find("memory", 1, true), out)
      assert.is_true(core.monotonic() - t0 < 30)
    end)
  end)
end)
