-- The kubelet-config phase: /var/lib/kubelet/config.yaml from the cluster's kubelet-config
-- (the old file kept in /etc/kubernetes/tmp/kubeadm-kubelet-config<timestamp>/config.yaml), and
-- the NodeLocalCRISocket migration (seed 002): when instance-config.yaml is missing, it is written
-- from kubeadm-flags.env's --container-runtime-endpoint, which is then removed from the flags file.
-- An existing instance-config.yaml is never overwritten. As kubeadm, the kubelet is not restarted here.
local fs = require "moonadm.fs"
local log = require "framework.log"
local kconfig = require "kubelet.config"
local kflags = require "kubelet.flags_env"
local cri = require "cri.socket"
local control_plane = require "upgrade.control_plane"

local M = {}

-- The flags file without --container-runtime-endpoint (either `--x=v` or `--x v`), and the
-- endpoint it held; nil when the file has none.
function M.strip_cri_flag(text)
  local sock = kflags.parse(text or "")["container-runtime-endpoint"]
  if not sock then return nil end
  local q = text:match('KUBELET_KUBEADM_ARGS="(.*)"') or ""
  local out, skip = {}, false
  for w in q:gmatch("%S+") do
    if skip then skip = false
    elseif w == "--container-runtime-endpoint" then skip = true
    elseif not w:match("^%-%-container%-runtime%-endpoint=") then out[#out + 1] = w end
  end
  return kflags.text(out), sock
end

function M.run(ctx)
  local ts = control_plane.timestamp()
  local gate = ctx:gate("NodeLocalCRISocket")
  local changed = false
  local socket
  if gate then
    local inst = ctx:read(kconfig.INSTANCE_PATH)
    if inst then
      socket = inst:match('containerRuntimeEndpoint:%s*"?([^"\n]+)"?')
    else
      local ftext = ctx:read(kflags.PATH)
      local new_flags, sock = M.strip_cri_flag(ftext)
      if sock then
        socket = sock
        log.info("[upgrade] Migrating the CRI socket %q from %s to %s (NodeLocalCRISocket)", sock, kflags.PATH,
          kconfig.INSTANCE_PATH)
      else
        socket = cri.socket(ctx)
        log.info("[upgrade] %s has no --container-runtime-endpoint; using %q for %s", kflags.PATH, socket,
          kconfig.INSTANCE_PATH)
      end
      ctx:mkdir(kconfig.DIR, "0700")
      ctx:write(kconfig.INSTANCE_PATH, kconfig.instance_text(socket), "0644")
      if new_flags then
        log.info("[upgrade] Removing --container-runtime-endpoint from %s", kflags.PATH)
        ctx:write(kflags.PATH, new_flags, "0644")
      end
      changed = true
    end
    ctx.data.cri_socket = socket
  end
  socket = socket or cri.socket(ctx)
  local text = kconfig.render(ctx, socket)
  local old = ctx:read(kconfig.PATH)
  if old and not ctx.dry_run and old ~= text then
    local dir = ("/etc/kubernetes/tmp/kubeadm-kubelet-config%s"):format(ts)
    local ok, err = fs.mkdir(dir, "0700")
    if ok then ok, err = fs.copy(kconfig.PATH, dir .. "/config.yaml") end
    if not ok then error(("backing up %s: %s"):format(kconfig.PATH, err), 0) end
    log.info("[upgrade] Backing up kubelet config file to %s", dir .. "/config.yaml")
  end
  log.info("[kubelet-start] Writing kubelet configuration to file %q", kconfig.PATH)
  if ctx:write(kconfig.PATH, text, "0644") then changed = true end
  -- as kubeadm: the kubelet picks the files up when it is restarted after its own upgrade
  log.info("[upgrade/kubelet-config] The kubelet configuration for this node was successfully upgraded!")
  return changed
end

return M
