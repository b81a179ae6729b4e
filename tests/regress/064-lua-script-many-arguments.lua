-- Found while consolidating the specs' helpers (issue 41): `moonadm lua FILE ARGS...` pushed every
-- argument onto the Lua stack without growing it, so a script given more arguments than the
-- stack's spare slots (about 40: `tests/busted.sh` with its flags and every tests/proc spec)
-- wrote past the stack and crashed. The stack is grown first now.
local h = require "helpers"

describe("regress 064: moonadm lua with many arguments", function()
  it("passes 5000 arguments to the script, as ... and as arg", function()
    local dir = h.tmpdir()
    h.write(dir .. "/count.lua", "local n = select('#', ...); print(n, #arg, arg[n], (select(n, ...)))\n")
    local args = {}
    for i = 1, 5000 do args[i] = "a" .. i end
    local rc, out = h.sh(("%s lua %s %s"):format(h.q(h.bin), h.q(dir .. "/count.lua"), table.concat(args, " ")))
    h.rmrf(dir)
    assert.equal(0, rc, out)
    assert.equal("5000\t5000\ta5000\ta5000\n", out)
  end)
end)
