-- `moonadm etcd snapshot save|status|list|prune` and `moonadm etcd recover`: etcd snapshots of a
-- stacked member and lost-quorum recovery (issue 43), what kubeadm leaves to etcdctl by hand
-- (docs/etcd.md).
local globals = require "framework.globals"
local flags_mod = require "framework.argv"
local log = require "framework.log"
local cli = require "framework.cli"
local lazy = require "framework.lazy"
local snapshot = require "etcd.snapshot"
local duration = require "config.duration"
local cjson = lazy.require "cjson" -- -o json only
local config = require "config"
local context = require "framework.context"
local common = require "commands.common"
local recovery = lazy.require "recovery.etcd_quorum"
local restore_mod = lazy.require "recovery.etcd_restore"

local M = {}

-- Exit code of `snapshot status` for a file that is there but fails its checks (docs/etcd.md).
M.EXIT_DAMAGED = 4

local DIR = { name = "dir", type = "string", default = snapshot.DIR,
  help = "The directory of scheduled snapshots: each is etcd-snapshot-<node>-<time>.db with its .sha256 beside it" }
local CERT_DIR = { name = "cert-dir", type = "string", default = "/etc/kubernetes/pki", help = "The path of the etcd CA and the healthcheck client certificate" }
local CONFIG = { name = "config", type = "string", help = "Path to a kubeadm configuration file (its timeouts)." }
local OUTPUT = { name = "output", short = "o", type = "string", default = "text", help = "Output format. One of: text|json." }
local SAVE_FLAGS = {
  DIR,
  { name = "endpoint", type = "string", help = "The etcd member to snapshot (default: this node's, its manifest's --advertise-client-urls)" },
  CERT_DIR,
  { name = "keep", type = "int", default = 0, help = "After saving into --dir, keep only this many newest snapshots there (0: keep all)" },
  { name = "timeout", type = "string", default = "10m", help = "How long the whole transfer may take" },
  OUTPUT,
}
local STATUS_FLAGS = { OUTPUT }
local LIST_FLAGS = { DIR, OUTPUT }
local RECOVER_FLAGS = {
  { name = "yes", type = "bool", help = "Go on although this member's data becomes the whole cluster (writes only the lost members had are lost)" },
  CERT_DIR,
  CONFIG,
}
local RESTORE_FLAGS = {
  { name = "yes", type = "bool", help = "Go on although the cluster holds newer data than the snapshot (or cannot be asked): every change since it is lost" },
  { name = "etcdutl", type = "string", help = "The etcdutl to run: a path, or \"image\" for the etcd image's own, run once as a static Pod (default: $MOONADM_ETCDUTL, else etcdutl on PATH, else the image's)" },
  CERT_DIR,
  CONFIG,
}
local PRUNE_FLAGS = { DIR, { name = "keep", type = "int", default = 5, help = "How many of the newest snapshots to keep (at least 1)" } }

