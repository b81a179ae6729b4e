-- How a node's kubelet is driven: `require("runtime").get(name)` returns a table with
-- start_kubelet(ctx), stop_kubelet(ctx), restart_kubelet(ctx), kubelet_healthy(ctx) → bool.
-- Stock runtimes: systemd (a real node), none (touch no kubelet), lab (the lab's stand-in).
local M = {}

M.NAMES = { "systemd", "none", "lab" }

function M.get(name)
  name = name or "systemd"
  local ok, rt = pcall(require, "runtime." .. name)
  if not ok or type(rt) ~= "table" or name == "init" then
    if tostring(rt):find("module 'runtime." .. name .. "' not found", 1, true) or name == "init" then
      error(("unknown node runtime %q: must be one of %s"):format(name, table.concat(M.NAMES, ", ")), 0)
    end
    error(rt, 0)
  end
  return rt
end

-- The runtime a run selected with --node-runtime.
function M.for_ctx(ctx)
  return M.get(ctx.flags and ctx.flags["node-runtime"] or "systemd")
end

return M
