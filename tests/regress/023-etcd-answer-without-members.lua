-- Issue 18 (known defect): an etcd answer of 200 without `members` read as an empty member list
-- (a reset or a join could act on "no members"). engine/etcd.c refuses such an answer
-- (tests/engine/test_etcd.c test_wrong_shapes); etcd.members holds the same line for whatever
-- its client returns: no list, or an empty one, is a "protocol" error, never an empty result.
local members = require "etcd.members"

describe("regress 023: etcd answers without members", function()
  local function with_answer(answer)
    local m = assert(members.new { endpoints = { "https://127.0.0.1:9" }, timeout = 0.2, interval = 0.05,
      sleep = function() end })
    m.c = {
      member_list = function() return answer end,
      member_add = function() return answer end,
      endpoints = function() return { "https://127.0.0.1:9" } end,
    }
    return m
  end
  for name, answer in pairs {
    ["no members field"] = { endpoint = "https://127.0.0.1:9" },
    ["an empty list"] = { endpoint = "https://127.0.0.1:9", members = {} },
    ["members not a list"] = { endpoint = "https://127.0.0.1:9", members = "x" },
  } do
    it("list, add_learner, promote and remove fail on " .. name, function()
      local m = with_answer(answer)
      local list, err = m:list()
      assert.is_nil(list)
      assert.matches("the answer has no members", err, 1, true)
      local c, aerr = m:add_learner("https://192.0.2.5:2380", "n5")
      assert.is_nil(c)
      assert.matches("the answer has no members", aerr, 1, true)
      local p, perr = m:promote("https://192.0.2.5:2380")
      assert.is_nil(p)
      assert.matches("the answer has no members", perr, 1, true)
      local how, rerr = m:remove("https://192.0.2.5:2380")
      assert.is_nil(how) -- never "not_found" from an answer that lists nobody
      assert.matches("the answer has no members", rerr, 1, true)
    end)
  end
end)