M.help = {
  [""] = { short = "moonadm: etcd snapshots and lost-quorum recovery of this node's stacked etcd member", runnable = false,
    flags = {}, long = "etcd snapshots and lost-quorum recovery of a stacked etcd member, which kubeadm leaves to etcdctl " ..
      "by hand (docs/etcd.md)." },
  ["recover"] = { short = "Make this surviving member's data the whole etcd cluster after the others are lost",
    long = "When a majority of the stacked etcd members is lost for good, the cluster has no quorum and the API is down.\n" ..
      "Run on the control plane whose member survives, this restarts that member once with --force-new-cluster (a\n" ..
      "cluster of it alone, with its data) and once more without, waiting for each. Without --yes it only says what\n" ..
      "it would keep. While this member or another it knows has a leader it does nothing (the quorum stands, or\n" ..
      "this node is the one cut off). The lost control planes then rejoin with `moonadm reset` and `moonadm join\n" ..
      "--control-plane`. A run killed anywhere converges when run again (once the flag is in the manifest, with or\n" ..
      "without --yes: the decision was made).",
    args = "", flags = RECOVER_FLAGS },
  ["snapshot"] = { short = "Save, check, list and prune etcd snapshots", runnable = false, flags = {} },
  ["snapshot save"] = { short = "Save a consistent snapshot of an etcd member into FILE, or into --dir",
    long = "Streams a snapshot of this node's etcd member (or --endpoint's) into a temporary file beside FILE, checks\n" ..
      "etcd's SHA-256 of the database as it arrives and the file once it is on disk, then renames it into place:\n" ..
      "a file at FILE is always whole. An existing FILE is never replaced. Without FILE the snapshot goes into\n" ..
      "--dir under a name with this node and the time, with its hash in NAME.sha256 (sha256sum -c checks it).\n" ..
      "The file is what `etcdctl snapshot save` writes: `etcdutl snapshot restore` takes it.",
    args = "[FILE]", flags = SAVE_FLAGS,
    example = "  moonadm etcd snapshot save /root/before-upgrade.db\n  moonadm etcd snapshot save --keep 5   # the timer's command" },
  ["snapshot status"] = { short = "Check a snapshot file: etcd's checksum, the database's meta pages, its .sha256",
    long = "Reads FILE once and says whether a restore may take it. Exit status 0 when every check holds, " ..
      M.EXIT_DAMAGED .. " when\nthe file is there but fails one (damaged, cut, not a snapshot), 1 when it cannot be read.",
    args = "FILE", flags = STATUS_FLAGS },
  ["snapshot restore"] = { short = "Make a snapshot the whole etcd cluster's data, from this control plane",
    long = "Restores a stacked etcd from FILE on this control plane: its kube-apiserver and etcd stop (their manifests\n" ..
      "wait in /etc/kubernetes/tmp/moonadm-etcd-restore), etcd's etcdutl writes a new data dir from the snapshot\n" ..
      "(revisions bumped, the old ones compacted, so every client relists; the data dir's old contents are kept beside\n" ..
      "it), then etcd comes back as a cluster of this member alone, then the apiserver. The other control planes\n" ..
      "leave first (`moonadm reset` removes each member with the quorum whole: the restore refuses while another\n" ..
      "member answers) and join again afterwards (`moonadm join --control-plane`). Without --yes it refuses when\n" ..
      "the cluster is newer than the snapshot, saying by how many revisions. A run killed anywhere goes on when\n" ..
      "run again with the same FILE (the decision was made).",
    args = "FILE", flags = RESTORE_FLAGS,
    example = "  # on cp2 and cp3: moonadm reset --force\n  moonadm etcd snapshot restore --yes /var/lib/moonadm-etcd-snapshots/etcd-snapshot-cp1-20261207T120000Z.db" },
  ["snapshot list"] = { short = "List the snapshots in --dir, newest first", args = "", flags = LIST_FLAGS },
  ["snapshot prune"] = { short = "Remove all but the --keep newest snapshots in --dir", args = "", flags = PRUNE_FLAGS },
}
for _, d in pairs(M.help) do
  if #d.flags > 0 then d.globals = globals.flags({}, globals.shown_globals()) end
end

local function parse(spec, argv, max_args)
  local flags, args, set = flags_mod.parse(globals.flags(globals.global, spec), argv)
  if not flags then error(args, 0) end
  globals.setup(flags)
  if #args > max_args then
    error(("unexpected argument %q (see --help)"):format(args[max_args + 1]), 0)
  end
  local o = flags.output or "text"
  if o ~= "text" and o ~= "json" then
    error(("unable to match a printer suitable for the output format %q, allowed formats are: json,text"):format(o), 0)
  end
  return flags, args, set
end

local function seconds(text, name)
  local s = duration.seconds(text)
  if not s or s <= 0 then
    error(("invalid argument %q for \"--%s\" flag: a duration such as 10m or 90s is expected"):format(text, name), 0)
  end
  return s
end

local function mib(n) return ("%.1f MiB"):format(n / 1048576) end

local function save(argv)
  local flags, args = parse(SAVE_FLAGS, argv, 1)
  if flags.keep < 0 then error("--keep must be 0 (keep all) or a positive number", 0) end
  if args[1] and flags.keep > 0 then error("--keep applies to --dir: it cannot be given with FILE", 0) end
  local info, err, kind = snapshot.save { file = args[1], dir = flags.dir, endpoint = flags.endpoint,
    cert_dir = flags["cert-dir"], timeout = seconds(flags.timeout, "timeout") }
  if not info then
    local hint = kind == "exists" and "" or kind == "unreachable" and
      " (is etcd running on this node? --endpoint names another member)" or ""
    error(("[etcd/snapshot] The snapshot was not saved: %s%s"):format(err, hint), 0)
  end
  if flags.output == "json" then
    io.stdout:write(cjson.encode(info), "\n")
  else
    log.info("[etcd/snapshot] Saved a snapshot of member %s (etcd %s, cluster %s) at revision %s%s to %s",
      info.member_id, info.version, info.cluster_id, info.revision_exact and "" or ">= ", info.revision, info.path)
    log.info("[etcd/snapshot] %d bytes (%s database), etcd's checksum checked on disk, sha256 %s", info.size,
      mib(info.db_size), info.sha256)
  end
  if not args[1] and flags.keep > 0 then
    local gone, perr = snapshot.prune(flags.dir, flags.keep)
    if not gone then error("[etcd/snapshot] Pruning " .. flags.dir .. ": " .. perr, 0) end
    for _, name in ipairs(gone) do log.info("[etcd/snapshot] Removed %s (keeping the %d newest)", name, flags.keep) end
  end
  return 0
