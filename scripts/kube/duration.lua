-- apimachinery's util/duration, the two ways kubeadm prints a time left: HumanDuration (certs
-- check-expiration: "364d", "1y364d", "9y") and ShortHumanDuration (token list: "23h", "1y").
-- Both take seconds; a fraction is cut toward zero as Go's int(d.Seconds()) does.
local M = {}

-- Seconds cut toward zero (Go's integer conversion of a duration).
function M.whole(s) return s < 0 and math.ceil(s) or math.floor(s) end
local whole = M.whole

function M.human(s)
  s = whole(s)
  if s < -1 then return "<invalid>" elseif s < 0 then return "0s"
  elseif s < 120 then return ("%ds"):format(s) end
  local minutes = s // 60
  if minutes < 10 then
    return s % 60 == 0 and ("%dm"):format(minutes) or ("%dm%ds"):format(minutes, s % 60)
  elseif minutes < 180 then return ("%dm"):format(minutes) end
  local hours = s // 3600
  if hours < 8 then
    return minutes % 60 == 0 and ("%dh"):format(hours) or ("%dh%dm"):format(hours, minutes % 60)
  elseif hours < 48 then return ("%dh"):format(hours)
  elseif hours < 24 * 8 then
    return hours % 24 == 0 and ("%dd"):format(hours // 24) or ("%dd%dh"):format(hours // 24, hours % 24)
  elseif hours < 24 * 365 * 2 then return ("%dd"):format(hours // 24)
  elseif hours < 24 * 365 * 8 then
    local days = (hours // 24) % 365
    return days == 0 and ("%dy"):format(hours // 24 // 365) or ("%dy%dd"):format(hours // 24 // 365, days)
  end
  return ("%dy"):format(hours // 24 // 365)
end

function M.short(s)
  s = whole(s)
  if s < -1 then return "<invalid>" elseif s < 0 then return "0s"
  elseif s < 60 then return ("%ds"):format(s)
  elseif s < 3600 then return ("%dm"):format(s // 60)
  elseif s < 86400 then return ("%dh"):format(s // 3600)
  elseif s < 86400 * 365 then return ("%dd"):format(s // 86400) end
  return ("%dy"):format(s // (86400 * 365))
end

return M
