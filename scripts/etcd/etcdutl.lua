-- etcd's offline tool, etcdutl, which a snapshot restore runs: it writes a new data dir from a snapshot
-- (the database, a WAL and a raft snapshot with the membership given), what etcd's disaster-recovery
-- guide and Kubernetes' "Restoring an etcd cluster" do by hand. moonadm does not write etcd's WAL
-- itself: the tool of the etcd release is the one that knows that release's format.
-- Where it comes from: --etcdutl PATH, $MOONADM_ETCDUTL, etcdutl on PATH; else (or with --etcdutl
-- image) the etcd image the node's etcd manifest names, run once as a static Pod (etcd.image_tool):
-- every etcd image has /usr/local/bin/etcdutl, and a node that runs etcd has its image.
--   tool, err  = etcdutl.find{explicit=, image=, ctx=}
--   st, err    = etcdutl.status(tool, file)          -- {revision=, total_key=, hash=, version=}
--   ok, err    = etcdutl.restore(tool, opts)         -- opts: file, data_dir, name, peer_url, token, bump
--   tool.what                                        -- "/usr/local/bin/etcdutl" or "etcdutl of IMAGE (...)"
-- Paths are node paths (under --root, as fs.path resolves them).
local cjson = require "cjson"
local fs = require "moonadm.fs"
local proc = require "moonadm.proc"
local which = require "node.which"
local image_tool = require "etcd.image_tool"

local M = {
  -- What Kubernetes' restore guide passes: revisions above every one a client has seen, so no watch
  -- resumes at a revision the restored store reuses for other data, and every old one compacted, so
  -- each watcher relists instead.
  BUMP = 1000000000,
  IMAGE_PATH = "/usr/local/bin/etcdutl", -- where etcd's images keep it
  IMAGE = "image",                       -- --etcdutl image: the CRI path even when one is installed
}

local function from_image(opts)
  if not opts.image then
    return nil, "no etcd image is known (no etcd manifest on this node) to run etcdutl from"
  end
  return { image = opts.image, ctx = opts.ctx, what = ("etcdutl of %s (a one-shot static Pod)"):format(opts.image) }
end

function M.find(opts)
  local want = opts.explicit or os.getenv("MOONADM_ETCDUTL")
  if want == M.IMAGE then return from_image(opts) end
  if want and want ~= "" then
    local path = which.find(want)
    if not path then return nil, ("etcdutl %q is not an executable file"):format(want) end
    return { path = path, what = path }
  end
  local path = which.find("etcdutl", os.getenv("PATH") or "/usr/local/bin:/usr/bin:/bin")
  if path then return { path = path, what = path } end
  local tool, err = from_image(opts)
  if tool then return tool end
  return nil, "etcdutl is not on PATH and " .. err .. ": install the etcdutl of the etcd release the cluster " ..
    "runs (etcd's release archive has it) or name it with --etcdutl PATH"
end

local function dir_of(path) return path:match("^(.+)/[^/]*$") or "/" end

-- Runs etcdutl with args; `reads`/`writes`: the node paths it opens (mounted into the one-shot static
-- Pod on the image path). → output | nil, err.
local function run(tool, args, reads, writes)
  local code, out
  if tool.path then
    local argv = { tool.path }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    code, out = proc.run { argv = argv }
  else
    local mounts = {}
    for _, p in ipairs(reads or {}) do mounts[#mounts + 1] = { path = fs.path(p), readonly = true } end
    for _, p in ipairs(writes or {}) do mounts[#mounts + 1] = { path = fs.path(p) } end
    for _, m in ipairs(mounts) do
      if m.path == "/" then return nil, "a file in / would mount the whole root into etcdutl's Pod: move it into a directory" end
    end
    local argv = { M.IMAGE_PATH }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    code, out = image_tool.run(tool.ctx, { image = tool.image, argv = argv, mounts = mounts })
  end
  if not code then return nil, ("running %s: %s"):format(tool.what, tostring(out)) end
  if code ~= 0 then
    return nil, ("%s %s %s exited with %d: %s"):format(tool.what, args[1], args[2], code, (out:gsub("%s+$", "")))
  end
  return out
end

-- The snapshot as etcd reads it: the store's revision at the snapshot, its keys, its hash.
function M.status(tool, file)
  local out, err = run(tool, { "snapshot", "status", fs.path(file), "--write-out", "json" }, { dir_of(file) })
  if not out then return nil, err end
  local ok, doc = pcall(cjson.decode, out:match("{.*}") or "")
  local revision = ok and type(doc) == "table" and math.tointeger(doc.revision)
  if not revision then
    return nil, ("%s snapshot status %s: no revision in its answer: %s"):format(tool.what, file, out)
  end
  return { revision = revision, total_key = math.tointeger(doc.totalKey), hash = doc.hash, version = doc.version,
    size = math.tointeger(doc.totalSize) }
end

-- A data dir of a single-member cluster from the snapshot (opts.data_dir: absent or an empty dir).
function M.restore(tool, opts)
  if not tool.path then -- the Pod sees the data dir through its mount: it must be there
    local ok, err = fs.mkdir(opts.data_dir, "0700")
    if not ok then return nil, err end
  end
  local out, err = run(tool, { "snapshot", "restore", fs.path(opts.file), "--data-dir", fs.path(opts.data_dir),
    "--name", opts.name, "--initial-cluster", opts.name .. "=" .. opts.peer_url, "--initial-advertise-peer-urls",
    opts.peer_url, "--initial-cluster-token", opts.token, "--bump-revision", tostring(opts.bump or M.BUMP),
    "--mark-compacted" }, { dir_of(opts.file) }, { opts.data_dir })
  if not out then return nil, err end
  return true
end

return M
