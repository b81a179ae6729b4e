-- moonadm installed as `kubeadm` (a link of that name, as the .deb's update-alternatives makes):
-- what tools parse from kubeadm comes out in kubeadm's shape. `version` in each output format held
-- against the reference kubeadm v1.35.4 (the fields describing a Go build aside); the join command
-- printed as `kubeadm join`. Run as moonadm, neither changes.
local cjson = require "cjson"
local h = require "helpers"
local ref = require "reference_kubeadm"
local progname = require "framework.progname"
local joincmd = require "cluster.join_command"

local sh, q = h.sh, h.q

-- Fields of `version` that describe the Go build of kubeadm, where moonadm says what it is.
local BUILD_FIELDS = { gitCommit = true, buildDate = true, goVersion = true, compiler = true }

describe("moonadm run as kubeadm", function()
  local dir, kubeadm
  setup(function()
    dir = h.tmpdir()
    kubeadm = dir .. "/kubeadm"
    assert(sh(("ln -s %s %s"):format(q(h.bin), q(kubeadm))) == 0)
  end)
  teardown(function() h.rmrf(dir) end)

  it("version -o short names the release moonadm makes by default, or MOONADM_KUBEADM_VERSION's", function()
    local code, out = sh(q(kubeadm) .. " version -o short")
    assert.equal(0, code, out)
    assert.equal("v1.35.4\n", out)
    code, out = sh("MOONADM_KUBEADM_VERSION=v1.36.3 " .. q(kubeadm) .. " version -o short")
    assert.equal(0, code, out)
    assert.equal("v1.36.3\n", out)
    code, out = sh("MOONADM_KUBEADM_VERSION=v1.35.2 " .. q(kubeadm) .. " version -o json")
    assert.equal(0, code, out)
    assert.equal("v1.35.2", cjson.decode(out).clientVersion.gitVersion)
    assert.equal("35", cjson.decode(out).clientVersion.minor)
    for _, bad in ipairs { "v1.30.0", "1.35.4", "v1.35", "v2.35.0" } do
      code, out = sh("MOONADM_KUBEADM_VERSION=" .. bad .. " " .. q(kubeadm) .. " version -o short 2>&1")
      assert.equal(1, code, out)
      assert.matches("MOONADM_KUBEADM_VERSION=" .. bad .. ": not a release of a minor this moonadm makes (v1.35 to v1.37",
        out, 1, true)
    end
    code, out = sh(q(h.bin) .. " version -o short")
    assert.equal(0, code, out)
    assert.not_equal("v1.35.4\n", out) -- as moonadm: its own version
  end)

  ref.when_built(nil, it, pending)("version in every output format has kubeadm v1.35.4's shape", function()
    ref.require()
    for _, o in ipairs { "json", "yaml", "" } do
      local flag = o == "" and "" or (" -o " .. o)
      local rc, want = sh(q(ref.bin) .. " version" .. flag)
      assert.equal(0, rc, want)
      local code, got = sh(q(kubeadm) .. " version" .. flag)
      assert.equal(0, code, got)
      -- the same text once the build fields are blanked in both
      local function blank(text)
        for k in pairs(BUILD_FIELDS) do
          local K = k:sub(1, 1):upper() .. k:sub(2)
          text = text:gsub('("' .. k .. '": )"[^"]*"', '%1""'):gsub("(\n  " .. k .. ": )[^\n]*", "%1X")
            :gsub("(" .. K .. ':)"[^"]*"', '%1""')
        end
        return text
      end
      assert.equal(blank(want), blank(got), "kubeadm version" .. flag)
      if o == "json" then
        local a, b = cjson.decode(want).clientVersion, cjson.decode(got).clientVersion
        for k, v in pairs(a) do
          if not BUILD_FIELDS[k] then assert.equal(v, b[k], k) end
        end
      end
    end
  end)

  it("prints the join command as kubeadm's, and as moonadm's when run as moonadm", function()
    local o = { endpoint = "192.0.2.10:6443", token = "abcdef.0123456789abcdef", hashes = { "sha256:00" } }
    finally(function() progname.set(nil) end)
    progname.set("/usr/bin/kubeadm")
    assert.equal("kubeadm join 192.0.2.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:00 ",
      joincmd.one_line(joincmd.text(o)))
    progname.set("/usr/local/bin/moonadm")
    assert.matches("^moonadm join 192%.0%.2%.10:6443 ", joincmd.one_line(joincmd.text(o)))
    progname.set("kubeadm-wrapper") -- only the name kubeadm itself
    assert.matches("^moonadm join ", joincmd.one_line(joincmd.text(o)))
  end)
end)
