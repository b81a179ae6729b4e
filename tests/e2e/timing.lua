-- busted --helper for the e2e run (tests/run.sh): prints each spec file's wall time to stderr, so a
-- CI log shows where its minutes go (the CI budget is ~60 minutes; tests/e2e/long_* take the rest).
local busted = require("busted")

local started = {}
busted.subscribe({ "file", "start" }, function(file)
  started[file.name] = os.time()
  return nil, true
end)
busted.subscribe({ "file", "end" }, function(file)
  local t0 = started[file.name] or os.time()
  io.stdout:flush() -- busted's own output, block-buffered into the log, goes first
  io.stderr:write(("e2e-time: %s %d s\n"):format(file.name, os.time() - t0))
  return nil, true
end)
