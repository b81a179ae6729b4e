-- Output a person reads (issue 20, item 6): each long wait says what it waits for and its timeout
-- when it starts, and the time it took when it ends, with durations as Go's time.Duration prints them.
local duration = require "config.duration"

describe("wait output", function()
  it("formats seconds as Go's Duration.String()", function()
    assert.equal("1.001s", duration.format_seconds(1.001))
    assert.equal("4m0s", duration.format_seconds(240))
    assert.equal("250ms", duration.format_seconds(0.25))
    assert.equal("3.5s", duration.format_seconds(3.5))
    assert.equal("1m30s", duration.format_seconds(90))
    assert.equal("0s", duration.format_seconds(0))
    assert.equal("40s", duration.format_seconds(40))
  end)

  it("the reset's pod-stop wait says its timeout and how long it took", function()
    local log = require "framework.log"
    local lines = {}
    local saved = log.info
    log.info = function(fmt, ...) lines[#lines + 1] = select("#", ...) > 0 and fmt:format(...) or fmt end
    local cleanup = require "reset.cleanup"
    local manifests = require "manifests.installed"
    local clean = require "node.clean"
    local files, remove = manifests.files, clean.remove
    manifests.files = function() return { "/etc/kubernetes/manifests/kube-apiserver.yaml" } end
    clean.remove = function() return true end
    local ok, err = pcall(cleanup.remove_manifests, { dry_run = false }, { name = "lab" },
      { wait = { timeout = 5, status = function() return {} end } })
    manifests.files, clean.remove, log.info = files, remove, saved
    assert.is_true(ok, tostring(err))
    local text = table.concat(lines, "\n")
    assert.matches("[reset] Waiting for the control plane components to stop. This can take up to 5s", text, 1, true)
    assert.matches("%[reset%] The static pods stopped after [%d.]+%S*s", text)
  end)
end)
