-- Man pages from the binary's help, one per command, as cobra's doc generator makes them
-- (moonadm.1, moonadm-init.1, moonadm-init-phase.1, moonadm-init-phase-certs.1, ...):
--   bin/moonadm lua tools/gen-man.lua BIN OUTDIR [--strict]
-- walks `BIN [cmd...] --help` from the top through every "Available Commands:" list and renders
-- each help (cobra's shape: description, Usage:, Examples:, Available Commands:, Flags:, Global
-- Flags:; any of them may be missing) as roff: NAME, SYNOPSIS, DESCRIPTION, OPTIONS, OPTIONS
-- INHERITED FROM PARENT COMMANDS, EXAMPLES, SEE ALSO. A command whose --help fails, or prints
-- another command's help, gets no page and a warning (with --strict: the run fails). The date is
-- SOURCE_DATE_EPOCH's when set (reproducible packages), else today's.

local bin, outdir, strict
for _, a in ipairs(arg) do
  if a == "--strict" then strict = true
  elseif not bin then bin = a
  elseif not outdir then outdir = a
  else io.stderr:write("gen-man: unexpected argument ", a, "\n"); os.exit(2) end
end
if not bin or not outdir then
  io.stderr:write("usage: moonadm lua tools/gen-man.lua BIN OUTDIR [--strict]\n")
  os.exit(2)
end

if bin:sub(1, 1) ~= "/" then bin = (os.getenv("PWD") or ".") .. "/" .. bin end

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Help is asked for from a scratch directory, with no stdin, under a timeout: nothing a command
-- might do instead of answering --help lands in the checkout or waits for input.
local scratch do
  local p = io.popen("mktemp -d " .. q((os.getenv("TMPDIR") or "/tmp") .. "/moonadm-man.XXXXXX"))
  scratch = p:read("l")
  p:close()
end

