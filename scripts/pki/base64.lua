-- Standard base64 (RFC 4648, padded), as kubeconfig `*-data` fields carry PEM.
local M = {}

local ALPHA <const> = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local ENC, DEC = {}, {}
for i = 1, 64 do
  local c = ALPHA:sub(i, i)
  ENC[i - 1], DEC[c:byte()] = c, i - 1
end

function M.encode(s)
  local out, n = {}, #s
  for i = 1, n - 2, 3 do
    local a, b, c = s:byte(i, i + 2)
    local v = a << 16 | b << 8 | c
    out[#out + 1] = ENC[v >> 18] .. ENC[v >> 12 & 63] .. ENC[v >> 6 & 63] .. ENC[v & 63]
  end
  local rest = n % 3
  if rest == 1 then
    local v = s:byte(n) << 16
    out[#out + 1] = ENC[v >> 18] .. ENC[v >> 12 & 63] .. "=="
  elseif rest == 2 then
    local v = s:byte(n - 1) << 16 | s:byte(n) << 8
    out[#out + 1] = ENC[v >> 18] .. ENC[v >> 12 & 63] .. ENC[v >> 6 & 63] .. "="
  end
  return table.concat(out)
end

-- The bytes of a base64 text (whitespace ignored) | nil, message.
function M.decode(s)
  s = s:gsub("%s", "")
  if #s % 4 ~= 0 then return nil, "invalid base64 data (length not a multiple of 4)" end
  local out = {}
  for i = 1, #s, 4 do
    local q = s:sub(i, i + 3)
    local pad = #q:match("=*$")
    if pad > 2 or (pad > 0 and i + 4 <= #s) then return nil, "invalid base64 padding" end
    local v = 0
    for j = 1, 4 - pad do
      local d = DEC[q:byte(j)]
      if not d then return nil, ("invalid base64 character %q"):format(q:sub(j, j)) end
      v = v | d << (24 - 6 * j)
    end
    local bytes = string.char(v >> 16 & 255, v >> 8 & 255, v & 255)
    out[#out + 1] = bytes:sub(1, 3 - pad)
  end
  return table.concat(out)
end

return M
