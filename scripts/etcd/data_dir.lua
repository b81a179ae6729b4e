-- A local etcd member's data dir on disk: copied aside before an upgrade changes etcd, and put back
-- when the upgraded etcd fails (kubeadm's backupEtcdData / rollbackEtcdData). The data dir is
-- often a mount point (etcd on a disk of its own, as etcd's docs advise; the lab's), which can be
-- neither removed nor renamed: the restore works inside it. The backup is first copied whole into a
-- staging dir in the data dir (same file system), then each top-level entry (etcd keeps one,
-- `member`) is swapped with its staged copy by renameat2(RENAME_EXCHANGE), so the data dir never
-- shows an empty or partial `member`, whatever fails or when the process dies; what the failed etcd
-- left is moved beside the backup afterwards. The member's etcd must not run during the swap
-- (the caller stops it first).
local fs = require "moonadm.fs"

local M = {}

M.STAGING = ".moonadm-restore"

-- Copies a directory tree under the root (files atomically, with their modes); returns the number
-- of files copied.
function M.copy_tree(src, dst)
  local ok, err = fs.mkdir(dst, "0700")
  if not ok then return nil, err end
  local list, lerr = fs.list(src)
  if not list then return nil, lerr end
  local n = 0
  for _, name in ipairs(list) do
    local s, d = src .. "/" .. name, dst .. "/" .. name
    local st, serr = fs.stat(s)
    if not st then return nil, serr end
    if st.type == "directory" then
      local k, cerr = M.copy_tree(s, d)
      if not k then return nil, cerr end
      n = n + k
    elseif st.type == "file" then
      ok, err = fs.copy(s, d)
      if not ok then return nil, err end
      n = n + 1
    end
  end
  return n
end

-- Backs the data dir up into `dest` (which must not exist yet) → the number of files | nil, err.
-- An empty data dir is refused: there would be nothing to restore.
function M.backup(data_dir, dest)
  local n, err = M.copy_tree(data_dir, dest)
  if not n then return nil, ("backing up the etcd data dir %s to %s: %s"):format(data_dir, dest, err) end
  if n == 0 then return nil, ("the etcd data dir %s is empty"):format(data_dir) end
  return n
end

-- Moves a tree to `dst`: a rename on one file system, else a copy and then the removal of `src`.
function M.move_tree(src, dst)
  local ok, err = fs.rename(src, dst)
  if ok then return true end
  if not tostring(err):find("different file systems", 1, true) then return nil, err end
  local n, cerr = M.copy_tree(src, dst)
  if not n then return nil, cerr end
  return fs.remove_tree(src)
end

-- Puts `backup` (made by M.backup, `files` files) back into `data_dir` in place; what the data dir
-- held moves to `keep` (the failed data, kept for inspection). → true | nil, err. On an error the
-- data dir holds either its data before the call or the whole backup, never a mix or nothing; the
-- message says which, and where the other copy is.
function M.restore(data_dir, backup, files, keep)
  local staging = data_dir .. "/" .. M.STAGING
  -- a staging dir left by a run that died before its swaps: it is a copy of the backup, made anew
  local ok, err = fs.remove_tree(staging)
  if not ok then return nil, ("removing the stale %s: %s"):format(staging, err) end
  local n, cerr = M.copy_tree(backup, staging)
  if not n then
    fs.remove_tree(staging)
    return nil, ("copying the backup %s into %s: %s (the data dir is unchanged)"):format(backup, staging, cerr)
  end
  if files and n ~= files then
    fs.remove_tree(staging)
    return nil, ("the backup %s holds %d files, %d when it was made (the data dir is unchanged)"):format(backup, n, files)
  end
  local names, lerr = fs.list(staging)
  if not names then return nil, lerr end
  for _, name in ipairs(names) do
    local live, staged = data_dir .. "/" .. name, staging .. "/" .. name
    if fs.exists(live) then ok, err = fs.rename(live, staged, true) else ok, err = fs.rename(staged, live) end
    if not ok then
      return nil, ("swapping %s with its backup: %s (the data dir holds its data from before; the backup is whole in %s)")
        :format(live, err, backup)
    end
  end
  -- what only the failed data had (the backup's names are now swapped in) goes with the rest of it
  local live_names = fs.list(data_dir) or {}
  local in_backup = {}
  for _, name in ipairs(names) do in_backup[name] = true end
  for _, name in ipairs(live_names) do
    if name ~= M.STAGING and not in_backup[name] then
      ok, err = fs.rename(data_dir .. "/" .. name, staging .. "/" .. name)
      if not ok then return nil, ("moving the failed etcd's %s aside: %s (the backup is restored)"):format(name, err) end
    end
  end
  ok, err = M.move_tree(staging, keep)
  if not ok then
    return nil, ("keeping the failed data in %s: %s (the backup is restored; the failed data stays in %s)")
      :format(keep, err, staging)
  end
  return true
end

return M
