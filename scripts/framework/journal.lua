-- The journal: what each phase of a flow finished, with the digest of its inputs and the files it
-- wrote (path -> sha256). `--resume` skips phases recorded with the same inputs, and preflight
-- accepts a file whose content the journal records as this engine's own. It lives under the
-- root, so each node (and each lab node) has its own, and is written atomically after each phase.
--
-- Inside a group commit (framework/runner.lua) the journal is the group's first file, so it is
-- renamed ahead of the files it names. Once it waits in the group, later changes are not encoded
-- and rewritten one by one: the pre-commit hook (fs.on_commit) writes its newest state once, just
-- before the group lands.
--
-- A journal is read as untrusted input: size-capped before it is read, decoded with a nesting
-- limit of its own, and schema-checked before any use. One that fails is refused with the fix
-- (never "--resume", which would read it again).
local fs = require "moonadm.fs"
local lazy = require "framework.lazy"
local cjson <const> = lazy.require "cjson" -- `phases CMD` reads flows without a journal
local util = require "framework.util"
local encoding = require "moonadm.encoding"

local M = {}
M.__index = M

M.DIR = "/var/lib/moonadm/journal"

-- A full init records ~60 files, ~20 KB of JSON; 1 MiB is 50 times that, and what lua-cjson
-- decodes of it stays a few MB (a 400 MB journal killed it with SIGSEGV).
M.MAX_BYTES = 1024 * 1024
-- A journal nests 4 deep ({phases = {path = {artifacts = {file = sum}}}}); lua-cjson's default
-- of 1000 levels recurses on the C stack for nothing.
M.MAX_DEPTH = 8
-- Entries per map: a flow has ~40 phases and writes ~60 files; the caps are far above, and below
-- what MAX_BYTES alone lets through (~50 000 phases, ~14 000 files).
M.MAX_PHASES, M.MAX_FILES = 1024, 4096
local MAX_NAME, MAX_PATH, MAX_DIGEST = 1024, 4096, 128 -- a phase path, a file (PATH_MAX), a digest
local LAST_DATE = 253402300799 -- 9999-12-31T23:59:59Z: os.date formats any `done` up to it

-- lua-cjson's settings are per instance: the journal's own, so its limits are not the API's.
local codec
local function json()
  if not codec then
    codec = cjson.new()
    codec.decode_max_depth(M.MAX_DEPTH)
    codec.decode_invalid_numbers(false) -- no NaN, Infinity or hex
  end
  return codec
end

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

local function what(v)
  if v == cjson.null then return "null" end
  local t = type(v)
  return t == "table" and "an object" or t == "string" and "a string" or t == "number" and "a number"
    or t == "boolean" and "a boolean" or t
end

-- An object whose keys are strings (an array's are not), of at most max entries (a map; an object
-- of known fields needs no cap: an unknown one is refused); calls f(key, value) for each, and
-- returns f's first error.
local function each(v, where, max, f)
  if type(v) ~= "table" then return ("%s is %s, not an object"):format(where, what(v)) end
  local n = 0
  for k, x in pairs(v) do
    if type(k) ~= "string" then return ("%s is an array, not an object"):format(where) end
    n = n + 1
    if max and n > max then return ("%s has more than %d entries"):format(where, max) end
    local err = f(k, x)
    if err then return err end
  end
end

-- A name from the journal as the message shows it: quoted, one line, at most 80 bytes of it.
local function q(s) return (("%q"):format(s:sub(1, 80)):gsub("\\\n", "\\n")) end

local function is_sum(v) return type(v) == "string" and #v == 64 and not v:find("[^0-9a-f]") end

-- files: {node path = sha256 hex}
local function check_files(v, where)
  return each(v, where, M.MAX_FILES, function(file, sum)
    if #file == 0 or #file > MAX_PATH or file:find("\0", 1, true) then
      return ("%s has a file name that is not a path: %s"):format(where, q(file))
    end
    if not is_sum(sum) then
      return ("%s[%s] is %s, not a SHA-256 in hex"):format(where, q(file), what(sum))
    end
  end)
end

