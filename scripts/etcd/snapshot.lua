-- etcd snapshots of a stacked member (issue 43): save one, check one, keep N in a directory.
--   info, err = snapshot.save{file=|dir=, endpoint=, cert_dir=, node= (default: node_name()), timeout=}
--   f, err    = snapshot.status(path)        -- the file's own checks and its hash file's verdict
--   list, err = snapshot.list(dir)           -- newest first: {{name=, path=, time=, size=, sha256=}}
--   gone, err = snapshot.prune(dir, keep)    -- the names removed, oldest first
-- A snapshot is what etcdctl writes (the database, then etcd's SHA-256 of it), streamed from one
-- member into a temp file, checked on disk, then renamed into place: a file at its name is whole.
-- In a directory each snapshot is etcd-snapshot-<node>-<UTC time>.db with, beside it, NAME.sha256
-- in sha256sum's format (sha256sum -c checks it), written after the snapshot: a snapshot without
-- one was cut off between the two writes and is listed as such.
local core = require "moonadm.core"
local etcd = require "moonadm.etcd"
local fs = require "moonadm.fs"
local nodeview = require "node.view"
local local_member = require "etcd.local_member"
local members = require "etcd.members"

local M = {
  DIR = "/var/lib/moonadm-etcd-snapshots", -- beside /var/lib/moonadm, which `reset` removes
  TIMEOUT = 600,                           -- seconds: the whole transfer (a large database)
  PREFIX = "etcd-snapshot-",
}

-- This node's name: its kubelet.conf's (the Node the cluster knows), else the host name.
function M.node_name()
  local name = nodeview.name_from_kubelet_conf(fs.read(nodeview.KUBELET_CONF), fs.read)
  return name or core.hostname():lower()
end

-- The name of a snapshot taken now by node, in a directory: its time sorts as text.
function M.name_for(node, now)
  local safe = (node or "node"):gsub("[^%w%.%-]", "_")
  return ("%s%s-%s.db"):format(M.PREFIX, safe, os.date("!%Y%m%dT%H%M%SZ", now or os.time()))
end

-- node, time ("20261207T120000Z") of a name made by name_for; nil for any other file.
function M.parse_name(name)
  local node, stamp = name:match("^" .. M.PREFIX:gsub("%-", "%%-") .. "(.+)%-(%d%d%d%d%d%d%d%dT%d%d%d%d%d%dZ)%.db$")
  return node, stamp
end

local function absolute(path)
  if path:sub(1, 1) == "/" then return path end
  return (os.getenv("PWD") or "/") .. "/" .. path
end

local function hash_line(sha, name) return ("%s  %s\n"):format(sha, name) end

-- Streams a snapshot of one member (opts.endpoint, else this node's etcd) into opts.file, or into
-- opts.dir under name_for(opts.node) with its hash file. info = the binding's snapshot table and
-- path; nil, err, kind ("exists", "io", or moonadm.etcd's kinds).
function M.save(opts)
  local path, dir
  if opts.file then
    path = absolute(opts.file)
  else
    dir = absolute(opts.dir or M.DIR)
    local ok, err = fs.mkdir(dir, tonumber("700", 8))
    if not ok then return nil, ("creating the snapshot directory %s: %s"):format(dir, tostring(err)), "io" end
    fs.clean_temps(dir) -- a killed save's temp file (a live one is locked and stays)
    path = dir .. "/" .. M.name_for(opts.node or M.node_name())
  end
  if fs.exists(path) then -- (the rename refuses it too; this spares a transfer first)
    return nil, ("%s already exists: it is not replaced (remove it, or name another file)"):format(path), "exists"
  end
  local endpoint = opts.endpoint or local_member.local_endpoints()[1]
  local m, err, kind = members.new { endpoints = { endpoint }, cert_dir = opts.cert_dir or "/etc/kubernetes/pki",
    client = "healthcheck", request_timeout = 10 }
  if not m then return nil, err, kind end
  local info
  info, err, kind = m:snapshot(path, { timeout = opts.timeout or M.TIMEOUT })
  m:close()
  if not info then return nil, err, kind end
  info.path = path
  if dir then
    local name = path:match("[^/]+$")
    local ok, werr = fs.write(path .. ".sha256", hash_line(info.sha256, name), tonumber("600", 8))
    if not ok then return nil, ("writing %s.sha256: %s"):format(path, tostring(werr)), "io" end
  end
  return info
end

-- The hash a NAME.sha256 file gives for NAME: hash, or nil, why.
local function recorded_hash(path)
  local text = fs.read(path .. ".sha256")
  if not text then return nil, "no hash file" end
  local sha, name = text:match("^(%x+)  ([^\n]+)\n?$")
  if not sha or #sha ~= 64 or name ~= path:match("[^/]+$") then
    return nil, ("%s.sha256 is not a sha256sum line for %s"):format(path, path:match("[^/]+$"))
  end
  return sha:lower()
end

-- The file's own checks (etcd.snapshot_check) and, when it has one, its hash file's: f.ok says
-- whether a restore may take it, f.problems why not.
function M.status(path)
  path = absolute(path)
  local f, err, kind = etcd.snapshot_check(path)
  if not f then return nil, err, kind end
  f.path = path
  f.problems = {}
  if not f.has_checksum then
    f.problems[#f.problems + 1] = "no etcd checksum at its end (a database copied from a data dir, or a cut file)"
  elseif not f.checksum_ok then
    f.problems[#f.problems + 1] = "its last 32 bytes are not the SHA-256 of the database: damaged"
  end
  if not f.bbolt_ok then f.problems[#f.problems + 1] = "not a whole bbolt database: " .. tostring(f.bbolt_error) end
  if fs.exists(path .. ".sha256") then
    local sha, why = recorded_hash(path)
    f.recorded_sha256 = sha
    if not sha then f.problems[#f.problems + 1] = why
    elseif sha ~= f.sha256 then f.problems[#f.problems + 1] = "its SHA-256 is not the one its .sha256 file recorded" end
  end
  f.ok = #f.problems == 0
  return f
end

-- The snapshots in dir (names made by name_for), newest first. A missing dir is an empty list.
function M.list(dir)
  dir = absolute(dir or M.DIR)
  if not fs.exists(dir) then return {} end
  local names, err = fs.list(dir)
  if not names then return nil, ("listing %s: %s"):format(dir, tostring(err)) end
  local out = {}
  for _, name in ipairs(names) do
    local node, stamp = M.parse_name(name)
    if node then
      local path = dir .. "/" .. name
      local st = fs.stat(path)
      if st and st.type == "file" then
        out[#out + 1] = { name = name, path = path, node = node, time = stamp, size = st.size,
          sha256 = (recorded_hash(path)) }
      end
    end
  end
  table.sort(out, function(a, b)
    if a.time ~= b.time then return a.time > b.time end
    return a.name > b.name
  end)
  return out
end

-- Keeps the newest `keep` snapshots of dir, removing the others with their hash files and any hash
-- file whose snapshot is gone.
function M.prune(dir, keep)
  assert(math.type(keep) == "integer" and keep >= 1, "snapshot.prune: keep must be a positive integer")
  dir = absolute(dir or M.DIR)
  local list, err = M.list(dir)
  if not list then return nil, err end
  local gone = {}
  for i = #list, keep + 1, -1 do
    local s = list[i]
    local ok, rerr = fs.remove(s.path)
    if not ok then return nil, ("removing %s: %s"):format(s.path, tostring(rerr)) end
    fs.remove(s.path .. ".sha256")
    gone[#gone + 1] = s.name
  end
  for _, name in ipairs(fs.list(dir) or {}) do
    local snap = name:match("^(.+%.db)%.sha256$")
    if snap and M.parse_name(snap) and not fs.exists(dir .. "/" .. snap) then fs.remove(dir .. "/" .. name) end
  end
  return gone
end

return M
