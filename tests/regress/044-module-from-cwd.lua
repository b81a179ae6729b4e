-- Found beside issue 46's trust defects: Lua's default package.path and cpath end in ./?.lua and
-- ./?.so, so a module moonadm does not embed (lua-cjson, luv) was looked for in the working
-- directory first when not installed, and a planted one would run as root. Only absolute templates
-- are kept now.
local h = require "helpers"

describe("regress 044: no module from the working directory", function()
  it("a module planted in the working directory is not loaded", function()
    local dir = h.tmpdir()
    h.write(dir .. "/moonadm_planted.lua", "os.exit(42)\n")
    h.write(dir .. "/main.lua", "print(pcall(require, 'moonadm_planted')); print(package.path); print(package.cpath)\n")
    local rc, out = h.sh(("cd %s && %s lua main.lua"):format(h.q(dir), h.q(h.bin)))
    h.rmrf(dir)
    assert.equal(0, rc, out)
    assert.matches("^false\tmodule 'moonadm_planted' not found", out)
    assert.is_nil(out:find("./?", 1, true), out)
  end)
end)
