-- The host under the scripts (bindings/): the Lua state's allocator and its end (bindings/lalloc.c),
-- libm bound on the first math call (bindings/libm_lazy.c) and luaL_newstate's warning function. Each runs in a
-- fresh bin/moonadm, as a user's `moonadm lua` script would. A `make PLAIN=1` binary has none of these
-- tricks (its engine version ends in +plain): the same behaviour is asked of it.
local h = require "helpers"
local plain = require("moonadm.core").engine_version:match("%+plain$") ~= nil

local function dynamic_section()
  local p = io.popen("readelf -d " .. h.q(h.bin) .. " 2>/dev/null")
  local dynamic = p:read("a")
  p:close()
  assert.matches("libc%.so", dynamic) -- the listing worked
  return dynamic
end

describe("the host", function()
  local dir
  setup(function() dir = h.tmpdir() end)
  teardown(function() h.rmrf(dir) end)

  local function run(src)
    local script = dir .. "/script.lua"
    h.write(script, src)
    return h.moonadm { "lua", script }
  end

  it("keeps every object's bytes through growth, shrinking and reuse across the size classes", function()
    local code, out, err = run [[
-- strings of every small size and past the largest class, tables grown past it and emptied again,
-- many rounds, so freed blocks of each class are reused; then every value is checked
local keep = {}
for round = 1, 40 do
  for len = 1, 300, 7 do
    local s = string.rep(string.char(65 + (len + round) % 26), len)
    keep[#keep + 1] = s
    local t = {}
    for i = 1, len do t[i] = i * round end
    for i = len, len // 2 + 1, -1 do t[i] = nil end
    collectgarbage("step")
    for i = 1, len // 2 do assert(t[i] == i * round, "table slot lost") end
  end
  if round % 5 == 0 then for i = 1, #keep, 2 do keep[i] = false end collectgarbage() end
end
local n = 0
for _, s in ipairs(keep) do
  if s then
    n = n + 1
    local c = s:byte(1) -- byte by byte: short strings are interned, so == would compare pointers
    for i = 2, #s do assert(s:byte(i) == c, "a string's bytes changed") end
  end
end
print("ok", n)
]]
    assert.equal(0, code, err)
    assert.matches("^ok%s+%d+", out)
  end)

  it("computes with libm's math functions" .. (plain and "" or " without linking libm"), function()
    local code, out, err = run [[
print(("%.12f %.12f %.12f %.12f %.12f"):format(math.sin(1), math.log(10), 7.5 % 2, 2 ^ 0.5, math.atan(1, 2)))
]]
    assert.equal(0, code, err)
    assert.equal("0.841470984808 2.302585092994 1.500000000000 1.414213562373 0.463647609001\n", out)
    if not plain then assert.is_nil(dynamic_section():match("libm%.so"), "bin/moonadm needs libm again") end
  end)

  it("links " .. (plain and "every library dynamically (make PLAIN=1)" or "only libc dynamically"), function()
    local dynamic = dynamic_section()
    for _, lib in ipairs { "libcrypto%.so", "liblua5%.4%.so", "libyaml", "libgmp", "libnettle" } do
      assert.equal(plain, dynamic:match(lib) ~= nil, lib .. " in " .. dynamic)
    end
  end)

  -- bindings/lalloc.c ends the process from the state's first finalizer, so the objects are not
  -- walked at exit: every other finalizer must still run, newest first, and the status stay the run's
  for _, case in ipairs {
    { how = "an error", tail = 'error("on purpose", 0)', code = 1 },
    { how = "a normal end", tail = "", code = 0 },
    { how = "os.exit(3, true)", tail = "os.exit(3, true)", code = 3 },
  } do
    it("runs every finalizer before the process ends, and keeps the exit status, after " .. case.how, function()
      local log = dir .. "/finalizers.log"
      os.remove(log)
      local code, _, err = run(([[
local out = assert(io.open(%q, "w"))
out:setvbuf("no")
local keep = {}
for i = 1, 3 do keep[i] = setmetatable({}, { __gc = function() out:write("finalized ", i, "\n") end }) end
]]):format(log) .. case.tail)
      assert.equal(case.code, code, err)
      assert.equal("finalized 3\nfinalized 2\nfinalized 1\n", h.read(log))
    end)
  end

  it("prints a Lua warning once warnings are on", function()
    local code, _, err = run [[warn("@on"); warn("host ", "spec")]]
    assert.equal(0, code, err)
    assert.matches("Lua warning: host spec", err, 1, true)
  end)
end)
