-- Go's text/tabwriter as kubeadm sets it up for every table it prints (minwidth 10, tabwidth 4,
-- padding 3, padchar ' ', no flags): every cell but a row's last is padded to its column's width,
-- max(10, widest cell + 3) in runes; the last cell is not part of a column.
local M = {}

local function width(s) return utf8.len(s) or #s end

-- rows: list of lists of cells (strings). Returns the lines joined by "\n", no trailing newline.
-- Go sizes a column per block of consecutive rows that have it; kubeadm's tables are uniform, so
-- one width per column is the same thing.
function M.format(rows)
  local widths, cell_widths = {}, {}
  for n, r in ipairs(rows) do
    local w = {}
    for i = 1, #r - 1 do
      local wi = width(r[i])
      w[i] = wi
      if wi + 3 > (widths[i] or 10) then widths[i] = wi + 3 end
    end
    cell_widths[n] = w
  end
  local out, pad = {}, {}
  for n, r in ipairs(rows) do
    local w, parts = cell_widths[n], {}
    for i = 1, #r - 1 do
      local k = (widths[i] or 10) - w[i]
      local sp = pad[k]
      if not sp then sp = (" "):rep(k); pad[k] = sp end
      parts[i] = r[i] .. sp
    end
    parts[#r] = r[#r]
    out[n] = table.concat(parts)
  end
  return table.concat(out, "\n")
end

return M
