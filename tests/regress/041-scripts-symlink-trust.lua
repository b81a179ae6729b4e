-- Issue 46, defect 2: the trust check of a --scripts dir skipped symlinks (site/trust.lua check_tree)
-- while the loader followed them: framework/version.lua linked to a file in a 0777 dir was rewritten
-- by user nobody and root ran it; the same through a linked subdirectory. The check now walks every
-- link to its target as the kernel does and judges each directory and link on the way; phase and flow
-- files alike. A link to a safe place is still followed.
local h = require "helpers"

local NOBODY <const> = 65534
-- what nobody would put there: leaves a mark when root runs it
local HOSTILE = 'local f = io.open(%q, "w") f:write("ran as root") f:close()\n' ..
  'return { scripts = "0.1.0", engine = "0.1", kubernetes = "v1.35.4" }\n'

describe("regress 041: symlinks in site scripts", function()
  local dir, mark
  before_each(function()
    dir = h.tmpdir()
    mark = dir .. "/ran"
  end)
  after_each(function() h.rmrf(dir) end)

  local function export(d)
    local code, _, err = h.moonadm { "scripts", "export", d }
    assert.equal(0, code, err)
  end
  -- a 0777 dir holding a file nobody owns, with the hostile content
  local function evil(name)
    local d = dir .. "/evil"
    h.write(d .. "/" .. name, HOSTILE:format(mark))
    h.sh_ok(("chmod 0777 %s && chown %d %s"):format(h.q(d), NOBODY, h.q(d .. "/" .. name)))
    return d
  end
  local function refused(args, what, path, why)
    local code, out, err = h.moonadm(args)
    assert.not_equal(0, code, out .. err)
    assert.matches(("refusing the %s %s: %s"):format(what, path, why), err, 1, true)
    assert.is_nil(h.read(mark), "the hostile script did not run")
    return err
  end

  it("a script linked into a 0777 dir (the issue's reproduction): refused, naming the dir, the link and the fix", function()
    local s1 = dir .. "/s1"
    export(s1)
    local e = evil("version.lua")
    h.sh_ok(("rm %s && ln -s %s %s"):format(h.q(s1 .. "/framework/version.lua"), h.q(e .. "/version.lua"),
      h.q(s1 .. "/framework/version.lua")))
    local err = refused({ "--scripts", s1, "version" }, "scripts dir", s1,
      ("%s is writable by others (mode 0777), reached through the symlink %s -> %s; fix: chmod go-w %s")
        :format(e, s1 .. "/framework/version.lua", e .. "/version.lua", e))
    assert.matches("--insecure-scripts", err, 1, true)
    -- the dir made safe: nobody's file is still refused, by its owner
    h.sh_ok("chmod 0755 " .. h.q(e))
    refused({ "--scripts", s1, "version" }, "scripts dir", s1,
      ("%s is owned by uid %d, neither root nor the invoking user"):format(e .. "/version.lua", NOBODY))
  end)

  it("a linked subdirectory: its tree is judged too", function()
    local s1 = dir .. "/s1"
    export(s1)
    local e = evil("version.lua")
    h.sh_ok(("chmod 0755 %s && mv %s %s && ln -s %s %s"):format(h.q(e), h.q(s1 .. "/framework"), h.q(e .. "/framework"),
      h.q(e .. "/framework"), h.q(s1 .. "/framework")))
    h.sh_ok(("mv %s %s"):format(h.q(e .. "/version.lua"), h.q(e .. "/framework/version.lua")))
    refused({ "--scripts", s1, "version" }, "scripts dir", s1,
      ("%s is owned by uid %d, neither root nor the invoking user, reached through the symlink %s -> %s")
        :format(e .. "/framework/version.lua", NOBODY, s1 .. "/framework", e .. "/framework"))
    -- and a 0777 dir above the link's target
    h.sh_ok(("chown 0 %s && chmod 0777 %s"):format(h.q(e .. "/framework/version.lua"), h.q(e)))
    refused({ "--scripts", s1, "version" }, "scripts dir", s1, e .. " is writable by others (mode 0777)")
  end)

  it("a link owned by nobody, a link loop, and a relative --scripts path are judged as the loader reads them", function()
    local s1 = dir .. "/s1"
    export(s1)
    h.sh_ok(("ln -s . %s && ln -s ../../s1 %s"):format(h.q(s1 .. "/loop"), h.q(s1 .. "/framework/up")))
    local code, out, err = h.moonadm { "--scripts", s1, "version" }
    assert.equal(0, code, err)
    assert.matches("from " .. s1, out, 1, true)
    h.sh_ok(("chown -h %d %s"):format(NOBODY, h.q(s1 .. "/loop")))
    refused({ "--scripts", s1, "version" }, "scripts dir", s1,
      ("%s is a symlink owned by uid %d, neither root nor the invoking user; fix: rm %s"):format(s1 .. "/loop", NOBODY,
        s1 .. "/loop"))
    -- relative: from the real working directory
    h.sh_ok(("cd %s && chmod 0777 . && %s --scripts s1 version >/dev/null 2>%s; chmod 0700 ."):format(h.q(dir), h.q(h.bin),
      h.q(dir .. "/err")))
    assert.matches(("refusing the scripts dir s1: %s is writable by others (mode 0777)"):format(dir),
      h.read(dir .. "/err"), 1, true)
  end)

  it("a link to a root-owned file in a safe dir is followed", function()
    local s1 = dir .. "/s1"
    export(s1)
    h.sh_ok(("mkdir -m 0755 %s && mv %s %s && ln -s %s %s"):format(h.q(dir .. "/mine"), h.q(s1 .. "/framework/version.lua"),
      h.q(dir .. "/mine/version.lua"), h.q(dir .. "/mine/version.lua"), h.q(s1 .. "/framework/version.lua")))
    local code, _, err = h.moonadm { "--scripts", s1, "version" }
    assert.equal(0, code, err)
  end)

  it("a --phase-file or --flow linked into a 0777 dir: refused", function()
    local e = evil("hello.lua")
    h.write(e .. "/hello.lua", 'io.open(' .. ("%q"):format(mark) .. ', "w"):write("ran") return { name = "hello" }')
    h.sh_ok(("chown %d %s && ln -s %s %s"):format(NOBODY, h.q(e .. "/hello.lua"), h.q(e .. "/hello.lua"), h.q(dir .. "/pf.lua")))
    refused({ "init", "phase", "hello", "--root", dir .. "/r", "--phase-file", dir .. "/pf.lua" }, "phase file",
      dir .. "/pf.lua", ("%s is writable by others (mode 0777), reached through the symlink %s -> %s")
        :format(e, dir .. "/pf.lua", e .. "/hello.lua"))
    h.write(e .. "/init-flow.lua", 'io.open(' .. ("%q"):format(mark) .. ', "w"):write("ran") return { "preflight" }')
    h.sh_ok(("ln -s %s %s"):format(h.q(e), h.q(dir .. "/flows")))
    refused({ "phases", "init", "--flow", dir .. "/flows/init-flow.lua" }, "flow file", dir .. "/flows/init-flow.lua",
      ("%s is writable by others (mode 0777), reached through the symlink %s -> %s"):format(e, dir .. "/flows", e))
  end)
end)
