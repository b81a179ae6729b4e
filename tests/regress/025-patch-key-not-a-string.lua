-- Found by tests/fuzz/fuzz_lua_patches (CI, commit 940c8c7): a strategic merge patch whose key is
-- YAML's boolean `true:` raised "attempt to concatenate a boolean value" while naming the field.
-- Patch keys that are not strings are now refused by all three kinds, with the field's place; a
-- JSON patch that is a mapping instead of a list of operations is refused too (it was a no-op).
local patches = require "manifests.patches"
local yaml = require "moonadm.yaml"

describe("regress 025: patch keys that are not strings", function()
  local function pod()
    return assert(yaml.decode("kind: Pod\nspec:\n  containers:\n  - name: a\n"))[1]
  end
  local crash = "true:\n    - name::ngtiners:-an   ame}\n?"
  for _, kind in ipairs { "strategic", "merge" } do
    it(kind .. " refuses the fuzzer's input", function()
      local ok, err = pcall(patches[kind], pod(), assert(yaml.decode(crash))[1])
      assert.is_false(ok)
      assert.equal("patch: key true is not a string: a patch names an object's fields (quote it)", err)
    end)
    it(kind .. " names the place of a nested key", function()
      local ok, err = pcall(patches[kind], pod(), assert(yaml.decode("spec:\n  1: x\n"))[1])
      assert.is_false(ok)
      assert.matches("^%.spec: key 1 is not a string", err)
    end)
    it(kind .. " still takes a quoted key", function()
      local out = patches[kind](pod(), assert(yaml.decode('metadata:\n  labels:\n    "true": "yes"\n'))[1])
      assert.equal("yes", out.metadata.labels["true"])
    end)
  end
  it("json refuses a mapping", function()
    local ok, err = pcall(patches.json, pod(), assert(yaml.decode(crash))[1])
    assert.is_false(ok)
    assert.equal("a JSON patch must be a list of operations", err)
  end)
end)
