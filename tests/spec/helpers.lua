-- Shared by the specs (tests/spec, tests/proc), the regression tests and the e2e specs: temp roots,
-- running the real binary and shell commands, reading and writing files, snapshots of a tree, the
-- phase runner's fake context, and the binaries lab/build-bins.sh makes.
local core = require "moonadm.core"
local encoding = require "moonadm.encoding"

local M = {}

M.top = os.getenv("PWD")
M.bin = os.getenv("MOONADM_BIN") or (M.top .. "/bin/moonadm")
if not M.bin:match("^/") then M.bin = M.top .. "/" .. M.bin end -- (make asan: build-asan/moonadm; a spec may cd)
-- The hooked build (engine/testhooks.h: MOONADM_HOOK_LOG, MOONADM_CRASH_AFTER), from make test-hooks.
M.hooks = os.getenv("MOONADM_HOOKS_BIN") or (M.top .. "/bin/moonadm-hooks")

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

-- A `lab up` is recorded, before it starts, in the file MOONADM_E2E_LABS names (a line "NAME" or
-- "NAME<TAB>DIR"): tests/busted.sh takes down every lab recorded there when the specs end, and
-- never one the run did not bring up. A lab up without --name (the developer's own) is not recorded.
local function record_lab(args)
  local record = os.getenv("MOONADM_E2E_LABS")
  if not record or record == "" or args[1] ~= "lab" or args[2] ~= "up" then return end
  local name, dir
  for i = 3, #args do
    local flag, value = tostring(args[i]):match("^%-%-(%a+)=(.*)$")
    if not flag then flag, value = tostring(args[i]):match("^%-%-(%a+)$"), args[i + 1] end
    if flag == "name" then name = value elseif flag == "dir" then dir = value end
  end
  if not name then return end
  local f = assert(io.open(record, "a"))
  f:write(name, dir and ("\t" .. dir) or "", "\n")
  f:close()
end

-- Runs moonadm (or bin: M.hooks) with a list of arguments and extra environment {NAME = value};
-- returns exit code, stdout, stderr.
function M.moonadm(args, env, bin)
  record_lab(args)
  local out, err = os.tmpname(), os.tmpname()
  local parts = {}
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. sh_quote(v) end
  parts[#parts + 1] = sh_quote(bin or M.bin)
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

-- `moonadm init phase certs all --root root` (env and bin as for M.moonadm): exit code and output.
function M.certs_all(root, env, bin)
  local code, out, err = M.moonadm({ "init", "phase", "certs", "all", "--root", root }, env, bin)
  return code, out .. err
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

-- Writes a file and gives it mode (default 0644, whatever the umask): site scripts and flow
-- files must not be writable by others, or moonadm refuses them.
function M.put(path, text, mode)
  M.write(path, text)
  os.execute(("chmod %s %s"):format(mode or "0644", sh_quote(path)))
  return path
end

-- Runs a shell command: its exit status and its output, stdout and stderr together (a command
-- discards its own stderr with 2>/dev/null).
function M.sh(cmd)
  local p = io.popen("(" .. cmd .. ") 2>&1; echo \"rc=$?\"")
  local out = p:read("a")
  p:close()
  local text, rc = out:match("^(.-)rc=(%d+)%s*$")
  return tonumber(rc), text
end

-- Runs a shell command that must succeed (the setup of a test): raises naming it when it fails.
function M.sh_ok(cmd)
  assert(os.execute(cmd), "command failed: " .. cmd)
end

-- Every path under root, one line each, sorted: "path mode type" and, for a file, the sha256 of
-- its content; the root itself is the first line (" 755 d"). Two equal snapshots: nothing was
-- added, removed, rewritten or re-moded.
function M.snapshot(root)
  local p = io.popen("cd " .. sh_quote(root) .. " && find . -printf '%P %m %y\\n' | sort")
  local out = {}
  for line in p:lines() do
    local path, _, ty = line:match("^(%S*) (%d+) (%a)$")
    if ty == "f" then line = line .. " " .. M.sha256(M.read(root .. "/" .. path)) end
    out[#out + 1] = line
  end
  p:close()
  return table.concat(out, "\n")
end

-- A context for framework.runner with these gates on ({Name = true}), empty flags and an empty
-- configuration: what runner.resolve and runner.check read.
function M.ctx_with(gates)
  return { gates = gates or {}, cfg = { join = {}, cluster = {} }, flags = {}, data = {},
    gate = function(self, g) return self.gates[g] == true end }
end

-- Raises unless text (a command's output) is free of raw Lua errors: moonadm answers bad input
-- with a sentence, never with a Lua runtime error, a traceback or a script's file:line.
function M.no_raw_error(text)
  for _, bug in ipairs { "attempt to ", "bad argument", "stack traceback", "table index is" } do
    assert(not text:find(bug, 1, true), "a raw Lua error instead of a message:\n" .. text)
  end
  assert(not text:find("%.lua:%d+:"), "a script's file:line instead of a message:\n" .. text)
end

-- Tests that need a binary lab/build-bins.sh makes (the lab's kube-apiserver, etcd, the reference
-- kubeadms): register them with `local it = h.when_built(path, how, it, pending)` (or `describe`,
-- when a setup needs it). Present: `test` itself. Missing: still `test`, so they fail (make test,
-- make spec), unless MOONADM_NOT_BUILT=pending (make test-unit, when lab/build-bins.sh could not
-- have them: no Go and no cache), then busted's `pending`, the reason printed once per spec file.
local noted = {}
function M.when_built(path, how, test, pending)
  local f = io.open(path, "rb")
  if f then f:close(); return test end
  if os.getenv("MOONADM_NOT_BUILT") ~= "pending" then return test end
  if not noted[path] then
    noted[path] = true
    local spec, level = "?", 2
    repeat -- the spec file that asked, through reference_kubeadm.lua
      local info = debug.getinfo(level, "S")
      spec = info and info.short_src:match("([^/]+_spec)%.lua$") or spec
      level = level + 1
    until not info or spec ~= "?"
    io.stderr:write(("\n%s: not built: %s (%s): the tests that need it are pending\n"):format(spec, path, how))
  end
  return pending
end

-- The directory lab/build-bins.sh links the lab's binaries into (MOONADM_LAB_BIN: another).
M.lab_bin = os.getenv("MOONADM_LAB_BIN") or (M.top .. "/.lab/bin")

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
