-- Issue 18, defect 3: the duplicate-key check compared every key of a mapping with every earlier
-- one: 100 000 keys (1.5 MB) took 52 s, 400 000 over 300 s (kubeadm: 1 s and 5 s). It is a hash set
-- per mapping now (tests/engine/test_yaml.c counts the comparisons: under 2 per key); here 200 000
-- keys decode within the test run (the quadratic check took minutes), a duplicate among them is
-- reported as before, and past the 256 Ki keys budget the message says so.
local yaml = require "moonadm.yaml"

local function keys(n, extra)
  local t = {}
  for i = 0, n - 1 do t[#t + 1] = ("k%06d: %d\n"):format(i, i) end
  t[#t + 1] = extra
  return table.concat(t)
end

describe("regress 007: mappings of many keys", function()
  it("200 000 keys decode, every one", function()
    local docs = assert(yaml.decode(keys(200000), "keys.yaml"))
    local n = 0
    for _ in pairs(docs[1]) do n = n + 1 end
    assert.equal(200000, n)
    assert.equal(199999, docs[1].k199999)
  end)

  it("a duplicate among them: the same message and position as ever", function()
    local docs, err = yaml.decode(keys(200000, "k000005: again\n"), "keys.yaml")
    assert.is_nil(docs)
    assert.equal('keys.yaml:200001:1: duplicate key "k000005" (first at line 6)', err)
  end)

  it("more keys than yaml.limits.max_keys: refused, saying so", function()
    assert.equal(262144, yaml.limits.max_keys)
    local docs, err = yaml.decode(keys(yaml.limits.max_keys + 1), "many.yaml")
    assert.is_nil(docs)
    assert.equal("many.yaml:262145:1: the mapping that starts at line 1 has more than 262144 keys: moonadm decodes "
      .. "at most 262144 keys per mapping; split the data", err)
  end)
end)
