-- The binary's layout by use (issue 19's memory and start-up), written as two files the build reads:
--   bin/moonadm lua tools/layout.lua BIN MAP OUTDIR
-- BIN is a bin/moonadm linked with -Wl,-Map,MAP (`make layout` does both and runs this). Each
-- command of the profile (the no-server commands and local phases `make bench` times) runs once
-- under callgrind, for the C functions it executes, three times natively under `perf record` (when
-- perf is here: valgrind's CPU lacks features, so OpenSSL and GMP pick other code under it than on
-- the machine; the samples catch the native kernels, where the time goes), and once with its
-- module loads recorded.
--   OUTDIR/layout.ld           a linker script (-T, INSERT: it adds to the default script) that
--                              puts the input sections holding executed code first, those more
--                              commands run ahead, and the same objects' read-only data together
--                              after .rodata, followed by the stock scripts' bytecode;
--   OUTDIR/layout-modules.txt  the Lua modules in the order the profile loads them: tools/embed.c
--                              emits their bytecode first.
-- Why: the kernel maps a file's pages 64 KiB (or a large folio) at a time around each fault, so
-- a command's resident memory is every window its code and data touch. Linked in archive order,
-- the code a command runs is spread over nearly all of the 2.8 MB of text (OpenSSL's default
-- provider brings every algorithm), and the bytecode of the 60 modules a command loads over all
-- 700 KB of it. A stale layout costs memory, never correctness: a section it does not name is
-- linked where it always was.
local util = require "framework.util"

local bin, map, outdir = arg[1], arg[2], arg[3]
if not (bin and map and outdir) then
  io.stderr:write("usage: moonadm lua tools/layout.lua BIN MAP OUTDIR\n")
  os.exit(2)
end
if bin:sub(1, 1) ~= "/" then bin = (os.getenv("PWD") or ".") .. "/" .. bin end

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function fail(fmt, ...)
  io.stderr:write("layout: ", fmt:format(...), "\n")
  os.exit(1)
end
local function sh(cmd)
  local ok = os.execute(cmd)
  if not ok then fail("command failed: %s", cmd) end
end
local function spit(path, s)
  local tmp = path .. ".tmp"
  local f = assert(io.open(tmp, "wb"))
  f:write(s)
  f:close()
  assert(os.rename(tmp, path))
end

local scratch do
  local p = io.popen("mktemp -d " .. q((os.getenv("TMPDIR") or "/tmp") .. "/moonadm-layout.XXXXXX"))
  scratch = p:read("l")
  p:close()
  if not scratch or scratch == "" then fail("mktemp failed") end
end

