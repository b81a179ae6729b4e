-- "did you mean" for unknown field names: the nearest known name by edit distance.
local suggest = {}

-- Levenshtein distance, case-insensitive (a wrong case is a near miss)
function suggest.distance(a, b)
  a, b = a:lower(), b:lower()
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    local ca = a:byte(i)
    for j = 1, #b do
      local cost = (ca == b:byte(j)) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

-- The closest of `names` to `word`, if it is close enough to be a likely typo.
function suggest.nearest(word, names)
  local best, best_d
  for _, n in ipairs(names) do
    local d = suggest.distance(word, n)
    if not best_d or d < best_d or (d == best_d and n < best) then best, best_d = n, d end
  end
  if best and best_d <= math.max(2, #word // 3) and best_d < #word then return best end
  return nil
end

return suggest
