-- kube.duration and kube.tabwriter: the apimachinery duration texts and Go tabwriter layout every
-- kubeadm table uses (certs check-expiration, token list, upgrade plan), one home each.
local duration = require "kube.duration"
local tabwriter = require "kube.tabwriter"

describe("kube.duration", function()
  it("human is apimachinery's HumanDuration (certs check-expiration)", function()
    local f = duration.human
    local day, year = 86400, 365 * 86400
    assert.same({ "<invalid>", "0s", "0s", "119s", "2m", "2m1s", "10m", "3h", "3h1m", "8h", "47h", "2d", "2d1h" },
      { f(-2), f(-1), f(-0.5), f(119), f(120), f(121), f(600), f(3 * 3600), f(3 * 3600 + 60), f(8 * 3600),
        f(48 * 3600 - 1), f(2 * day), f(2 * day + 3600) })
    -- a one-year certificate a moment after it was made, and at exactly its length
    assert.equal("364d", f(year - 0.2)); assert.equal("365d", f(year))
    assert.equal("729d", f(2 * year - 1)); assert.equal("2y", f(2 * year)); assert.equal("2y1d", f(2 * year + day))
    assert.equal("7y364d", f(8 * year - 1)); assert.equal("9y", f(10 * year - 60)); assert.equal("10y", f(10 * year))
  end)

  it("short is apimachinery's ShortHumanDuration (token list)", function()
    local f = duration.short
    assert.same({ "<invalid>", "0s", "0s", "59s", "1m", "59m", "23h", "1d", "364d", "1y", "1y" },
      { f(-2), f(-1.5), f(-0.5), f(59), f(60), f(3599), f(86399), f(86400), f(365 * 86400 - 1), f(365 * 86400),
        f(366 * 86400) })
  end)
end)

describe("kube.tabwriter", function()
  it("pads every cell but the last to max(10, widest + 3), counting runes", function()
    local text = tabwriter.format {
      { "COMPONENT", "NODE", "CURRENT", "TARGET" },
      { "kubelet", "n1", "v1.35.4", "v1.36.3" },
      { "kube-apiserver", "cp1", "v1.35.4", "v1.36.3" },
    }
    assert.equal(table.concat({
      "COMPONENT        NODE      CURRENT   TARGET",
      "kubelet          n1        v1.35.4   v1.36.3",
      "kube-apiserver   cp1       v1.35.4   v1.36.3" }, "\n"), text)
    assert.equal("é         x", tabwriter.format { { "é", "x" } })
    assert.equal("", tabwriter.format {})
  end)
end)
