-- Found by tests/fuzz/fuzz_lua_patches: a JSON patch whose operation is not a mapping ("- ", "- 5")
-- raised "attempt to index a userdata/number value" while building its error message; a "path" that
-- is not a string reached the JSON-pointer code. Both are now refused with a message.
local patches = require "manifests.patches"
local yaml = require "moonadm.yaml"

describe("regress 002: JSON patch operations that are not mappings", function()
  local target = { kind = "Pod", spec = { containers = { { name = "a" } } } }
  for _, text in ipairs { "- \n", "- 5\n", "- [a]\n", "- op: add\n  path: 5\n  value: 1\n", "- op: move\n  from: [1]\n  path: /kind\n" } do
    it(("refuses %q"):format(text), function()
      local ops = assert(yaml.decode(text))[1]
      local ok, err = pcall(patches.json, target, ops)
      assert.is_false(ok)
      assert.is_string(err)
      assert.matches("^operation 1", err)
      assert.not_matches("attempt to", err)
    end)
  end
end)
