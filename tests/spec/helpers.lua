-- Shared by the specs: temp roots, running the real binary, reading files.
local core = require "moonadm.core"
local encoding = require "moonadm.encoding"

local M = {}

M.top = os.getenv("PWD")
M.bin = os.getenv("MOONADM_BIN") or (M.top .. "/bin/moonadm")
if not M.bin:match("^/") then M.bin = M.top .. "/" .. M.bin end -- (make asan: build-asan/moonadm; a spec may cd)

local function sh_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
M.q = sh_quote

function M.tmpdir()
  local p = io.popen("mktemp -d " .. (os.getenv("TMPDIR") or "/tmp") .. "/moonadm-spec.XXXXXX")
  local dir = p:read("l")
  p:close()
  return dir
end

function M.rmrf(dir)
  assert(dir and dir:match("^/.+/moonadm%-spec%."), "refusing to remove " .. tostring(dir))
  os.execute("rm -rf " .. sh_quote(dir))
end

-- Runs moonadm with a list of arguments; returns exit code, stdout, stderr.
function M.moonadm(args, env)
  local out, err = os.tmpname(), os.tmpname()
  local parts = {}
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. sh_quote(v) end
  parts[#parts + 1] = sh_quote(M.bin)
  for _, a in ipairs(args) do parts[#parts + 1] = sh_quote(a) end
  local cmd = table.concat(parts, " ") .. " >" .. out .. " 2>" .. err
  local _, _, code = os.execute(cmd)
  local function slurp(f)
    local h = io.open(f, "rb")
    local s = h:read("a")
    h:close()
    os.remove(f)
    return s
  end
  return code, slurp(out), slurp(err)
end

function M.write(path, text)
  local dir = path:match("^(.*)/[^/]*$")
  if dir then os.execute("mkdir -p " .. sh_quote(dir)) end
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function M.read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

M.sha256 = encoding.sha256_hex

-- Runs f(url) against tests/spec/fixtures/canned_http.lua on 127.0.0.1 (a separate process), which
-- answers every request with the next of answers (Lua text of a list of {status, body}).
function M.canned_http(answers, f)
  local dir = M.tmpdir()
  M.write(dir .. "/a.lua", "return " .. answers)
  os.execute(("%s lua %s %s %s >/dev/null 2>&1 & echo $! > %s"):format(sh_quote(M.bin),
    sh_quote(M.top .. "/tests/spec/fixtures/canned_http.lua"), sh_quote(dir .. "/port"), sh_quote(dir .. "/a.lua"), sh_quote(dir .. "/pid")))
  for _ = 1, 100 do
    if M.read(dir .. "/port") then break end
    core.sleep(0.05)
  end
  local port = assert(M.read(dir .. "/port"))
  local ok, err = pcall(f, "http://127.0.0.1:" .. port, tonumber(port))
  os.execute("kill " .. (M.read(dir .. "/pid") or ""):match("%d+"))
  M.rmrf(dir)
  if not ok then error(err, 0) end
end

return M