local function run(args)
  local parts = { "cd", q(scratch), "&&", "timeout", "20", q(bin) }
  for _, a in ipairs(args) do parts[#parts + 1] = q(a) end
  local p = io.popen(table.concat(parts, " ") .. " </dev/null 2>/dev/null")
  local out = p:read("a")
  local ok, _, code = p:close()
  return ok and code == 0, out
end

local HEADERS = {
  ["Usage:"] = "usage", ["Aliases:"] = "aliases", ["Examples:"] = "examples", ["Example:"] = "examples",
  ["Available Commands:"] = "commands", ["Additional help topics:"] = "commands",
  ["Flags:"] = "flags", ["Global Flags:"] = "global",
}

local function lines_of(text)
  local t = {}
  for l in (text .. "\n"):gmatch("(.-)\r?\n") do t[#t + 1] = l end
  return t
end

local function trim_blank(t)
  while #t > 0 and t[1]:match("^%s*$") do table.remove(t, 1) end
  while #t > 0 and t[#t]:match("^%s*$") do table.remove(t) end
  return t
end

-- A help text -> { desc = {lines}, usage = {lines}, examples = {lines}, commands = {{name, short}},
-- flags = {{spec, desc}}, global = {{spec, desc}} }
local function parse(text)
  local h = { desc = {}, usage = {}, aliases = {}, examples = {}, commands = {}, flags = {}, global = {} }
  local raw = { desc = h.desc, usage = {}, aliases = {}, examples = {}, commands = {}, flags = {}, global = {} }
  local cur = "desc"
  for _, l in ipairs(lines_of(text)) do
    if HEADERS[l] then cur = HEADERS[l]
    elseif l:match('^Use "[^"]+" for more information') then cur = "tail"
    elseif raw[cur] then table.insert(raw[cur], l) end
  end
  trim_blank(h.desc)
  for _, l in ipairs(raw.usage) do
    local u = l:match("^%s*(.-)%s*$")
    if u ~= "" then h.usage[#h.usage + 1] = u end
  end
  h.examples = trim_blank(raw.examples)
  for _, l in ipairs(raw.commands) do
    local name, short = l:match("^%s+(%S+)%s*(.-)%s*$")
    if name then h.commands[#h.commands + 1] = { name = name, short = short } end
  end
  for _, sec in ipairs { "flags", "global" } do
    for _, l in ipairs(raw[sec]) do
      local lead, rest = l:match("^(%s*)(.-)%s*$")
      if rest == "" then -- luacheck: ignore 542 (a blank line: nothing to add)
      elseif #lead <= 6 and rest:sub(1, 1) == "-" then
        local spec, d = rest:match("^(.-)%s%s+(.*)$")
        table.insert(h[sec], { spec = spec or rest, desc = d or "" })
      elseif #h[sec] > 0 then
        local f = h[sec][#h[sec]]
        f.desc = (f.desc == "" and rest) or (f.desc .. " " .. rest)
      end
    end
  end
  return h
end

-- roff: backslashes and hyphens escaped, non-ASCII as \[uXXXX] (any groff, no preconv), and a
-- line never starts a request by accident.
local function esc(s)
  s = s:gsub("\\", "\\e"):gsub("%-", "\\-")
  if s:find("[\128-\255]") and utf8.len(s) then
    local t = {}
    for _, c in utf8.codes(s) do t[#t + 1] = c < 128 and string.char(c) or ("\\[u%04X]"):format(c) end
    s = table.concat(t)
  end
  if s:match("^[.']") then s = "\\&" .. s end
  return s
end

local function flag_spec(spec)
  local out = {}
  for tok in spec:gmatch("%S+") do
    local name, comma = tok:match("^(%-[^,]*)(,?)$")
    if name then out[#out + 1] = "\\fB" .. esc(name) .. "\\fR" .. comma
    else out[#out + 1] = "\\fI" .. esc(tok) .. "\\fR" end
  end
  return table.concat(out, " ")
end

local function verbatim(o, lines)
  o[#o + 1] = ".PP"
  o[#o + 1] = ".RS"
  o[#o + 1] = ".nf"
  for _, l in ipairs(lines) do o[#o + 1] = esc(l) end
  o[#o + 1] = ".fi"
  o[#o + 1] = ".RE"
end

-- Prose as filled paragraphs; ``` fences and indented lines stay as they are.
local function description(o, lines)
  local block, fenced = nil, false
  local function flush()
    if block then verbatim(o, block); block = nil end
  end
  local para = false
  for _, l in ipairs(lines) do
    if l:match("^%s*```") then
      if fenced then flush(); fenced = false else flush(); block = {}; fenced = true end
      para = false
    elseif fenced then block[#block + 1] = l
    elseif l:match("^%s+%S") then
      block = block or {}
      block[#block + 1] = l
      para = false
    elseif l:match("^%s*$") then
      flush()
      para = false
    else
      flush()
      if not para then o[#o + 1] = ".PP"; para = true end
      o[#o + 1] = esc(l)
    end
  end
  flush()
end

local function options(o, title, flags)
  if #flags == 0 then return end
  o[#o + 1] = ".SH " .. title
  for _, f in ipairs(flags) do
    o[#o + 1] = ".TP"
    o[#o + 1] = flag_spec(f.spec)
    o[#o + 1] = f.desc ~= "" and esc(f.desc) or "\\&"
  end
end

local function page_name(path)
  return table.concat({ "moonadm", table.unpack(path) }, "-")
end

-- Walk the tree: every command whose help is its own gets a node.
local ok_version, version = run { "version", "-o", "short" }
version = ok_version and version:match("^%s*(%S+)") or "unknown"
local epoch = tonumber(os.getenv("SOURCE_DATE_EPOCH") or "")
local date = os.date("!%b %Y", epoch or os.time())

local nodes, warnings = {}, {}
local function walk(path, short, parent, depth)
  local args = { table.unpack(path) }
  args[#args + 1] = "--help"
  local ok, out = run(args)
  local label = table.concat({ "moonadm", table.unpack(path) }, " ")
  if not ok or out == "" then
    warnings[#warnings + 1] = label .. " --help failed: no page"
    return nil
  end
  local h = parse(out)
  local u = h.usage[1] or ""
  if u ~= label and u:sub(1, #label + 1) ~= label .. " " then
    warnings[#warnings + 1] = label .. " --help printed " .. (u ~= "" and ("the help of `" .. u .. "`") or "no Usage:") .. ": no page"
    return nil
  end
  local node = { path = path, name = page_name(path), label = label, help = h, parent = parent, children = {} }
  if not short then -- the top command: its first line of plain prose, not a heading or a drawing
    for _, l in ipairs(h.desc) do
      if l:match("^%a") and not l:match(":%s*$") then short = l; break end
    end
  end
  node.short = short or "a kubeadm-compatible Kubernetes cluster bootstrap engine"
  nodes[#nodes + 1] = node
  if depth < 8 then
    for _, c in ipairs(h.commands) do
      if c.name ~= "help" then
        local cp = { table.unpack(path) }
        cp[#cp + 1] = c.name
        local child = walk(cp, c.short, node, depth + 1)
        if child then node.children[#node.children + 1] = child end
      end
    end
  end
  return node
end
walk({}, nil, nil, 0)
os.execute("rm -rf " .. q(scratch))

for _, w in ipairs(warnings) do io.stderr:write("gen-man: ", w, "\n") end
if #nodes == 0 then io.stderr:write("gen-man: ", bin, " --help gave no help\n"); os.exit(1) end
if strict and #warnings > 0 then os.exit(1) end

os.execute("mkdir -p " .. q(outdir))
for _, n in ipairs(nodes) do
  local h, o = n.help, {}
  o[#o + 1] = ('.TH "%s" "1" "%s" "moonadm %s" "moonadm Manual"'):format(n.name:upper(), date, version)
  o[#o + 1] = ".nh"
  o[#o + 1] = ".ad l"
  o[#o + 1] = ".SH NAME"
  o[#o + 1] = esc(n.name) .. " \\- " .. esc(n.short)
  o[#o + 1] = ".SH SYNOPSIS"
  for i, u in ipairs(#h.usage > 0 and h.usage or { n.label }) do
    if i > 1 then o[#o + 1] = ".br" end
    o[#o + 1] = "\\fB" .. esc(u) .. "\\fR"
  end
  if #h.desc > 0 then
    o[#o + 1] = ".SH DESCRIPTION"
    description(o, h.desc)
  end
  options(o, "OPTIONS", h.flags)
  options(o, "OPTIONS INHERITED FROM PARENT COMMANDS", h.global)
  if #h.examples > 0 then
    o[#o + 1] = ".SH EXAMPLES"
    verbatim(o, h.examples)
  end
  local see = {}
  if n.parent then see[#see + 1] = n.parent end
  for _, c in ipairs(n.children) do see[#see + 1] = c end
  if #see > 0 then
    o[#o + 1] = ".SH SEE ALSO"
    local refs = {}
    for _, s in ipairs(see) do refs[#refs + 1] = "\\%\\fB" .. esc(s.name) .. "\\fR(1)" end
    o[#o + 1] = table.concat(refs, ", ")
  end
  local f = assert(io.open(outdir .. "/" .. n.name .. ".1", "w"))
  f:write(table.concat(o, "\n"), "\n")
  f:close()
end
print(("gen-man: %d pages in %s%s"):format(#nodes, outdir,
  #warnings > 0 and (", " .. #warnings .. " commands without their own --help") or ""))
