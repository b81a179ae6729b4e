-- Preflight checks with kubeadm's names. Each check returns nothing when fine, or a list of
-- {level = "error"|"warning", msg}. Errors named in --ignore-preflight-errors (or "all") become
-- warnings, as in kubeadm; the check's name is printed so the user knows what to pass. A file
-- that the journal records as this engine's own (with the same content) passes under --resume.
local fs = require "moonadm.fs"
local core = require "moonadm.core"
local log = require "log"

local M = {}

-- kubeadm names a path check after the path: /etc/kubernetes/manifests/x.yaml ->
-- FileAvailable--etc-kubernetes-manifests-x.yaml
local function path_name(prefix, path)
  return prefix .. path:gsub("/", "-")
end

function M.file_available(path)
  return {
    name = path_name("FileAvailable-", path),
    run = function(ctx)
      if not fs.exists(path) then return end
      if ctx.flags.resume and ctx.journal and ctx.journal:owns(path, fs.read(path)) then
        log.v(1, "[preflight] %s was written by an earlier run of this flow (journal): accepted under --resume", path)
        return
      end
      return { { level = "error", msg = ("%s already exists"):format(path) } }
    end,
  }
end

function M.dir_available(path)
  return {
    name = path_name("DirAvailable-", path),
    run = function(ctx)
      local entries = fs.list(path)
      if not entries or #entries == 0 then return end
      if ctx.flags.resume and ctx.journal then
        local all_ours = true
        for _, e in ipairs(entries) do
          local p = path .. "/" .. e
          local st = fs.stat(p)
          if not (st and st.type == "file" and ctx.journal:owns(p, fs.read(p))) then all_ours = false end
        end
        if all_ours or ctx.journal:owns(path) then return end
      end
      return { { level = "error", msg = ("%s is not empty"):format(path) } }
    end,
  }
end

M.is_privileged_user = {
  name = "IsPrivilegedUser",
  run = function(ctx)
    -- Under --root the node is a directory the user owns; only a real node needs root.
    if ctx.root ~= "/" then return end
    if core.getuid() ~= 0 then return { { level = "error", msg = "user is not running as root" } } end
  end,
}

-- Runs the checks; raises one error listing every failing check, kubeadm-style.
function M.run(ctx, checks)
  local ignore = {}
  local doc = ctx.cfg and (ctx.cfg.init or ctx.cfg.join) or {}
  local from_cfg = ctx.cfg and ctx.cfg.reset and ctx.cfg.reset.ignorePreflightErrors
    or (doc.nodeRegistration or {}).ignorePreflightErrors
  for _, n in ipairs(from_cfg or ctx.flags["ignore-preflight-errors"] or {}) do
    ignore[n:lower()] = true
  end
  local errs = {}
  for _, c in ipairs(checks) do
    for _, r in ipairs(c.run(ctx) or {}) do
      if r.level == "error" and not (ignore.all or ignore[c.name:lower()]) then
        errs[#errs + 1] = ("\t[ERROR %s]: %s"):format(c.name, r.msg)
      else
        log.warn("%s: %s", c.name, r.msg)
      end
    end
  end
  if #errs > 0 then
    local hint = ctx.journal and next(ctx.journal.data.phases) and
      "\nThis node has a moonadm journal from an earlier run: to continue it, run the same command with --resume." or ""
    error(("[preflight] Some fatal errors occurred:\n%s\n[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`%s")
      :format(table.concat(errs, "\n"), hint), 0)
  end
end

return M
