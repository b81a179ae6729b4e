-- The unified diff `kubeadm upgrade diff` prints: github.com/pmezard/go-difflib's UnifiedDiff
-- (a port of Python's difflib): SequenceMatcher's longest matching blocks (with the "popular
-- line" junk heuristic for 200+ lines), opcodes grouped with N context lines, go-difflib's range
-- format ("@@ -3,4 +3 @@") and its SplitLines (every line keeps its "\n"; the text gets one more
-- line, "\n", at its end), so the output is byte for byte kubeadm's.
-- (`upgrade apply --dry-run` prints its manifest diffs with it too: one diff in the project.)
local M = {}

-- go-difflib's SplitLines: strings.SplitAfter(s, "\n") with "\n" appended to the last piece.
function M.split_lines(s)
  local out, pos = {}, 1
  while true do
    local e = s:find("\n", pos, true)
    if not e then break end
    out[#out + 1] = s:sub(pos, e)
    pos = e + 1
  end
  out[#out + 1] = s:sub(pos) .. "\n"
  return out
end

-- Indices below are 0-based as in difflib; a[i] is the Lua a[i + 1].
local function matcher(a, b)
  local b2j = {}
  for j = 0, #b - 1 do
    local s = b[j + 1]
    local l = b2j[s]
    if not l then l = {}; b2j[s] = l end
    l[#l + 1] = j
  end
  local n = #b
  if n >= 200 then -- autojunk: lines more frequent than 1% + 1 never start a match
    local ntest = n // 100 + 1
    for s, l in pairs(b2j) do if #l > ntest then b2j[s] = nil end end
  end
  return { a = a, b = b, b2j = b2j }
end

local function longest(m, alo, ahi, blo, bhi)
  local a, b = m.a, m.b
  local besti, bestj, bestsize = alo, blo, 0
  local j2len = {}
  for i = alo, ahi - 1 do
    local new = {}
    for _, j in ipairs(m.b2j[a[i + 1]] or {}) do
      if j >= blo then
        if j >= bhi then break end
        local k = (j2len[j - 1] or 0) + 1
        new[j] = k
        if k > bestsize then besti, bestj, bestsize = i - k + 1, j - k + 1, k end
      end
    end
    j2len = new
  end
  -- no junk function: extend the match with equal lines on both sides (the popular ones)
  while besti > alo and bestj > blo and a[besti] == b[bestj] do
    besti, bestj, bestsize = besti - 1, bestj - 1, bestsize + 1
  end
  while besti + bestsize < ahi and bestj + bestsize < bhi and a[besti + bestsize + 1] == b[bestj + bestsize + 1] do
    bestsize = bestsize + 1
  end
  return besti, bestj, bestsize
end

-- Matching blocks {a, b, size}, adjacent ones merged, ending with {#a, #b, 0}.
function M.matching_blocks(a, b)
  local m = matcher(a, b)
  local matched = {}
  local function rec(alo, ahi, blo, bhi)
    local i, j, k = longest(m, alo, ahi, blo, bhi)
    if k > 0 then
      if alo < i and blo < j then rec(alo, i, blo, j) end
      matched[#matched + 1] = { i, j, k }
      if i + k < ahi and j + k < bhi then rec(i + k, ahi, j + k, bhi) end
    end
  end
  rec(0, #a, 0, #b)
  local out = {}
  local i1, j1, k1 = 0, 0, 0
  for _, x in ipairs(matched) do
    local i2, j2, k2 = x[1], x[2], x[3]
    if i1 + k1 == i2 and j1 + k1 == j2 then
      k1 = k1 + k2
    else
      if k1 > 0 then out[#out + 1] = { i1, j1, k1 } end
      i1, j1, k1 = i2, j2, k2
    end
  end
  if k1 > 0 then out[#out + 1] = { i1, j1, k1 } end
  out[#out + 1] = { #a, #b, 0 }
  return out
end

-- Opcodes {tag = "r"|"d"|"i"|"e", i1, i2, j1, j2}.
function M.opcodes(a, b)
  local i, j, out = 0, 0, {}
  for _, blk in ipairs(M.matching_blocks(a, b)) do
    local ai, bj, size = blk[1], blk[2], blk[3]
    local tag
    if i < ai and j < bj then tag = "r" elseif i < ai then tag = "d" elseif j < bj then tag = "i" end
    if tag then out[#out + 1] = { tag, i, ai, j, bj } end
    i, j = ai + size, bj + size
    if size > 0 then out[#out + 1] = { "e", ai, i, bj, j } end
  end
  return out
end

-- Opcodes grouped into hunks with n lines of context.
function M.grouped(a, b, n)
  if n < 0 then n = 3 end
  local codes = M.opcodes(a, b)
  if #codes == 0 then codes = { { "e", 0, 1, 0, 1 } } end
  local c = codes[1]
  if c[1] == "e" then codes[1] = { "e", math.max(c[2], c[3] - n), c[3], math.max(c[4], c[5] - n), c[5] } end
  c = codes[#codes]
  if c[1] == "e" then codes[#codes] = { "e", c[2], math.min(c[3], c[2] + n), c[4], math.min(c[5], c[4] + n) } end
  local groups, group = {}, {}
  for _, x in ipairs(codes) do
    local tag, i1, i2, j1, j2 = x[1], x[2], x[3], x[4], x[5]
    if tag == "e" and i2 - i1 > 2 * n then
      group[#group + 1] = { tag, i1, math.min(i2, i1 + n), j1, math.min(j2, j1 + n) }
      groups[#groups + 1] = group
      group = {}
      i1, j1 = math.max(i1, i2 - n), math.max(j1, j2 - n)
    end
    group[#group + 1] = { tag, i1, i2, j1, j2 }
  end
  if #group > 0 and not (#group == 1 and group[1][1] == "e") then groups[#groups + 1] = group end
  return groups
end

local function range(start, stop)
  local beginning, length = start + 1, stop - start
  if length == 1 then return tostring(beginning) end
  if length == 0 then beginning = beginning - 1 end
  return ("%d,%d"):format(beginning, length)
end

-- The unified diff of two texts ("" when equal), as go-difflib's WriteUnifiedDiff writes it.
function M.unified(old, new, from_file, to_file, context)
  local a, b = M.split_lines(old or ""), M.split_lines(new or "")
  local out = {}
  for _, g in ipairs(M.grouped(a, b, math.tointeger(context) or 3)) do
    if #out == 0 and ((from_file or "") ~= "" or (to_file or "") ~= "") then
      out[#out + 1] = ("--- %s\n+++ %s\n"):format(from_file or "", to_file or "")
    end
    local first, last = g[1], g[#g]
    out[#out + 1] = ("@@ -%s +%s @@\n"):format(range(first[2], last[3]), range(first[4], last[5]))
    for _, c in ipairs(g) do
      local tag, i1, i2, j1, j2 = c[1], c[2], c[3], c[4], c[5]
      if tag == "e" then
        for i = i1 + 1, i2 do out[#out + 1] = " " .. a[i] end
      else
        if tag == "r" or tag == "d" then for i = i1 + 1, i2 do out[#out + 1] = "-" .. a[i] end end
        if tag == "r" or tag == "i" then for j = j1 + 1, j2 do out[#out + 1] = "+" .. b[j] end end
      end
    end
  end
  return table.concat(out)
end

return M
