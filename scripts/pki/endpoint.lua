-- The API server endpoints of a node (kubeadm util/endpoint.go) and the advertise address,
-- detected from the default route when the configuration leaves it empty.
local net = require "config.net"
local log = require "log"

local M = {}

local function join_host_port(host, port)
  if host:find(":", 1, true) then return ("[%s]:%d"):format(host, port) end
  return ("%s:%d"):format(host, port)
end

-- The source address of the default route: `ip -j route get` when `ip` exists, else
-- /proc/net/route + the interface's address from `ip -j addr` (nil when neither works).
function M.default_ip()
  local function run(cmd)
    local p = io.popen(cmd .. " 2>/dev/null")
    if not p then return nil end
    local out = p:read("a")
    p:close()
    return out
  end
  local out = run("command -v ip >/dev/null && ip -j route get 1.1.1.1")
  local ip = out and out:match('"prefsrc"%s*:%s*"([^"]+)"')
  if ip and net.classify(ip) == "global-unicast" then return ip end
  out = run("command -v ip >/dev/null && ip -j -6 route get 2001:4860:4860::8888")
  ip = out and out:match('"prefsrc"%s*:%s*"([^"]+)"')
  if ip and net.classify(ip) == "global-unicast" then return ip end
  return nil
end

-- The advertise address of this node: the configured one, else the detected one (written back
-- into the InitConfiguration as kubeadm's dynamic defaulting does, so later phases see it).
function M.advertise_address(ctx)
  local init = ctx.cfg.init or {}
  local lep = init.localAPIEndpoint or {}
  local addr = lep.advertiseAddress
  if addr and addr ~= "" then
    if not net.parse_ip(addr) then
      error(("localAPIEndpoint.advertiseAddress %q is not a valid IP address"):format(addr), 0)
    end
    return addr
  end
  addr = M.default_ip()
  if not addr then
    error("could not detect the node's IP address from the default route: set it with " ..
      "--apiserver-advertise-address or InitConfiguration.localAPIEndpoint.advertiseAddress", 0)
  end
  log.v(1, "[endpoint] detected advertise address %s from the default route", addr)
  if ctx.cfg.init then
    ctx.cfg.init.localAPIEndpoint = ctx.cfg.init.localAPIEndpoint or {}
    ctx.cfg.init.localAPIEndpoint.advertiseAddress = addr
  end
  return addr
end

function M.bind_port(ctx)
  local lep = (ctx.cfg.init or {}).localAPIEndpoint or {}
  return lep.bindPort or 6443
end

-- https://<advertise>:<bindPort>
function M.local_url(address, port)
  return "https://" .. join_host_port(address, port)
end

-- The control-plane endpoint URL: controlPlaneEndpoint (its port, else bindPort), or the local URL.
function M.cpe_url(cluster, address, port)
  local cpe = cluster.controlPlaneEndpoint
  if not cpe or cpe == "" then return M.local_url(address, port) end
  local host, p = net.split_host_port(cpe)
  if not host then error(("invalid controlPlaneEndpoint %q: %s"):format(cpe, p), 0) end
  if p and p ~= port then
    log.warn("[endpoint] port specified in controlPlaneEndpoint overrides bindPort in the controlplane address")
  end
  return "https://" .. join_host_port(host, p or port)
end

return M
