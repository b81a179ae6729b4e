-- Go's time.Duration text form: ParseDuration and Duration.String, on integer nanoseconds.
local duration = {}

local NS <const> = 1
local US <const> = 1000
local MS <const> = 1000000
local S <const> = 1000000000
local UNITS <const> = {
  ns = NS, us = US, ["\xc2\xb5s"] = US, ["\xce\xbcs"] = US, ms = MS,
  s = S, m = 60 * S, h = 3600 * S,
}

-- Parse "24h", "4m0s", "1.5h", "300ms" into nanoseconds; nil if the text is not a Go duration.
function duration.parse(text)
  if type(text) ~= "string" then return nil end
  local s, neg = text, false
  local sign = s:sub(1, 1)
  if sign == "-" or sign == "+" then neg = sign == "-"; s = s:sub(2) end
  if s == "0" then return 0 end
  if s == "" then return nil end
  local total, pos = 0, 1
  while pos <= #s do
    local whole, frac, unit, nxt = s:match("^(%d*)%.?(%d*)([^%d%.]+)()", pos)
    if not whole or (whole == "" and frac == "") then return nil end
    -- the dot must really be there when a fraction is
    local dot = s:sub(pos + #whole, pos + #whole) == "."
    if frac ~= "" and not dot then return nil end
    -- the unit ends where the next number starts
    local u = unit:match("^[^%d%.]+")
    local scale = UNITS[u]
    if not scale then return nil end
    local w = tonumber(whole ~= "" and whole or "0")
    if w > math.maxinteger // scale then return nil end
    local v = w * scale
    if frac ~= "" then
      v = v + math.floor(tonumber("0." .. frac) * scale + 0.5)
    end
    total = total + v
    if total < 0 then return nil end -- overflow
    pos = nxt
  end
  return neg and -total or total
end

-- fraction of v / 10^prec without trailing zeros ("" when it is zero), and the integer part
local function frac(v, prec)
  local digits, printed = {}, false
  for _ = 1, prec do
    local d = v % 10
    printed = printed or d ~= 0
    if printed then table.insert(digits, 1, tostring(d)) end
    v = v // 10
  end
  return v, printed and ("." .. table.concat(digits)) or ""
end

-- Format nanoseconds as Go does: "24h0m0s", "4m0s", "1.5s", "300ms", "0s".
function duration.format(ns)
  if ns == 0 then return "0s" end
  local neg = ns < 0
  local u = neg and -ns or ns
  local out
  if u < S then
    local prec, unit
    if u < US then prec, unit = 0, "ns"
    elseif u < MS then prec, unit = 3, "\xc2\xb5s"
    else prec, unit = 6, "ms" end
    local int, f = frac(u, prec)
    out = tostring(int) .. f .. unit
  else
    local secs, f = frac(u, 9)
    out = tostring(secs % 60) .. f .. "s"
    local mins = secs // 60
    if mins > 0 then
      out = tostring(mins % 60) .. "m" .. out
      local hours = mins // 60
      if hours > 0 then out = tostring(hours) .. "h" .. out end
    end
  end
  return neg and ("-" .. out) or out
end

-- Format a number of seconds (a float, e.g. the difference of two clock readings) as Go's
-- time.Duration String() prints it: 1.001s, 4m0s, 250ms.
function duration.format_seconds(s)
  return duration.format(math.floor(s * S + 0.5))
end

-- The canonical form of a duration text, or nil if it is not one.
function duration.normalize(text)
  local ns = duration.parse(text)
  return ns and duration.format(ns)
end

-- Seconds (a float) of a duration text, for phases that wait.
function duration.seconds(text)
  local ns = duration.parse(text)
  return ns and ns / S
end

return duration
