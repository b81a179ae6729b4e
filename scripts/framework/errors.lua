-- Errors that carry an exit code through the runner to the process's exit status.
local M = {}
local mt = { __tostring = function(e) return e.msg end }

function M.new(code, msg) return setmetatable({ code = code, msg = msg }, mt) end
function M.is(e) return getmetatable(e) == mt end
function M.message(e) return M.is(e) and e.msg or tostring(e) end
function M.code(e) return M.is(e) and e.code or 1 end

return M