-- The profile: what `make bench` times locally (bench/bench.lua), in the order a user meets them.
local function config(alg)
  return ([[
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.0.2.140
nodeRegistration:
  name: layout-node
  criSocket: unix:///var/run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
encryptionAlgorithm: %s
]]):format(alg)
end
spit(scratch .. "/ecdsa.yaml", config("ECDSA-P256"))
spit(scratch .. "/rsa.yaml", config("RSA-2048"))
local root = scratch .. "/root"
local function with(cfg) return { "--root", root, "--config", scratch .. "/" .. cfg } end
local function cat(a, b)
  local t = {}
  for _, x in ipairs(a) do t[#t + 1] = x end
  for _, x in ipairs(b or {}) do t[#t + 1] = x end
  return t
end
-- fresh: the root is emptied first; else the command runs on the previous one's files
local PROFILE = {
  { args = { "version" } },
  { args = { "phases", "init" } },
  { args = { "config", "print", "init-defaults" } },
  { args = { "phases", "join" } },
  { args = { "init", "--help" } },
  { args = cat({ "init", "phase", "certs", "all" }, with "ecdsa.yaml"), fresh = true },
  { args = cat({ "init", "phase", "certs", "all" }, with "rsa.yaml"), fresh = true },
  { args = cat({ "certs", "renew", "all" }, with "rsa.yaml") },
  { args = cat({ "init", "phase", "kubeconfig", "all" }, with "rsa.yaml") },
  { args = cat({ "init", "phase", "control-plane", "all" }, with "rsa.yaml") },
  { args = cat({ "init", "phase", "etcd", "local" }, with "rsa.yaml") },
  { args = cat({ "init", "phase", "kubelet-start" }, with "rsa.yaml") },
}

-- Records the modules a command loads, in order: the ones the host loaded before the script
-- (framework.version), then every searcher hit while framework.cli runs the command.
local recorder = scratch .. "/record.lua"
spit(recorder, [[
local out = assert(io.open(os.getenv("LAYOUT_LOADS"), "a"))
local seen = {}
for name in pairs(package.loaded) do seen[name] = true end
local order = {}
for name in pairs(seen) do order[#order + 1] = name end
table.sort(order)
for i, searcher in ipairs(package.searchers) do
  package.searchers[i] = function(name)
    local loader, extra = searcher(name)
    if type(loader) == "function" and not seen[name] then seen[name] = true; order[#order + 1] = name end
    return loader, extra
  end
end
local ok = pcall(require("framework.cli").main, { ... })
out:write(table.concat(order, " "), "\n")
out:close()
]])

local loads = scratch .. "/loads.txt"
local HAVE_PERF = os.execute("perf record -q -o /dev/null -- true >/dev/null 2>&1") == true
if not HAVE_PERF then io.stderr:write("layout: no perf here: the profile is callgrind's alone\n") end
for i, cmd in ipairs(PROFILE) do
  if cmd.fresh then sh("rm -rf " .. q(root) .. " && mkdir -p " .. q(root)) end
  local argv = {}
  for _, a in ipairs(cmd.args) do argv[#argv + 1] = q(a) end
  local args = table.concat(argv, " ")
  sh(("cd %s && valgrind --tool=callgrind --callgrind-out-file=%s %s %s </dev/null >/dev/null 2>&1 || true")
    :format(q(scratch), q(("%s/cg.%d"):format(scratch, i)), q(bin), args))
  if HAVE_PERF then
    for rep = 1, 3 do
      sh(("cd %s && perf record -q -F 20000 -o %s -- %s %s </dev/null >/dev/null 2>&1 && perf script -i %s -F ip,sym >> %s 2>/dev/null || true")
        :format(q(scratch), q(scratch .. "/perf.data"), q(bin), args, q(scratch .. "/perf.data"), q(("%s/perf.%d"):format(scratch, i))))
    end
  end
  -- the module list from a second run on the same files (each command is idempotent)
  sh(("cd %s && LAYOUT_LOADS=%s %s lua %s %s </dev/null >/dev/null 2>&1 || true")
    :format(q(scratch), q(loads), q(bin), q(recorder), args))
end

-- Functions the binary defines: name -> list of addresses.
local addrs = {}
do
  local p = io.popen("nm --defined-only " .. q(bin))
  for line in p:lines() do
    local a, kind, name = line:match("^(%x+) (%a) (%S+)$")
    if a and kind:match("[tTwW]") then
      local list = addrs[name] or {}
      list[#list + 1] = tonumber(a, 16)
      addrs[name] = list
    end
  end
  p:close()
end
if not next(addrs) then fail("%s has no symbols (a stripped binary?)", bin) end

-- Input sections from the link map: { addr, size, section, object }, for text and read-only data.
local sections = {}
do
  local text = util.read_host(map) or fail("cannot read the link map %s", map)
  local pending
  for line in text:gmatch("[^\n]+") do
    local sec, a, n, obj = line:match("^ (%.%S+)%s+0x(%x+)%s+0x(%x+)%s+(%S.*)$")
    if not sec and pending then
      a, n, obj = line:match("^%s+0x(%x+)%s+0x(%x+)%s+(%S.*)$")
      sec = a and pending
    end
    pending = line:match("^ (%.%S+)$")
    if sec and sec:match("^%.text") and tonumber(n, 16) > 0 then
      sections[#sections + 1] = { addr = tonumber(a, 16), size = tonumber(n, 16), section = sec, object = obj }
    end
  end
end
table.sort(sections, function(x, y) return x.addr < y.addr end)
if #sections == 0 then fail("no text input sections in %s (not a GNU ld map?)", map) end
local function section_at(addr)
  local lo, hi = 1, #sections
  while lo <= hi do
    local mid = (lo + hi) // 2
    local s = sections[mid]
    if addr < s.addr then hi = mid - 1
    elseif addr >= s.addr + s.size then lo = mid + 1
    else return s end
  end
end

-- Each section's score: how many profile commands ran code in it.
for i = 1, #PROFILE do
  local cg = util.read_host(("%s/cg.%d"):format(scratch, i)) or fail("callgrind wrote no profile for %s",
    table.concat(PROFILE[i].args, " "))
  local hit = {}
  for name in cg:gmatch("\nc?fn=%(%d+%) ([^\n]+)") do
    name = name:gsub("'%d+$", ""):match("([^:]+)$")
    for _, a in ipairs(addrs[name] or {}) do
      local s = section_at(a)
      if s then hit[s] = true end
    end
  end
  for name in (util.read_host(("%s/perf.%d"):format(scratch, i)) or ""):gmatch("%S+") do
    for _, a in ipairs(addrs[name] or {}) do
      local s = section_at(a)
      if s then hit[s] = true end
    end
  end
  for s in pairs(hit) do s.score = (s.score or 0) + 1 end
end
-- _start (Scrt1.o) runs in every command, but valgrind counts it "below main", under no name.
for _, s in ipairs(sections) do
  if s.object:match("crt1%.o$") then s.score = #PROFILE end
end
local hot = {}
for _, s in ipairs(sections) do if s.score then hot[#hot + 1] = s end end
table.sort(hot, function(x, y)
  if x.score ~= y.score then return x.score > y.score end
  return x.addr < y.addr
end)

-- "dir/libcrypto.a(member.o)" -> "*libcrypto.a:member.o"; "build/bindings/main.o" ->
-- "*/bindings/main.o" (the build directory left out, so the ASan and hooks builds match too); an
-- absolute path (the C runtime's objects) as it is.
local function pattern(obj)
  local archive, member = obj:match("^(.-)%((.+)%)$")
  if archive then return "*" .. archive:match("([^/]+)$") .. ":" .. member end
  if obj:sub(1, 1) == "/" then return obj end
  return "*/" .. (obj:match("^[^/]+/(.+)$") or obj)
end

local ld = {
  "/* generated by tools/layout.lua (`make layout`): do not edit. What a profile of the commands",
  " * `make bench` times executes goes first, so each command's resident pages are few (see the tool). */",
  "SECTIONS",
  "{",
  "  .text.moonadm_hot :",
  "  {",
}
local objects, seen_obj = {}, {}
for _, s in ipairs(hot) do
  local pat = pattern(s.object)
  ld[#ld + 1] = ("    %s(%s)"):format(pat, s.section)
  if not seen_obj[pat] then seen_obj[pat] = true; objects[#objects + 1] = pat end
end
ld[#ld + 1] = "  }"
ld[#ld + 1] = "}"
ld[#ld + 1] = "INSERT BEFORE .text;"
ld[#ld + 1] = "SECTIONS"
ld[#ld + 1] = "{"
ld[#ld + 1] = "  .rodata.moonadm_hot :"
ld[#ld + 1] = "  {"
for _, pat in ipairs(objects) do
  ld[#ld + 1] = ("    %s(.rodata .rodata.str* .rodata.cst*)"):format(pat)
end
ld[#ld + 1] = "    *(.rodata.moonadm_code)"
ld[#ld + 1] = "  }"
ld[#ld + 1] = "}"
-- AFTER, not BEFORE: the default script starts the read-only segment with assignments just ahead
-- of .rodata, and a section inserted before them would land in the executable segment.
ld[#ld + 1] = "INSERT AFTER .rodata;"
spit(outdir .. "/layout.ld", table.concat(ld, "\n") .. "\n")

-- Modules: first load across the profile, the earlier commands' first.
local order, placed = {}, {}
for line in (util.read_host(loads) or ""):gmatch("[^\n]+") do
  for name in line:gmatch("%S+") do
    if not placed[name] then placed[name] = true; order[#order + 1] = name end
  end
end
if #order == 0 then fail("no module loads were recorded") end
spit(outdir .. "/layout-modules.txt", "# generated by tools/layout.lua (`make layout`): modules in the order the profile loads them\n"
  .. table.concat(order, "\n") .. "\n")

local bytes = 0
for _, s in ipairs(hot) do bytes = bytes + s.size end
local total = 0
for _, s in ipairs(sections) do total = total + s.size end
print(("layout: %d of %d text sections hot (%d of %d KiB), %d objects, %d modules; wrote %s/layout.ld and %s/layout-modules.txt")
  :format(#hot, #sections, bytes // 1024, total // 1024, #objects, #order, outdir, outdir))
os.execute("rm -rf " .. q(scratch))
