-- kubeadm's command line, held against the reference kubeadm v1.35.4: walk its whole command tree
-- through `--help` (cobra's "Available Commands:", "Flags:", "Global Flags:"), ask moonadm the same,
-- and fail on any command or flag kubeadm has that moonadm lacks, except the documented ones
-- (docs/compatibility.md, "Command-line differences"). Help must come before any config is read:
-- it is asked with nothing on disk and must exit 0.
local proc = require "moonadm.proc"
local h = require "helpers"
local ref = require "reference_kubeadm"

-- Sections of a cobra help text: commands = {name = short}, flags = {name = true}, and usage lines.
local function parse_help(text)
  local out = { commands = {}, flags = {}, usage = {} }
  local section
  for line in (text .. "\n"):gmatch("(.-)\n") do
    local head = line:match("^(%u[%a ]+):$")
    if head then
      section = head
    elseif line == "" then
      if section ~= "Flags" and section ~= "Global Flags" then section = nil end
    elseif section == "Available Commands" then
      local name = line:match("^  (%S+)")
      if name then out.commands[name] = line:match("^  %S+%s+(.*)$") or "" end
    elseif section == "Flags" or section == "Global Flags" then
      local name = line:match("^%s+%-%a, %-%-([%w%-]+)") or line:match("^%s+%-%-([%w%-]+)")
      if name then out.flags[name] = true end
    elseif section == "Usage" then
      out.usage[#out.usage + 1] = line
    end
  end
  return out
end

local function run_help(bin, words)
  local argv = { bin }
  for _, w in ipairs(words) do argv[#argv + 1] = w end
  argv[#argv + 1] = "--help"
  local code, out, err = proc.run { argv = argv, env = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/nonexistent" } }
  return code, out or "", err or ""
end

-- The exceptions: lines "- `kubeadm <command words> [--flag]`: reason" under the heading.
local function exceptions()
  local doc = assert(h.read(h.top .. "/docs/compatibility.md"), "docs/compatibility.md is missing")
  local section = doc:match("\n## Command%-line differences\n(.-)\n## ") or doc:match("\n## Command%-line differences\n(.*)$")
  assert(section, "docs/compatibility.md has no '## Command-line differences' section")
  local list = {}
  for cmd, reason in section:gmatch("\n%- `kubeadm ([^`]+)`: ([^\n]+)") do
    assert(#reason > 10, "an exception without its reason: " .. cmd)
    list[cmd] = reason
  end
  return list
end

ref.when_built(nil, describe, pending)("the command tree against the reference kubeadm", function()
  local tree -- {["init phase certs"] = parsed help}
  setup(function()
    ref.require()
    tree = {}
    local function walk(words)
      local code, out, err = run_help(ref.bin, words)
      assert(code == 0, ("kubeadm %s --help: exit %d: %s"):format(table.concat(words, " "), code, err))
      local parsed = parse_help(out)
      tree[table.concat(words, " ")] = parsed
      local names = {}
      for name in pairs(parsed.commands) do names[#names + 1] = name end
      table.sort(names)
      for _, name in ipairs(names) do
        if name ~= "help" or #words > 0 then
          local w = { table.unpack(words) }
          w[#w + 1] = name
          walk(w)
        end
      end
    end
    walk {}
  end)

  it("walks the whole of kubeadm v1.35's tree", function()
    local n = 0
    for _ in pairs(tree) do n = n + 1 end
    assert.is_true(n > 100, ("only %d kubeadm commands found: the help parser is broken"):format(n))
    assert.truthy(tree["init phase certs apiserver"])
    assert.truthy(tree["upgrade node phase control-plane"])
  end)

  it("has every kubeadm command, each answering --help with kubeadm's shape before reading any config", function()
    local skip = exceptions()
    local missing = {}
    local paths = {}
    for path in pairs(tree) do paths[#paths + 1] = path end
    table.sort(paths)
    for _, path in ipairs(paths) do
      if not skip[path] then
        local words = {}
        for w in path:gmatch("%S+") do words[#words + 1] = w end
        local code, out, err = run_help(h.bin, words)
        if code ~= 0 then
          missing[#missing + 1] = ("moonadm %s --help: exit %d: %s"):format(path, code, (err .. out):sub(1, 200))
        else
          local mine = parse_help(out)
          if #mine.usage == 0 or not out:find("\nFlags:\n", 1, true) then
            missing[#missing + 1] = ("moonadm %s --help: not kubeadm's shape (no Usage:/Flags:)"):format(path)
          end
          local want = ("moonadm" .. (path ~= "" and (" " .. path) or ""))
          local usage_ok = false
          for _, u in ipairs(mine.usage) do if u:find(want, 1, true) then usage_ok = true end end
          if not usage_ok then
            missing[#missing + 1] = ("moonadm %s --help: its usage does not name the command: %s"):format(path, table.concat(mine.usage, " | "))
          end
          for name in pairs(tree[path].commands) do
            if not mine.commands[name] and not skip[(path ~= "" and (path .. " ") or "") .. name] and name ~= "help" then
              missing[#missing + 1] = ("moonadm %s: no subcommand %q"):format(path, name)
            end
          end
        end
      end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)

  it("accepts every flag kubeadm has on each command", function()
    local skip = exceptions()
    local missing = {}
    local total = 0
    for path, k in pairs(tree) do
      if not skip[path] then
        local words = {}
        for w in path:gmatch("%S+") do words[#words + 1] = w end
        local code, out = run_help(h.bin, words)
        local mine = code == 0 and parse_help(out) or { flags = {} }
        for flag in pairs(k.flags) do
          total = total + 1
          local key = (path ~= "" and (path .. " ") or "") .. "--" .. flag
          if not mine.flags[flag] and not skip[key] then missing[#missing + 1] = "moonadm " .. key end
        end
      end
    end
    table.sort(missing)
    assert.is_true(total > 400, "only " .. total .. " kubeadm flags found")
    assert.same({}, missing)
  end)

  it("lists each exception with a reason, and only for things kubeadm has", function()
    for cmd in pairs(exceptions()) do
      local path, flag = cmd:match("^(.-)%s*%-%-([%w%-]+)$")
      path = path or cmd
      assert.truthy(tree[path], "an exception for a command kubeadm does not have: " .. cmd)
      if flag then assert.truthy(tree[path].flags[flag], "an exception for a flag kubeadm does not have: " .. cmd) end
    end
  end)
end)
