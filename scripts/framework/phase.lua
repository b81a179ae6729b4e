-- Building blocks for phase tables. A phase is plain data:
--   name, desc, run(ctx), run_if(ctx) -> bool, prepare(ctx, selected) (a parent's planning: the
--   runner hands it the names of its children that will run; its error is raised by the first of
--   them), children, requires, provides (lists of capability
--   names, or functions of ctx returning one), hidden, experimental, aliases, when, always_run
--   (never skipped by --resume: checks such as preflight).
-- `when` places a phase behind a feature gate in a flow: {gate = "Name", value = true|false}.
local M = {}

-- A copy of phase p that runs only when cond holds; the original table stays untouched so the
-- same phase can sit in two flows under different conditions.
function M.when(cond, p)
  return setmetatable({ when = cond }, { __index = p })
end

function M.gate(name, value)
  if value == nil then value = true end
  return { gate = name, value = value }
end

return M
