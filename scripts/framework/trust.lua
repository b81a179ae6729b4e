-- Site scripts run as root: a scripts dir, phase file, flow file or patches dir that someone else can
-- change is a way to run their code as root. Each is refused when it, anything under it, or any
-- directory or symlink on the way to them (symlinks followed to their targets, as the loader follows
-- them; a sticky root-owned dir such as /tmp passes on the way) is writable by group or others, or
-- owned by someone other than root or the invoking user. --insecure-scripts turns the refusal into a
-- warning. `scripts export` checks the dir it writes the same way, with no symlink allowed under it.
local fs = require "moonadm.fs"
local log = require "framework.log"

local M = {}

-- The invoking user: the real uid of this process (/proc/self/status), and under sudo SUDO_UID.
-- Read once per process (a run asks for every site file and for the node's tree).
local users_memo
function M.users()
  if users_memo then return users_memo end
  local ok = { [0] = true }
  local f = io.open("/proc/self/status", "r")
  if f then
    for line in f:lines() do
      local real, eff = line:match("^Uid:%s+(%d+)%s+(%d+)")
      if real then ok[tonumber(real)], ok[tonumber(eff)] = true, true end
    end
    f:close()
  end
  local sudo = tonumber(os.getenv("SUDO_UID") or "")
  if sudo then ok[sudo] = true end
  users_memo = ok
  return ok
end

-- Runs a moonadm.fs function on a host path (the fs root is for node paths; site files live on the host).
local function on_host(f, ...)
  local saved = fs.root()
  fs.set_root("/")
  local a, b = f(...)
  fs.set_root(saved)
  return a, b
end

-- The one owner/mode rule (site scripts and the node's trusted tree): nil, or what is wrong and the
-- command that fixes it. opts.private: a private key, which only its owner may read.
-- (opts.fix_path: the path the fix names, when path is a label such as "X (a symlink; its target)".)
local function problem(path, st, users, opts)
  local fp = opts and opts.fix_path or path
  if st.mode & 0x12 ~= 0 then
    return ("%s is writable by %s (mode %04o)"):format(path,
      st.mode & 0x2 ~= 0 and "others" or "its group", st.mode), ("chmod go-w %s"):format(fp)
  end
  if not users[st.uid] then
    return ("%s is owned by uid %d, neither root nor the invoking user"):format(path, st.uid),
      ("chown root %s, if its content is yours; else remove it"):format(fp)
  end
  if opts and opts.private and st.mode & 0x24 ~= 0 then
    return ("%s is a private key readable by %s (mode %04o)"):format(path,
      st.mode & 0x4 ~= 0 and "others" or "its group", st.mode), ("chmod 0600 %s"):format(fp)
  end
end
M.problem = problem

local function dirname(p)
  local d = p:match("^(.*)/[^/]*$")
  if d == "" then return "/" end
  return d
end

-- A relative path is the kernel's: from the real working directory, not from $PWD.
local function absolute(p)
  if p:sub(1, 1) == "/" then return p end
  local cwd = on_host(fs.readlink, "/proc/self/cwd") or os.getenv("PWD") or "."
  return cwd .. "/" .. p
end
M.absolute = absolute

local MAX_LINKS <const> = 40 -- the kernel's own limit (ELOOP)

-- Resolves path as the kernel does, one component at a time from /, and judges every step: each
-- directory it passes through (its owner and mode: who could add, replace or rename the entry it
-- holds; a root-owned sticky one such as /tmp is fine, others cannot touch entries they do not own),
-- each symlink (its owner; then its target, walked the same way) and the entry it ends at (by the
-- rule itself; with opts.sticky_end a root-owned sticky directory passes there too). Returns the
-- resolved path | nil (a component is missing: reading it fails later with its own message) |
-- nil, why, fix.
local function walk(path, users, opts)
  local todo = {} -- the components still to resolve, the next one last
  local function push(p)
    local parts = {}
    for c in p:gmatch("[^/]+") do parts[#parts + 1] = c end
    for i = #parts, 1, -1 do todo[#todo + 1] = parts[i] end
  end
  push(absolute(path))
  local cur, links, via = "/", 0, nil
  local function fail(why, fix)
    if via then why = ("%s, reached through the symlink %s"):format(why, via) end
    return nil, why, fix
  end
  local function judge(p, st)
    if st.type == "directory" and st.uid == 0 and st.mode & 0x200 ~= 0 and (#todo > 0 or opts and opts.sticky_end) then
      return nil
    end
    return problem(p, st, users)
  end
  local st = on_host(fs.stat, "/")
  if not st then return nil end
  local why, fix = judge("/", st)
  if why then return fail(why, fix) end
  while #todo > 0 do
    local name = table.remove(todo)
    if name == ".." then
      cur = dirname(cur) -- judged on the way down
    elseif name ~= "." then
      local p = (cur == "/" and "" or cur) .. "/" .. name
      st = on_host(fs.stat, p)
      if not st then return nil end
      if st.type == "link" then
        if not users[st.uid] then
          return fail(("%s is a symlink owned by uid %d, neither root nor the invoking user"):format(p, st.uid),
            ("rm %s"):format(p))
        end
        links = links + 1
        local target = on_host(fs.readlink, p)
        if links > MAX_LINKS or not target then
          return fail(("%s: too many levels of symbolic links"):format(p), ("rm %s"):format(p))
        end
        via = via or ("%s -> %s"):format(p, target)
        if target:sub(1, 1) == "/" then cur = "/" end
        push(target)
      else
        why, fix = judge(p, st)
        if why then return fail(why, fix) end
        cur = p
      end
    end
  end
  return cur
end

-- Every entry under a directory (resolved, judged): files and directories by the rule, symlinks
-- walked to their targets (a linked directory's tree is judged too, once: seen holds the resolved
-- dirs, so a link loop ends). opts.links == false: any symlink is a problem (scripts export writes
-- real files only). via: how dir was reached, for the message.
local function check_tree(dir, users, seen, opts, via)
  if seen[dir] then return nil end
  seen[dir] = true
  local function fail(why, fix)
    if via then why = ("%s, reached through the symlink %s"):format(why, via) end
    return why, fix
  end
  for _, name in ipairs(on_host(fs.list, dir) or {}) do
    local p = dir .. "/" .. name
    local st = on_host(fs.stat, p)
    local real, sub_via = p, via
    local why, fix
    if st and st.type == "link" then
      if opts and opts.links == false then
        return fail(("%s is a symlink moonadm did not make"):format(p),
          ("rm %s (or export into a new directory)"):format(p))
      end
      real, why, fix = walk(p, users)
      if why then return fail(why, fix) end
      st = real and on_host(fs.stat, real)
      sub_via = via or ("%s -> %s"):format(p, on_host(fs.readlink, p) or "?")
    elseif st then
      why, fix = problem(p, st, users)
      if why then return fail(why, fix) end
    end
    if st and st.type == "directory" then
      why, fix = check_tree(real, users, seen, opts, sub_via)
      if why then return why, fix end
    end
  end
end

-- The one trust check of a site path (a scripts, patches or export dir, a phase or flow file):
-- nil, why, fix when it (or, with opts.tree, anything under it, or any directory or symlink on the
-- way to any of them) could have been changed by someone other than root or the invoking user;
-- else its resolved path (nil too when it is missing). opts.links = false: no symlink under it;
-- opts.sticky_end: the path may be a root-owned sticky directory (a parent to create an entry in).
function M.problem_of(path, opts)
  local users = M.users()
  local real, why, fix = walk(path, users, opts)
  if why then return nil, why, fix end
  if real and opts and opts.tree then
    local st = on_host(fs.stat, real)
    if st and st.type == "directory" then
      why, fix = check_tree(real, users, {}, opts)
      if why then return nil, why, fix end
    end
  end
  return real
end

-- What each item decides, for the refusal, and what is done with it anyway under --insecure-scripts.
local STAKES = {
  ["patches dir"] = { "Patches decide what the static Pods and the kubelet run as root", "applying" },
}
local SCRIPTS = { "Site scripts run as root", "running" }

-- items: list of {what = "scripts dir"|"phase file"|"flow file"|"patches dir", path = ...}. Raises
-- with a clear message, unless insecure (then warns once per item).
function M.check(items, insecure)
  for _, it in ipairs(items) do
    if it.path then
      local _, why, fix = M.problem_of(it.path, { tree = it.what:match(" dir$") ~= nil })
      if why then
        local msg = ("refusing the %s %s: %s; fix: %s. %s: it, everything in it and every directory and symlink on "
          .. "the way must be owned by root (or you) and writable only by the owner, or pass --insecure-scripts "
          .. "for development"):format(it.what, it.path, why, fix, (STAKES[it.what] or SCRIPTS)[1])
        if not insecure then error(msg, 0) end
        log.warn("--insecure-scripts: %s the %s %s anyway: %s", (STAKES[it.what] or SCRIPTS)[2], it.what, it.path, why)
      end
    end
  end
end

-- The node's trusted tree. moonadm adopts what it finds under the root: a CA there signs every leaf,
-- a journal entry makes preflight accept a file, a manifest decides what runs as root. So before a
-- command that changes the node trusts any of it, each of these must be owned by root or the invoking
-- user and writable by its owner only: the root dir itself (--root; the dirs above it are not
-- checked), every dir from it down to /etc/kubernetes, the certificates dir and its etcd/, the
-- manifests dir and /var/lib/moonadm/journal, and the files in those dirs; private keys (*.key in the
-- certificates dirs) must be readable by their owner only. A symlink is judged by its own owner and
-- by its target. A kubeconfig others can read is a warning (it holds a client key; kubeadm writes 0600).
M.ROOT_DIRS = { "/etc/kubernetes", "/etc/kubernetes/manifests", "/var/lib/moonadm", "/var/lib/moonadm/journal" }

local function parent_dirs(p)
  local out, cur = { "/" }, ""
  for part in p:gmatch("[^/]+") do
    cur = cur .. "/" .. part
    out[#out + 1] = cur
  end
  return out
end

-- Problems of one node path (nil when it is missing), appended to out as {why, fix}.
local function node_check(p, users, opts, out)
  local lst = fs.stat(p)
  if not lst then return end
  local host = fs.path(p)
  if #host > 1 then host = host:gsub("/$", "") end -- the root itself: "/tmp/r", not "/tmp/r/"
  local fix_path = host
  local st = lst
  if lst.type == "link" then
    if not users[lst.uid] then
      out[#out + 1] = { ("%s is a symlink owned by uid %d, neither root nor the invoking user"):format(host, lst.uid),
        ("rm %s"):format(host) }
      return
    end
    st = fs.stat(p, true)
    if not st then return end -- dangling: reading it fails later with its own message
    host = host .. " (a symlink; its target)"
  end
  -- a root-owned sticky dir (/tmp) is fine: others cannot replace or rename the entries they do not own
  if st.type == "directory" and st.uid == 0 and st.mode & 0x200 ~= 0 then return st end
  local why, fix = problem(host, st, users, { private = opts and opts.private, fix_path = fix_path })
  if why then out[#out + 1] = { why, fix } end
  return st
end

-- Returns the list of problems ({why, fix}) and the warnings of the trusted tree under the fs root.
-- opts.cert_dir: certificatesDir (default /etc/kubernetes/pki); opts.keys = false: owners and write
-- bits only (reset, which deletes the keys rather than trusting them).
function M.root_problems(opts)
  opts = opts or {}
  local users = M.users()
  local cert_dir = ((opts.cert_dir or error("check_root: opts.cert_dir is required")):gsub("/+$", ""))
  local out, warnings, seen = {}, {}, {}
  local keys = opts.keys ~= false
  local dirs = { table.unpack(M.ROOT_DIRS) }
  dirs[#dirs + 1] = cert_dir
  dirs[#dirs + 1] = cert_dir .. "/etcd"
  local function dir(p)
    for _, d in ipairs(parent_dirs(p)) do
      if not seen[d] then
        seen[d] = true
        node_check(d, users, nil, out)
      end
    end
  end
  for _, d in ipairs(dirs) do dir(d) end
  local function files(d, private_ext)
    local st = fs.stat(d, true)
    if not st or st.type ~= "directory" then return end
    for _, name in ipairs(fs.list(d) or {}) do
      local p = d .. "/" .. name
      local lst = fs.stat(p)
      if lst and lst.type ~= "directory" and not seen[p] then
        seen[p] = true
        local fst = node_check(p, users, { private = keys and private_ext and name:match("%.key$") ~= nil }, out)
        if keys and fst and d == "/etc/kubernetes" and name:match("%.conf$") and fst.mode & 0x24 ~= 0 then
          warnings[#warnings + 1] = ("%s holds a client key and is readable by %s (mode %04o): chmod 0600 %s")
            :format(fs.path(p), fst.mode & 0x4 ~= 0 and "others" or "its group", fst.mode, fs.path(p))
        end
      end
    end
  end
  for _, d in ipairs(dirs) do files(d, d == cert_dir or d == cert_dir .. "/etcd") end
  return out, warnings
end

-- Refuses (raises) a root whose trusted tree others could have changed or read, naming each file, its
-- mode or owner and the fix; with insecure (--insecure-root), warns instead.
function M.check_root(opts)
  opts = opts or {}
  local problems, warnings = M.root_problems(opts)
  for _, w in ipairs(warnings) do log.warn("%s", w) end
  if #problems == 0 then return true end
  local lines = {}
  for i, p in ipairs(problems) do
    if i > 8 then
      lines[#lines + 1] = ("  (and %d more)"):format(#problems - 8)
      break
    end
    lines[#lines + 1] = ("  %s: %s"):format(p[1], p[2])
  end
  local root = fs.root()
  if opts.insecure then
    log.warn("--insecure-root: trusting the node's files under %s anyway:\n%s", root, table.concat(lines, "\n"))
    return true
  end
  error(("refusing the root %s: others could have changed (or read) the files moonadm trusts there " ..
    "(CA keys, the journal, manifests):\n%s\nFix each as shown, or pass --insecure-root to go on anyway " ..
    "(tests, staging)"):format(root, table.concat(lines, "\n")), 0)
end

return M
