-- Issue 18 (known defect): `token delete` read the kubeconfig and called the API before it checked
-- the tokens' format, so `token delete abcdef bad!` deleted abcdef and then failed, and a bad
-- argument with no reachable cluster reported the kubeconfig instead. Every argument is checked
-- first, with kubeadm's message (the argument is not echoed: it may be a mistyped secret).
local h = require "helpers"

describe("regress 022: token delete checks every token's format before anything else", function()
  for _, args in ipairs { { "bad!" }, { "abcdef", "bad!" }, { "abcdef.0123456789abcdeX" }, { "ABCDEF" } } do
    it("refuses " .. table.concat(args, " "), function()
      local a = { "token", "delete" }
      for _, x in ipairs(args) do a[#a + 1] = x end
      a[#a + 1] = "--kubeconfig"
      a[#a + 1] = "/nonexistent/admin.conf"
      local code, out, err = h.moonadm(a)
      assert.not_equal(0, code)
      assert.equal([[given token didn't match pattern "[a-z0-9]{6}" or "[a-z0-9]{6}\\.[a-z0-9]{16}"]], (err:gsub("%s+$", "")))
      assert.not_matches("kubeconfig", err, 1, true)
      assert.not_matches("deleted", out, 1, true)
    end)
  end
end)