end

local function status(argv)
  local flags, args = parse(STATUS_FLAGS, argv, 1)
  if not args[1] then error("etcd snapshot status needs the snapshot FILE (see --help)", 0) end
  local f, err = snapshot.status(args[1])
  if not f then error("[etcd/snapshot] " .. err, 0) end
  if flags.output == "json" then
    io.stdout:write(cjson.encode(f), "\n")
  else
    local rows = {
      { "FILE", f.path }, { "SIZE", ("%d bytes"):format(f.size) }, { "SHA256", f.sha256 },
      { "ETCD CHECKSUM", not f.has_checksum and "none" or f.checksum_ok and "valid" or "INVALID" },
      { "DATABASE", f.bbolt_ok and ("bbolt, page size %s, %s pages, last transaction %s"):format(f.page_size, f.pgid, f.txid)
        or "INVALID" },
      { "HASH FILE", f.recorded_sha256 and (f.recorded_sha256 == f.sha256 and "matches" or "DIFFERS") or "none" },
    }
    for _, r in ipairs(rows) do io.stdout:write(("%-14s %s\n"):format(r[1], r[2])) end
  end
  if not f.ok then
    for _, p in ipairs(f.problems) do log.warn("%s: %s", f.path, p) end
    return M.EXIT_DAMAGED
  end
  return 0
end

local function list(argv)
  local flags = parse(LIST_FLAGS, argv, 0)
  local l, err = snapshot.list(flags.dir)
  if not l then error("[etcd/snapshot] " .. err, 0) end
  if flags.output == "json" then
    io.stdout:write(#l == 0 and "[]\n" or (cjson.encode(l) .. "\n"))
    return 0
  end
  io.stdout:write(("%-58s %-12s %s\n"):format("NAME", "SIZE", "SHA256"))
  for _, s in ipairs(l) do
    io.stdout:write(("%-58s %-12s %s\n"):format(s.name, mib(s.size), s.sha256 or "(no hash file: cut off)"))
  end
  return 0
end

local function prune(argv)
  local flags = parse(PRUNE_FLAGS, argv, 0)
  if flags.keep < 1 then error("--keep must be at least 1: prune never removes every snapshot", 0) end
  local gone, err = snapshot.prune(flags.dir, flags.keep)
  if not gone then error("[etcd/snapshot] " .. err, 0) end
  for _, name in ipairs(gone) do log.info("[etcd/snapshot] Removed %s", name) end
  log.info("[etcd/snapshot] %d removed, the %d newest kept in %s", #gone, flags.keep, flags.dir)
  return 0
end

local function context_for(flags, set)
  local cfg, err = config.load { kind = "init", files = flags.config and { flags.config } or {}, flags = {} }
  if not cfg then error(err, 0) end
  cfg.cluster.certificatesDir = flags["cert-dir"]
  common.take_root(flags, { cert_dir = flags["cert-dir"] }) -- it rewrites the etcd manifest: one moonadm at a time
  return context.new { command = "etcd", cfg = cfg, gates = cfg.gates or {}, flags = flags, flags_set = set,
    root = flags.root }
end

local function restore(argv)
  local flags, args, set = parse(RESTORE_FLAGS, argv, 1)
  if not args[1] then error("etcd snapshot restore needs the snapshot FILE (see --help)", 0) end
  restore_mod.run(context_for(flags, set), { file = args[1], yes = flags.yes, etcdutl = flags.etcdutl })
  return 0
end

local SUBS = { save = save, status = status, list = list, prune = prune, restore = restore }

local function recover(argv)
  local flags, _, set = parse(RECOVER_FLAGS, argv, 0)
  recovery.run(context_for(flags, set), { yes = flags.yes }) -- "recovered" or "quorum" (nothing to do); raises otherwise
  return 0
end

function M.main(argv)
  if argv[1] == "recover" then return recover(table.move(argv, 2, #argv, 1, {})) end
  local words = { "etcd" }
  if argv[1] == "snapshot" then
    local f = SUBS[argv[2] or ""]
    if f then return f(table.move(argv, 3, #argv, 1, {})) end
    words[2] = "snapshot"
  end
  local extra = argv[#words]
  if extra and extra:sub(1, 1) ~= "-" then
    error(("unknown command %q for %q\nRun 'moonadm %s --help' for usage."):format(extra, "moonadm " ..
      table.concat(words, " "), table.concat(words, " ")), 0)
  end
  io.stdout:write(cli.help_text(words))
  return 0
end

return M
