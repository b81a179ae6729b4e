-- The --resume journal (framework/journal.lua) as a run meets it on disk: any bytes as
-- /var/lib/moonadm/journal/init.json under a scratch root, read by journal.open. Its only failure
-- is the refusal (the file named, what is wrong, the fix, never "with --resume"); what it accepts
-- is used as the runner, preflight and `phases` use it, and written back reads back.
local fs = require "moonadm.fs"
local cjson = require "cjson"
local journal = require "framework.journal"

-- tmpfs when there is one: a file rewritten on ext4 is flushed at close (auto_da_alloc), 2 ms a run
local root = assert(io.popen("mktemp -d -p /dev/shm 2>/dev/null || mktemp -d"):read("l"))
fs.set_root(root)
assert(fs.mkdir(journal.DIR, "0700"))
local host = assert(fs.path(journal.DIR .. "/init.json"))
local refusal = "^journal " .. host:gsub("%p", "%%%0") .. " cannot be used: "

-- A broken invariant is a finding: libFuzzer reports an exiting target and keeps the input.
local function bug(msg)
  io.stderr:write("fuzz: journal: ", msg, "\n")
  os.exit(77)
end

local function check()
  local ok, j = pcall(journal.open, "init")
  if not ok then
    if type(j) ~= "string" or not j:find(refusal) or not j:find("rm " .. host, 1, true)
      or j:find("with --resume", 1, true) then
      bug("not a clean refusal: " .. tostring(j))
    end
    return
  end
  for path, e in pairs(j.data.phases) do
    if type(j:done(path, e.digest)) ~= "boolean" then bug("done is not a boolean") end
    if e.done then os.date("!%Y-%m-%dT%H:%M:%SZ", e.done) end
    for file in pairs(e.artifacts or {}) do j:owns(file, "x") end
  end
  for file in pairs(j.data.written or {}) do
    if not j:owns(file) then bug("a written file is not owned") end
  end
  local again, err = journal.decode(cjson.encode(j.data), "init")
  if not again then bug("what it accepted does not read back: " .. err) end
end

return function(input)
  os.remove(host) -- a new file, not one truncated
  local f = assert(io.open(host, "wb"))
  f:write(input)
  f:close()
  check()
  os.remove(host)
end
