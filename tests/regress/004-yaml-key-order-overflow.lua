-- Found by tests/fuzz/fuzz_yaml (UBSan): sorting mapping keys as Go's yaml.v2 does (runs of digits
-- compared as numbers) overflowed a signed integer on long digit runs: undefined behaviour in C
-- (Go's int wraps). The engine now wraps in unsigned arithmetic and compares as Go's signed ints.
-- Under `make asan` (UBSan, no recovery) this test is the guard.
local yaml = require "moonadm.yaml"

describe("regress 004: mapping keys with long digit runs", function()
  it("encodes and sorts them without overflow, deterministically, and they read back", function()
    local t = {
      ["777777777777777777777777777777777a"] = 1, ["a99999999999999999999999"] = 2, ["a1"] = 3,
      ["a18446744073709551617"] = 4, ["b"] = 5, ["9223372036854775808"] = 6, ["1"] = 7,
    }
    local text = assert(yaml.encode(t))
    assert.equal(text, yaml.encode(t))
    local back = assert(yaml.decode(text))[1]
    for k, v in pairs(t) do assert.equal(v, back[k], k) end
    -- small numbers still sort as numbers: a2 before a10
    assert.matches("a2: 1\na10: 2\n", yaml.encode { a10 = 2, a2 = 1 }, 1, true)
  end)
end)
