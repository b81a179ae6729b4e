-- Output for people and for machines. Text mode prints kubeadm-style lines ("[certs] ...") and a
-- progress line per phase; `--output json` turns every message into one JSON event per line on
-- stdout (phase start/end with duration, warnings, errors). Nothing that looks like a secret is
-- ever printed: callers pass secrets only through log.redact.
local cjson = require "cjson"
local core = require "moonadm.core"

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

-- --log-file: every line also goes to this file (appended, redacted as every line is), until it
-- reaches its size limit in megabytes (0: none), as klog's --log-file-max-size.
local file, file_room
function M.to_file(path, max_mb)
  local f, err = io.open(path, "a")
  if not f then return nil, err end
  file, file_room = f, (max_mb and max_mb > 0) and max_mb * 1024 * 1024 or math.huge
  return true
end

local function to_file(level, msg)
  if not file or file_room <= 0 then return end
  local line = ("%s %s %s\n"):format(os.date("!%Y-%m-%dT%H:%M:%SZ"), level, msg)
  file_room = file_room - #line
  file:write(line)
  file:flush()
end

local function emit(level, stream, msg)
  msg = M.redact(msg)
  to_file(level, msg)
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
  if M.verbosity >= n then emit("debug", M.err, select("#", ...) > 0 and fmt:format(...) or fmt) end
end

-- Plain text that is the command's result (join command, tables): printed as is in text mode and
-- as a {type="output"} event in JSON mode. Not redacted: a join command must carry its token.
function M.result(text)
  if M.json then
    M.event { type = "output", text = text }
  else
    M.out:write(text)
    if not text:match("\n$") then M.out:write("\n") end
    M.out:flush()
  end
end

return M
