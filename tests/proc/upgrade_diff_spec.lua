-- `moonadm upgrade diff`: the go-difflib unified diff kubeadm prints (scripts/upgrade/difflib.lua,
-- expected texts from Python's difflib, which go-difflib ports line for line: 900 random cases
-- agreed when the module was written), and the command's checks before it reads the cluster.
local h = require "helpers"
local difflib = require "upgrade.difflib"

local P = "/etc/kubernetes/manifests/kube-apiserver.yaml"
local function ud(a, b, n) return difflib.unified(a, b, P, "new manifest", n) end
local HEAD = "--- " .. P .. "\n+++ new manifest\n"

describe("upgrade.difflib (go-difflib's unified diff)", function()
  local a = "a\nb\nc\nd\ne\nf\ng\nh\n"
  local b = "a\nb\nc\nD\ne\nf\ng\nh\ni\n"

  it("hunks with N context lines, go-difflib's ranges and its extra last line", function()
    assert.equal(HEAD .. "@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n@@ -8,2 +8,3 @@\n h\n+i\n \n", ud(a, b, 1))
    assert.equal(HEAD .. "@@ -1,9 +1,10 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n h\n+i\n \n", ud(a, b, 3))
  end)

  it("prints nothing for equal texts, and single-line and empty ranges as go-difflib", function()
    assert.equal("", ud(a, a, 3))
    assert.equal(HEAD .. "@@ -0,0 +1 @@\n+a\n", ud("", "a\n", 0))
    assert.equal(HEAD .. "@@ -1,3 +1,2 @@\n a\n b\n-\n", ud("a\nb\n", "a\nb", 3))
  end)

  it("treats lines more frequent than 1% of 200+ lines as popular (difflib's autojunk)", function()
    local A = {}
    for i = 0, 239 do A[#A + 1] = i % 2 == 0 and "x\n" or ("line%d\n"):format(i) end
    local old = table.concat(A)
    local new = old:gsub("line101\n", "line101 changed\n"):gsub("line7\n", "")
    assert.equal(HEAD .. "@@ -5,7 +5,6 @@\n x\n line5\n x\n-line7\n x\n line9\n x\n" ..
      "@@ -99,7 +98,7 @@\n x\n line99\n x\n-line101\n+line101 changed\n x\n line103\n x\n", ud(old, new, 3))
  end)

  it("a negative context means 3, as in go-difflib", function()
    assert.equal(ud(a, b, 3), ud(a, b, -1))
  end)
end)

describe("moonadm upgrade diff", function()
  it("refuses before reading the cluster when a manifest is missing (kubeadm's validateManifestsPath)", function()
    local root = h.tmpdir()
    local code, _, err = h.moonadm { "upgrade", "diff", "v1.35.4", "--root", root }
    h.rmrf(root)
    assert.equal(1, code)
    assert.matches('the manifest file "/etc/kubernetes/manifests/kube-apiserver.yaml" does not exist', err, 1, true)
  end)

  it("has kubeadm v1.35's flags", function()
    local names = {}
    for _, f in ipairs(require("commands.upgrade").diff_flags) do names[#names + 1] = f.name end
    table.sort(names)
    assert.same({ "config", "context-lines", "kubeconfig" }, names)
  end)
end)