local PHASE_FIELDS = {
  digest = function(v) return type(v) == "string" and #v <= MAX_DIGEST, "a string of at most 128 bytes" end,
  done = function(v)
    return math.type(v) ~= nil and v >= 0 and v <= LAST_DATE and v == math.floor(v), "a time in seconds"
  end,
}

local function check_phase(e, where)
  if type(e) ~= "table" then return ("%s is %s, not an object"):format(where, what(e)) end
  if e.digest == nil then return ("%s has no digest"):format(where) end
  return each(e, where, nil, function(k, v)
    if k == "artifacts" then return check_files(v, where .. ".artifacts") end
    local check = PHASE_FIELDS[k]
    if not check then return ("%s has an unknown field %s"):format(where, q(k)) end
    local ok, want = check(v)
    if not ok then return ("%s.%s is %s, not %s"):format(where, k, what(v), want) end
  end)
end

-- The journal's text -> its data, or nil and what is wrong with it. Nothing in it is used before
-- every field is checked: the runner, preflight and `phases` index it without looking.
function M.decode(text, command)
  if #text > M.MAX_BYTES then
    return nil, ("it is %d bytes, more than the %d a journal can be"):format(#text, M.MAX_BYTES)
  end
  if text == "" then return nil, "it is empty" end
  local ok, data = pcall(json().decode, text)
  if not ok then return nil, ("it is not JSON: %s"):format(tostring(data):gsub("^.-:%d+: ", "")) end
  if type(data) ~= "table" then return nil, ("it is %s, not an object"):format(what(data)) end
  local err = each(data, "the journal", nil, function(k, v)
    if k == "version" then
      if v ~= 1 then
        local shown = math.type(v) and (math.tointeger(v) or v) or what(v)
        return ("version is %s, and this moonadm reads version 1"):format(shown)
      end
    elseif k == "command" then
      if v ~= command then
        return ("command is %s, not %q"):format(type(v) == "string" and q(v) or what(v), command)
      end
    elseif k == "phases" then
      return each(v, "phases", M.MAX_PHASES, function(path, e)
        if #path == 0 or #path > MAX_NAME then
          return ("phases has a name that is not a phase path: %s"):format(q(path))
        end
        return check_phase(e, ("phases[%s]"):format(q(path)))
      end)
    elseif k == "written" then
      return check_files(v, "written")
    else
      return ("it has an unknown field %s"):format(q(k))
    end
  end)
  if err then return nil, err end
  if data.version == nil or data.phases == nil then return nil, "it has no version or no phases" end
  if data.command == nil then return nil, "it names no command" end
  return data
end

-- The journal at path: its data, nil when there is none, or nil and what is wrong with it.
local function load(path, command)
  if not fs.exists(path) then return nil end
  local text, err
  if fs.pending(path) then
    text, err = fs.read(path) -- this run's own write, not yet renamed
  else
    -- capped before a byte is read; a FIFO or device is never opened
    local host = assert(fs.path(path))
    text, err = fs.read_regular(host, M.MAX_BYTES)
    if not text and err:sub(1, #host + 1) == host .. " " then err = "it" .. err:sub(#host + 1) end -- named once
  end
  if not text then return nil, err end
  return M.decode(text, command)
end

-- A journal that cannot be used is refused before anything runs: resuming from it would read it
-- again, and starting afresh would rewrite a file someone should look at first.
local function refusal(path, why)
  local host = fs.path(path) or path
  return ("journal %s cannot be used: %s.\nIt records what earlier runs of this command finished; " ..
    "moonadm cannot tell from it which phases to skip or which files are its own. Remove it (rm %s) and " ..
    "run the command again without --resume: every phase runs again (if preflight then refuses what an " ..
    "earlier run left on this node, run `moonadm reset` first)"):format(host, why, host)
end

function M.open(command)
  local self = setmetatable({ path = M.DIR .. "/" .. command .. ".json", command = command }, M)
  local data, why = load(self.path, command)
  if why then error(refusal(self.path, why), 0) end
  self.data = data or { version = 1, command = command, phases = {} }
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
  if ok then ok, err = fs.write(self.path, json().encode(self.data), "0600") end
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
