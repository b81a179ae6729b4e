-- Output for people and for machines. Text mode prints kubeadm-style lines ("[certs] ...") and a
-- progress line per phase; `--output json` turns every message into one JSON event per line on
-- stdout (phase start/end with duration, warnings, errors). Nothing that looks like a secret is
-- ever printed: callers pass secrets only through log.redact.
local core = require "moonadm.core"
local lazy = require "framework.lazy"
local cjson = lazy.require "cjson" -- a shared library of its own: loaded by --output json only

local M = { verbosity = 0, json = false, out = io.stdout, err = io.stderr }

function M.setup(opts)
  M.verbosity = opts.verbosity or 0
  M.json = opts.json or false
  M.tty = not M.json and core.isatty(1)
end

-- Masks bootstrap token secrets, bearer credentials and PEM private keys (engine/log.c does it,
-- so C and Lua share one implementation).
M.redact = function(s) return core.redact(tostring(s)) end

function M.event(ev)
  if M.json then
    ev.time = ev.time or core.now()
    M.out:write(cjson.encode(ev), "\n")
    M.out:flush()
  end
end

-- --vmodule pattern=N,...: a higher verbosity for the scripts whose path (scripts/<pattern>.lua,
-- glob * and ?) matches, as klog's file-filtered logging; the caller is looked up only then.
local vmodule
function M.set_vmodule(spec)
  local list = {}
  for item in spec:gmatch("[^,]+") do
    local pat, n = item:match("^%s*([^=]+)=(%d+)%s*$")
    if not pat then return nil, ("%q is not pattern=N"):format(item) end
    local lua = "^" .. pat:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0"):gsub("%*", ".*"):gsub("%?", ".") .. "$"
    list[#list + 1] = { pat = lua, level = tonumber(n) }
  end
  vmodule = list
  return true
end

local function module_level(depth)
  local info = debug.getinfo(depth + 1, "S")
  local src = info and info.source or ""
  local path = src:match("scripts/(.-)%.lua$") or src:match("([^/]-)%.lua$") or ""
  local level = 0
  for _, v in ipairs(vmodule) do
    if path:match(v.pat) or (path:match("[^/]+$") or ""):match(v.pat) then level = math.max(level, v.level) end
  end
  return level
end

local function emit(level, stream, msg)
  msg = M.redact(msg)
  if M.json then
    M.event { type = level, message = msg }
  else
    stream:write(msg, "\n")
    stream:flush()
  end
end

-- A line in a format of its own (kubeadm's "\t[WARNING Name]: ..."), at a level.
function M.line(level, text) emit(level, level == "info" and M.out or M.err, text) end

function M.info(fmt, ...) emit("info", M.out, select("#", ...) > 0 and fmt:format(...) or fmt) end
function M.warn(fmt, ...) emit("warning", M.err, "[WARNING] " .. (select("#", ...) > 0 and fmt:format(...) or fmt)) end
function M.error(msg) emit("error", M.err, msg) end
-- Detail shown only at -v N or more.
function M.v(n, fmt, ...)
  if M.verbosity >= n or (vmodule and module_level(2) >= n) then emit("debug", M.err, select("#", ...) > 0 and fmt:format(...) or fmt) end
end

-- Plain text that is the command's result (join command, tables): printed as is in text mode and
-- as a {type="output"} event in JSON mode. Not redacted: a join command must carry its token.
function M.result(text)
  if M.json then
    M.event { type = "output", text = text }
  else
    M.out:write(text)
    if text:byte(-1) ~= 10 then M.out:write("\n") end -- (a byte: "\n$" would try every position)
    M.out:flush()
  end
end

return M
