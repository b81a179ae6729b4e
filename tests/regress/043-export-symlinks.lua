-- Issue 46, defect 7: `scripts export DIR` wrote through symlinks another user planted in DIR (a 0777
-- dir): DIR/framework -> a dir of theirs took the files, and with --force a planted link's target was
-- overwritten. Export now checks DIR with the site scripts' trust check (framework/trust.lua) and
-- refuses any symlink under it: a DIR others can write, or one holding a link, is refused before a
-- byte is written, naming the path and the fix; no link's target is ever written.
local h = require "helpers"

local NOBODY <const> = 65534

describe("regress 043: scripts export never writes through a planted symlink", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmrf(dir) end)

  local function export(d, ...)
    return h.moonadm { "scripts", "export", d, ... }
  end
  local function listing(d)
    local p = io.popen("ls -A " .. h.q(d))
    local s = p:read("a")
    p:close()
    return s
  end

  it("a 0777 DIR is refused before anything is written", function()
    local ex = dir .. "/ex"
    h.sh_ok(("mkdir -m 0777 %s"):format(h.q(ex)))
    local code, out, err = export(ex)
    assert.not_equal(0, code, out .. err)
    assert.matches(("refusing to export into %s: %s is writable by others (mode 0777); fix: chmod go-w %s")
      :format(ex, ex, ex), out .. err, 1, true)
    assert.equal("", listing(ex))
  end)

  it("a directory link nobody planted (DIR/framework -> their dir): refused, with and without --force", function()
    local ex, victim = dir .. "/ex", dir .. "/victim"
    h.sh_ok(("mkdir -m 0777 %s %s && ln -s %s %s && chown -h %d %s"):format(h.q(ex), h.q(victim), h.q(victim),
      h.q(ex .. "/framework"), NOBODY, h.q(ex .. "/framework")))
    for _, force in ipairs { false, true } do
      local code, out, err = export(ex, force and "--force" or nil)
      assert.not_equal(0, code, out .. err)
      assert.matches("refusing to export into " .. ex, out .. err, 1, true)
      assert.equal("", listing(victim), "nothing written through the link")
    end
    -- the dir made 0755 (the link stays): the link itself is refused
    h.sh_ok("chmod 0755 " .. h.q(ex))
    local code, out, err = export(ex, "--force")
    assert.not_equal(0, code, out .. err)
    assert.matches(("%s is a symlink moonadm did not make; fix: rm %s"):format(ex .. "/framework", ex .. "/framework"),
      out .. err, 1, true)
    assert.equal("", listing(victim), "nothing written through the link")
  end)

  it("a file link to another file: its target is never overwritten, with --force either", function()
    local ex, target = dir .. "/ex", dir .. "/precious"
    assert.equal(0, (export(ex)))
    h.write(target, "precious\n")
    h.sh_ok(("rm %s && ln -s %s %s"):format(h.q(ex .. "/framework/version.lua"), h.q(target), h.q(ex .. "/framework/version.lua")))
    for _, force in ipairs { false, true } do
      local code, out, err = export(ex, force and "--force" or nil)
      assert.not_equal(0, code, out .. err)
      assert.matches(("%s is a symlink moonadm did not make"):format(ex .. "/framework/version.lua"), out .. err, 1, true)
      assert.equal("precious\n", h.read(target))
    end
  end)

  it("a new DIR (in a sticky dir such as /tmp too), an existing safe DIR, the operator's link to a safe dir: exported", function()
    h.sh_ok(("mkdir -m 1777 %s"):format(h.q(dir .. "/sticky")))
    local code, out, err = export(dir .. "/sticky/ex")
    assert.equal(0, code, out .. err)
    assert.truthy(h.read(dir .. "/sticky/ex/framework/version.lua"))
    code, out, err = export(dir .. "/new/deeper")
    assert.equal(0, code, out .. err)
    assert.truthy(h.read(dir .. "/new/deeper/framework/version.lua"))
    code, out, err = export(dir .. "/new/deeper")
    assert.equal(0, code, out .. err)
    h.sh_ok(("ln -s %s %s"):format(h.q(dir .. "/new/deeper"), h.q(dir .. "/mine")))
    code, out, err = export(dir .. "/mine", "--force")
    assert.equal(0, code, out .. err)
    -- but not a DIR that is a link nobody owns
    h.sh_ok(("chown -h %d %s"):format(NOBODY, h.q(dir .. "/mine")))
    code, out, err = export(dir .. "/mine", "--force")
    assert.not_equal(0, code, out .. err)
    assert.matches(("%s is a symlink owned by uid %d"):format(dir .. "/mine", NOBODY), out .. err, 1, true)
  end)
end)
