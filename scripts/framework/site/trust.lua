-- Site scripts run as root: a scripts dir, phase file or flow file that someone else can change is
-- a way to run their code as root. Each is refused when it (or a directory it sits in, up to but not
-- including a sticky root-owned one such as /tmp) is writable by group or others, or owned by
-- someone other than root or the invoking user. --insecure-scripts turns the refusal into a warning.
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

-- stat of a host path (the fs root is for node paths; scripts live on the host).
local function host_stat(path)
  local saved = fs.root()
  fs.set_root("/")
  local st, err = fs.stat(path)
  fs.set_root(saved)
  return st, err
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

local function absolute(p)
  if p:sub(1, 1) == "/" then return p end
  return (os.getenv("PWD") or ".") .. "/" .. p
end

-- Returns nil | message for one path: the path itself, then each directory above it until a
-- root-owned sticky directory (/tmp) or /.
local function check_path(path, users)
  local p = absolute(path)
  local st, err = host_stat(p)
  if not st then return nil end -- a missing file fails later with its own message
  local why = problem(p, st, users)
  if why then return why end
  local d = dirname(p)
  while true do
    local ds = host_stat(d)
    if not ds then return nil end
    if ds.uid == 0 and ds.mode & 0x200 ~= 0 then return nil end -- /tmp-like: others cannot replace our entries
    why = problem(d, ds, users)
    if why then return why end
    if d == "/" then return nil end
    d = dirname(d)
  end
end

-- Every file and directory under a scripts dir must be safe too.
local function check_tree(dir, users, depth)
  if depth > 16 then return nil end
  local names = fs.list and (function()
    local saved = fs.root()
    fs.set_root("/")
    local l = fs.list(dir)
    fs.set_root(saved)
    return l
  end)() or {}
  for _, name in ipairs(names) do
    local p = dir .. "/" .. name
    local st = host_stat(p)
    if st and st.type ~= "link" then
      local why = problem(p, st, users)
      if why then return why end
      if st.type == "directory" then
        why = check_tree(p, users, depth + 1)
        if why then return why end
      end
    end
  end
end

-- items: list of {what = "scripts dir"|"phase file"|"flow file", path = ...}. Raises with a clear
-- message, unless insecure (then warns once per item).
function M.check(items, insecure)
  local users = M.users()
  for _, it in ipairs(items) do
    if it.path then
      local why = check_path(it.path, users)
      if not why and it.what == "scripts dir" then why = check_tree(absolute(it.path), users, 0) end
      if why then
        local msg = ("refusing the %s %s: %s. Site scripts run as root: make it owned by root (or you) and "
          .. "writable only by its owner (chmod go-w), or pass --insecure-scripts for development"):format(it.what, it.path, why)
        if not insecure then error(msg, 0) end
        log.warn("--insecure-scripts: running the %s %s anyway: %s", it.what, it.path, why)
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
