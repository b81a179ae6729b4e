-- reset's confirmation: kubeadm's y/N prompt. Without a terminal on stdin there is nobody to ask:
-- the reset is refused with a message naming --force, instead of reading a pipe or hanging.
local core = require "moonadm.core"
local errors = require "framework.errors"

local M = {}

M.WARNING = "[reset] WARNING: Changes made to this host by 'kubeadm init' or 'kubeadm join' will be reverted."
M.QUESTION = "[reset] Are you sure you want to proceed? [y/N]: "

-- opts: {isatty = bool, read = fn() -> line|nil, write = fn(text)}. Raises when not confirmed.
function M.confirm(opts)
  opts = opts or {}
  local tty = opts.isatty
  if tty == nil then tty = core.isatty(0) end
  if not tty then
    error(errors.new(1, "[reset] refusing to reset without confirmation: standard input is not a terminal, so " ..
      "the y/N prompt cannot be answered; run `moonadm reset --force` (or -f) to reset without prompting"), 0)
  end
  local write = opts.write or function(s) io.stdout:write(s); io.stdout:flush() end
  write(M.WARNING .. "\n")
  write(M.QUESTION)
  local line = (opts.read or function() return io.stdin:read("l") end)()
  if not line or line:lower():gsub("^%s+", ""):gsub("%s+$", "") ~= "y" then
    if not line then write("\n") end
    error(errors.new(1, "aborted reset operation"), 0)
  end
  return true
end

return M
