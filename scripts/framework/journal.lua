-- The journal: what each phase of a flow finished, with the digest of its inputs and the files it
-- wrote (path -> sha256). `--resume` skips phases recorded with the same inputs, and preflight
-- accepts a file whose content the journal records as this engine's own. It lives under the
-- root, so each node (and each lab node) has its own, and is written atomically after each phase.
--
-- Inside a group commit (framework/runner.lua) the journal is the group's first file, so it is
-- renamed ahead of the files it names. Once it waits in the group, later changes are not encoded
-- and rewritten one by one: the pre-commit hook (fs.on_commit) writes its newest state once, just
-- before the group lands.
local fs = require "moonadm.fs"
local lazy = require "framework.lazy"
local cjson <const> = lazy.require "cjson" -- `phases CMD` reads flows without a journal
local util = require "framework.util"
local encoding = require "moonadm.encoding"

local M = {}
M.__index = M

M.DIR = "/var/lib/moonadm/journal"

-- Journals whose newest state waits for the next commit.
local unsaved = {}

-- The pre-commit hook. A journal that cannot be saved stays unsaved and fails the commit: the
-- group's end then lands nothing rather than files the journal on disk does not name.
local function save_unsaved()
  for j in pairs(unsaved) do
    local ok, err = j:save()
    if not ok then error(("journal %s: %s"):format(j.path, err), 0) end
  end
end

function M.open(command)
  local self = setmetatable({ path = M.DIR .. "/" .. command .. ".json", command = command }, M)
  local text = fs.read(self.path)
  local ok, data = pcall(cjson.decode, text or "")
  self.data = (text and ok and type(data) == "table") and data or { version = 1, command = command, phases = {} }
  self.data.phases = self.data.phases or {}
  -- renamed first in every commit, whenever it was first written in the group
  local hooked, err = fs.on_commit(save_unsaved, self.path)
  if not hooked then error(("journal %s: %s"):format(self.path, err), 0) end
  return self
end

-- Inputs of a phase: its path, the effective configuration and the flags that change output.
function M:digest(path, ctx)
  return encoding.sha256_hex(util.canon { phase = path, inputs = ctx.inputs })
end

-- Done with these inputs, and every file it recorded is on disk with the content this phase or the
-- newest write of it recorded (a later phase may rewrite a file): a journal renamed ahead of its
-- phase's files (a crash inside a group commit) runs the phase again.
function M:done(path, digest)
  local e = self.data.phases[path]
  if e == nil or e.digest ~= digest then return false end
  local newest = self.data.written or {}
  for file, sum in pairs(e.artifacts or {}) do
    local data = fs.read(file)
    local have = data and encoding.sha256_hex(data)
    if have ~= sum and have ~= newest[file] then return false end
  end
  return true
end

function M:save()
  local ok, err = fs.mkdir(M.DIR, "0700")
  if ok then ok, err = fs.write(self.path, cjson.encode(self.data), "0600") end
  if not ok then return nil, err end
  unsaved[self] = nil
  return true
end

-- Saved now, or with the commit when an earlier save already waits in the group.
function M:changed()
  if fs.pending(self.path) then
    unsaved[self] = true
    return true
  end
  return self:save()
end

function M:record(path, digest, artifacts)
  self.data.phases[path] = { digest = digest, done = os.time(), artifacts = artifacts }
  return self:changed()
end

-- Every file is recorded the moment it is written, before its phase ends: after a crash mid-phase
-- the file is still known as ours (its phase is not: it runs again under --resume).
function M:artifact(file, sum)
  self.data.written = self.data.written or {}
  self.data.written[file] = sum
  return self:changed()
end

-- Does the journal record this file, with exactly this content, as written by one of our phases?
function M:owns(file, content)
  local sum = content and encoding.sha256_hex(content)
  local w = self.data.written and self.data.written[file]
  if w and (sum == nil or w == sum) then return true end
  for _, e in pairs(self.data.phases) do
    local a = e.artifacts and e.artifacts[file]
    if a and (sum == nil or a == sum) then return true end
  end
  return false
end

function M:reset()
  unsaved[self] = nil
  self.data.phases, self.data.written = {}, {}
  return fs.remove(self.path)
end

return M
