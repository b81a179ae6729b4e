-- The guards of the tree: luacheck (Debian's lua-check, with .luacheckrc) finds no undefined global
-- and no dead code it can see in scripts/ and tools/; no function in scripts/, engine/ or bindings/
-- is over 80 lines (a long template belongs in a data file or a constant).
local h = require "helpers"

local MAX_LINES <const> = 80

local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return ok, out, code
end

local function files(dirs, pattern)
  local out = {}
  local p = assert(io.popen("cd " .. h.q(h.top) .. " && find " .. dirs .. " -name " .. h.q(pattern) .. " | sort"))
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

local function luacheck(args)
  local ok, out = run("cd " .. h.q(h.top) .. " && luacheck --no-color --codes -q " .. args)
  return ok, out
end

describe("the tree's guards", function()
  it("has luacheck (lua-check, tools/deps.sh)", function()
    local ok, out = run("luacheck --version")
    assert(ok, "luacheck is missing: make deps installs Debian's lua-check\n" .. out)
  end)

  it("reads no undefined global and leaves no dead code luacheck sees (scripts/, tools/)", function()
    local ok, out = luacheck("scripts tools")
    assert(ok, out)
  end)

  it("catches an undefined global (the check itself works)", function()
    local dir = h.tmpdir()
    local f = assert(io.open(dir .. "/bad.lua", "w"))
    f:write('local M = {}\nfunction M.host() return endpoint end\nreturn M\n')
    f:close()
    local ok, out = luacheck("--config " .. h.q(h.top .. "/.luacheckrc") .. " " .. h.q(dir .. "/bad.lua"))
    h.rmrf(dir)
    assert.is_falsy(ok)
    assert.matches("accessing undefined variable 'endpoint'", out, 1, true)
  end)

  it("has no Lua function over " .. MAX_LINES .. " lines in scripts/ (luac's line ranges)", function()
    local bad = {}
    for _, f in ipairs(files("scripts", "*.lua")) do
      local ok, out = run("luac5.4 -p -l -l " .. h.q(h.top .. "/" .. f))
      assert(ok, out)
      for first, last in out:gmatch("\nfunction <[^:>]+:(%d+),(%d+)>") do
        local n = tonumber(last) - tonumber(first) + 1
        if n > MAX_LINES then bad[#bad + 1] = ("%s:%s: %d lines"):format(f, first, n) end
      end
    end
    assert(#bad == 0, "functions over " .. MAX_LINES .. " lines:\n" .. table.concat(bad, "\n"))
  end)

  it("has no C function over " .. MAX_LINES .. " lines in engine/ or bindings/", function()
    local bad = {}
    for _, f in ipairs(files("engine bindings", "*.c")) do
      local n, start, sig = 0, nil, nil
      local prev
      for line in io.lines(h.top .. "/" .. f) do
        n = n + 1
        -- a function body opens with "{" in column 0, after its signature (the line before, or
        -- further up for a signature over several lines), and closes with "}" in column 0
        if line == "{" then
          start, sig = n, prev
        elseif line:match("^}") and start and not line:match("^};") then
          local len = n - start + 2
          if len > MAX_LINES then bad[#bad + 1] = ("%s:%d: %s: %d lines"):format(f, start - 1, sig or "?", len) end
          start = nil
        end
        prev = line
      end
    end
    assert(#bad == 0, "functions over " .. MAX_LINES .. " lines:\n" .. table.concat(bad, "\n"))
  end)
end)
