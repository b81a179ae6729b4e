-- The run context every phase receives: the effective configuration, feature gates, flags, and
-- file access under the root that records what each phase wrote (for the journal) and that, under
-- --dry-run, writes into a temp dir instead and prints every intended write.
local fs = require "moonadm.fs"
local log = require "framework.log"
local encoding = require "moonadm.encoding"
local pki = require "moonadm.pki"

local M = {}
M.__index = M

-- ctx.data is what one part of a run hands to a later one. Every key is declared where it is made:
--   * by a flow's preparation (before any phase): its module's DATA list (flows/join/data.lua, ...);
--   * by a phase: its `data` list, next to `provides` (the runner checks it after each phase);
--   * or it is one of these per-run memos, filled by the getter named, whichever phase asks first:
M.CACHES = {
  client = "cluster.admin.client: the run's admin API client",
  site_clients = "site.api: ctx:client(which)'s clients",
  upgrade_poll_client = "upgrade.control_plane: short-timeout client for the mirror-pod polls",
  etcd = "etcd.join.client: the etcd members client of a joining control plane",
  cri_socket = "cri.socket.socket: the node's CRI socket, once detected",
  patch_sets = "manifests.patches: the --patches directory, read once",
  manifest_dir_logged = "manifests: the manifests folder named once in the log",
  addons_ready = "upgrade.addon: whether every control plane runs the new kube-apiserver",
  pki_start = "pki.tree: the run's clock for NotBefore",
  pki_keys = "pki.tree: keys generated ahead, in parallel",
  pki_parsed = "pki.tree: keys and certificates parsed from their PEM (or written by this run), by the text",
}

-- opts: {command, cfg, gates, flags, root, dry_run, inputs}
function M.new(opts)
  local self = setmetatable(opts, M)
  self.artifacts = {}
  self.data = self.data or {} -- what phases hand to later phases (clients, tokens, ...)
  if self.dry_run then
    -- As Go's os.MkdirTemp: an unguessable name, created 0700 before anything is written into it
    -- (the dir receives private keys; a predictable name in /tmp could be planted by another user).
    local tmp = os.getenv("TMPDIR") or "/tmp"
    self.dry_root = ("%s/moonadm-dryrun-%s"):format(tmp, pki.random_hex(8))
    local real = fs.root()
    fs.set_root("/")
    local ok, err = fs.mkdir(self.dry_root, tonumber("700", 8))
    local st = ok and fs.stat(self.dry_root)
    fs.set_root(real)
    if not ok then error("[dryrun] " .. tostring(err), 0) end
    if not st or st.type ~= "directory" or st.mode ~= tonumber("700", 8) then
      error("[dryrun] " .. self.dry_root .. " is not a fresh 0700 directory", 0)
    end
    log.info("[dryrun] Writing files to %s instead of %s", self.dry_root, self.root)
  end
  return self
end

-- Runs f with the fs root switched to the dry-run dir (writes never touch the real root).
local function in_dry_root(self, f, ...)
  local real = fs.root()
  fs.set_root(self.dry_root)
  local r = table.pack(pcall(f, ...))
  fs.set_root(real)
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

-- Writes a file atomically with its final mode; raises with the path on failure.
-- Returns whether the content changed.
function M:write(path, data, mode)
  local ok, changed, err
  -- The journal learns the file's content before the file is replaced: a run killed right after
  -- the write (before a later journal save) still leaves a file the journal knows as ours. A
  -- record whose write never happened is harmless: `owns` compares the content on disk.
  local sum = encoding.sha256_hex(data)
  if self.journal and not self.dry_run then
    local jok, jerr = self.journal:artifact(path, sum)
    if not jok then error(("journal: %s"):format(jerr), 0) end
  end
  if self.dry_run then
    log.info("[dryrun] Would write file %q", path)
    ok, changed = in_dry_root(self, fs.write, path, data, mode)
    err = changed
  else
    ok, changed = fs.write(path, data, mode)
    err = changed
  end
  if not ok then error(("writing %s: %s"):format(path, err), 0) end
  self.artifacts[path] = sum
  return changed
end

function M:mkdir(path, mode)
  if self.dry_run then
    log.info("[dryrun] Would create directory %q", path)
    return in_dry_root(self, fs.mkdir, path, mode)
  end
  local ok, err = fs.mkdir(path, mode)
  if not ok then error(("creating %s: %s"):format(path, err), 0) end
  return true
end

-- Reads a file: under --dry-run, what an earlier phase of this run wrote wins.
function M:read(path)
  if self.dry_run then
    local data = in_dry_root(self, fs.read, path)
    if data then return data end
  end
  return fs.read(path)
end

function M:exists(path)
  if self.dry_run and in_dry_root(self, fs.exists, path) then return true end
  return fs.exists(path)
end

function M:gate(name)
  return self.gates[name] == true
end

return M
