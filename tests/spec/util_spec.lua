-- framework.util's text helpers.
local util = require "framework.util"

describe("framework.util.rtrim", function()
  it("drops trailing blanks of every kind and keeps the rest, inner padding included", function()
    assert.equal("certs/ca                Generate the CA", util.rtrim("certs/ca                Generate the CA  \t\r\n\v\f"))
    assert.equal("  indented", util.rtrim("  indented"))
    assert.equal("", util.rtrim(" \t\n"))
    assert.equal("", util.rtrim(""))
    assert.equal("x\0", util.rtrim("x\0 ")) -- a NUL is not whitespace
  end)

  it("names its file and line when it fails, from the embedded bytecode (tools/embed.c keeps line info)", function()
    local ok, err = pcall(util.rtrim, nil)
    assert.is_false(ok)
    assert.matches("^scripts/framework/util%.lua:%d+: attempt to get length of a nil value", err)
    assert.equal("@scripts/framework/util.lua", debug.getinfo(util.rtrim, "S").source)
    -- _ENV keeps its name, by which an error says "global 'x'" rather than "field 'x'"
    assert.equal("_ENV", (debug.getupvalue(util.contains, 1)))
  end)
end)
