-- Go's text/tabwriter as kubeadm sets it up for every table it prints (minwidth 10, tabwidth 4,
-- padding 3, padchar ' ', no flags): every cell but a row's last is padded to its column's width,
-- max(10, widest cell + 3) in runes; the last cell is not part of a column.
local M = {}

local function width(s) return utf8.len(s) or #s end

-- rows: list of lists of cells (strings). Returns the lines joined by "\n", no trailing newline.
-- Go sizes a column per block of consecutive rows that have it; kubeadm's tables are uniform, so
-- one width per column is the same thing.
function M.format(rows)
  local widths = {}
  for _, r in ipairs(rows) do
    for i = 1, #r - 1 do widths[i] = math.max(widths[i] or 10, width(r[i]) + 3) end
  end
  local out = {}
  for n, r in ipairs(rows) do
    local parts = {}
    for i = 1, #r - 1 do parts[i] = r[i] .. (" "):rep(widths[i] - width(r[i])) end
    parts[#r] = r[#r]
    out[n] = table.concat(parts)
  end
  return table.concat(out, "\n")
end

return M
