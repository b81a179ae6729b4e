-- The lab's nodes made one cluster by the stock flows, run on each node as a user would run them
-- (lab/node_exec.lua): `moonadm init` on cp1 with the lab's config (lab/configs.lua), its
-- kube-apiserver waited for and its admin kubeconfigs copied into the lab's dir; then `moonadm join`
-- on every other node but the spares, whose join configs are left ready for `lab exec`.
local configs = require "lab.configs"
local log = require "framework.log"
local node_exec = require "lab.node_exec"
local paths = require "lab.paths"
local pki = require "moonadm.pki"
local proc = require "moonadm.proc"
local readiness = require "lab.readiness"
local state = require "lab.state"

local M = {}

-- --control-plane-endpoint vip: the images lab/build-images.sh makes from Debian's haproxy and
-- keepalived (tagged with their upstream versions).
local function vip_images()
  local out = {}
  for _, pkg in ipairs { "haproxy", "keepalived" } do
    local code, v = proc.run { argv = { "dpkg-query", "-W", "-f=${Version}", pkg } }
    if code ~= 0 then error(("--control-plane-endpoint vip: Debian's %s is not installed: run `make deps`"):format(pkg), 0) end
    out[pkg] = ("moonadm.lab/%s:%s"):format(pkg, v:gsub("^%d+:", ""):gsub("%-.*$", ""))
  end
  return out
end

-- cp1's init command line: the config, --upload-certs for the other control planes, the virtual
-- IP's images, the user's --flow.
local function init_argv(st, flags, cfgfile)
  local argv = { "moonadm", "init", "--config", cfgfile, "--upload-certs" }
  if st.vip then
    local img = vip_images()
    for _, a in ipairs { "--control-plane-endpoint-vip", "keepalived-haproxy",
      "--control-plane-endpoint-vip-haproxy-image", img.haproxy,
      "--control-plane-endpoint-vip-keepalived-image", img.keepalived } do argv[#argv + 1] = a end
  end
  if flags.flow then argv[#argv + 1] = "--flow"; argv[#argv + 1] = paths.abs(flags.flow) end
  return argv
end

-- Init on cp1 with the lab's join secrets, made here (gates: the parsed --feature-gates, or nil);
-- ready once its kube-apiserver is, whose admin.conf and super-admin.conf the lab's dir then holds.
function M.init(st, flags, gates)
  local cp1 = st.nodes[1]
  st.token = pki.token_id() .. "." .. pki.token_secret()
  st.certificate_key = pki.certificate_key()
  local cfgfile = configs.init(st, cp1, flags.config and paths.abs(flags.config), gates)
  state.save(st.dir, st)
  log.info("[lab] %s: moonadm init --config %s", cp1.name, cfgfile)
  local code = node_exec.exec_on(st, cp1, init_argv(st, flags, cfgfile))
  if code == 3 then
    log.warn("[lab] init stopped at a phase that is not implemented yet; the control plane still comes up from the local phases")
  elseif code ~= 0 then
    error(("moonadm init on %s failed (exit %d)"):format(cp1.name, code), 0)
  end
  local conf = cp1.root .. "/etc/kubernetes/super-admin.conf"
  readiness.wait_apiserver(st, cp1, conf)
  state.copy(cp1.root .. "/etc/kubernetes/admin.conf", st.dir .. "/admin.conf", "0600")
  state.copy(conf, st.dir .. "/super-admin.conf", "0600")
end

-- Join on every node after cp1, in order, with the user's --join-flow, --phase-file and --phase-add;
-- a spare only gets its join config (ready for `lab exec s1 -- moonadm join --config FILE`, as a worker).
function M.others(st, flags)
  local cp1 = st.nodes[1]
  for i = 2, #st.nodes do
    local n = st.nodes[i]
    local jfile = configs.join(st, n, cp1)
    if n.role == "spare" then
      log.info("[lab] %s: not joined; its worker join config is %s", n.name, jfile)
    else
      log.info("[lab] %s: moonadm join --config %s", n.name, jfile)
      local argv = { "moonadm", "join", "--config", jfile }
      if flags["join-flow"] then argv[#argv + 1] = "--flow"; argv[#argv + 1] = paths.abs(flags["join-flow"]) end
      for _, f in ipairs(flags["phase-file"] or {}) do argv[#argv + 1] = "--phase-file"; argv[#argv + 1] = paths.abs(f) end
      for _, a in ipairs(flags["phase-add"] or {}) do argv[#argv + 1] = "--phase-add"; argv[#argv + 1] = a end
      local code = node_exec.exec_on(st, n, argv)
      if code ~= 0 then error(("moonadm join on %s failed (exit %d)"):format(n.name, code), 0) end
    end
  end
end

return M
