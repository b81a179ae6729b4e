-- Failures a phase got back and never read. A module whose calls can fail (kube.client) registers a
-- drain here; the runner asks at the end of each phase and the dispatcher at the end of a command, so
-- the framework hears of them without knowing the module. Each is logged as an error;
-- MOONADM_STRICT_RESULTS=1 (set by the test suites) makes them fail what otherwise succeeded.
local log = require "framework.log"

local M = {}

M.strict = os.getenv("MOONADM_STRICT_RESULTS") == "1"

local drains = {}

-- drain() -> list of {site = "file:line", message =}, count of more not kept; it forgets them.
function M.register(drain) drains[#drains + 1] = drain end

-- Logs what `where` (a phase path or a command) left unread; returns the failure's message when
-- strict, else nil.
function M.unchecked(where)
  local list, dropped = {}, 0
  for _, drain in ipairs(drains) do
    local l, d = drain()
    table.move(l, 1, #l, #list + 1, list)
    dropped = dropped + d
  end
  if #list == 0 and dropped == 0 then return nil end
  for _, u in ipairs(list) do
    log.error(("[%s] an API call failed and nothing checked its result (%s): %s"):format(where, u.site, u.message))
  end
  if dropped > 0 then log.error(("[%s] %d more unchecked API failures were not kept"):format(where, dropped)) end
  if not M.strict then return nil end
  local first = list[1] or { site = "?", message = "not kept" }
  return ("%d API failure%s never checked (first at %s: %s)"):format(#list + dropped,
    #list + dropped == 1 and " was" or "s were", first.site, first.message)
end

return M
