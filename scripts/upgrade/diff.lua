-- A unified diff of two texts (what `upgrade apply --dry-run` and `upgrade diff` print for a
-- manifest): LCS over lines, hunks with `context` lines around each change.
local M = {}

local function lines(s)
  local out = {}
  for l in (s or ""):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  local rest = (s or ""):match("([^\n]+)$")
  if rest then out[#out + 1] = rest end
  return out
end

-- The edit script: list of {op = " "|"-"|"+", text}.
function M.edits(a, b)
  local n, m = #a, #b
  local L = {}
  for i = n + 1, 1, -1 do
    L[i] = {}
    for j = m + 1, 1, -1 do
      if i > n or j > m then L[i][j] = 0
      elseif a[i] == b[j] then L[i][j] = L[i + 1][j + 1] + 1
      else L[i][j] = math.max(L[i + 1][j], L[i][j + 1]) end
    end
  end
  local out, i, j = {}, 1, 1
  while i <= n or j <= m do
    if i <= n and j <= m and a[i] == b[j] then
      out[#out + 1] = { op = " ", text = a[i], ai = i, bj = j }; i, j = i + 1, j + 1
    elseif i <= n and (j > m or L[i + 1][j] >= L[i][j + 1]) then
      out[#out + 1] = { op = "-", text = a[i], ai = i, bj = j }; i = i + 1
    else
      out[#out + 1] = { op = "+", text = b[j], ai = i, bj = j }; j = j + 1
    end
  end
  return out
end

-- The unified diff text ("" when equal).
function M.unified(old, new, old_name, new_name, context)
  context = context or 3
  local a, b = lines(old), lines(new)
  local e = M.edits(a, b)
  local changed = {}
  for k, x in ipairs(e) do if x.op ~= " " then changed[#changed + 1] = k end end
  if #changed == 0 then return "" end
  local out = { "--- " .. (old_name or "old"), "+++ " .. (new_name or "new") }
  local k = 1
  while k <= #changed do
    local first, last = changed[k], changed[k]
    while changed[k + 1] and changed[k + 1] - last <= 2 * context + 1 do k = k + 1; last = changed[k] end
    local s, t = math.max(1, first - context), math.min(#e, last + context)
    local ac, bc, as, bs = 0, 0, nil, nil
    local body = {}
    for x = s, t do
      local ed = e[x]
      if ed.op ~= "+" then ac = ac + 1; as = as or ed.ai end
      if ed.op ~= "-" then bc = bc + 1; bs = bs or ed.bj end
      body[#body + 1] = ed.op .. ed.text
    end
    out[#out + 1] = ("@@ -%d,%d +%d,%d @@"):format(as or e[s].ai - 1, ac, bs or e[s].bj - 1, bc)
    for _, l in ipairs(body) do out[#out + 1] = l end
    k = k + 1
  end
  return table.concat(out, "\n") .. "\n"
end

return M
