-- Found by tests/fuzz/fuzz_lua_clusterinfo: a cluster-info kubeconfig whose `cluster` (or
-- `clusters`, or the document) is not a mapping raised "attempt to index a userdata value" inside
-- cluster.discovery instead of refusing the document. (The input is also in the seed corpus.)
local discovery = require "cluster.discovery"

describe("regress 001: cluster-info with a null or non-mapping cluster", function()
  for _, text in ipairs {
    "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n",
    "apiVersion: v1\nkind: Config\nclusters:\n- cluster: a string\n",
    "apiVersion: v1\nkind: Config\nclusters: 3\n",
    "apiVersion: v1\nkind: Config\nclusters:\n- 7\n",
    "just a string\n",
    "- a list\n",
    "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: [1]\n",
    "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://x:6443\n    certificate-authority-data: [1]\n",
  } do
    it(("refuses %q with a [discovery] message"):format(text), function()
      local ok, err = pcall(discovery.cluster_of, text, "cluster-info")
      assert.is_false(ok)
      assert.is_string(err)
      assert.matches("^%[discovery%] cluster%-info", err)
    end)
  end
end)
