-- Pod networking of a real-kubelet lab, the part a CNI DaemonSet would do on a real cluster: each
-- node's conflist (bridge + host-local over the pod CIDR the controller-manager gave its Node, portmap;
-- containerd adds loopback) and, in every node's network namespace, a route to each other node's
-- pod CIDR through that node's address on the lab's bridge. Idempotent: `lab up` calls it until
-- every Node has its pod CIDR.
local cjson = require "cjson"
local net = require "lab.net"
local proc = require "moonadm.proc"
local state = require "lab.state"

local M = {}

M.CONFLIST = "/etc/cni/net.d/10-moonadm-lab.conflist"

function M.conflist(pod_cidr)
  return cjson.encode {
    cniVersion = "1.0.0", name = "moonadm-lab",
    plugins = {
      { type = "bridge", bridge = "cni0", isGateway = true, ipMasq = false,
        ipam = { type = "host-local", ranges = { { { subnet = pod_cidr } } }, routes = { { dst = "0.0.0.0/0" } },
          dataDir = "/var/lib/cni/networks" } },
      { type = "portmap", capabilities = { portMappings = true } },
    },
  } .. "\n"
end

-- st: the lab's state; nodes: the API's Node list. Returns the names of the nodes still without a
-- pod CIDR (empty when every node is wired).
function M.sync(st, nodes)
  local cidr, joined = {}, {}
  for _, n in ipairs(nodes.items or {}) do
    joined[n.metadata.name] = true
    local pc = n.spec and n.spec.podCIDR
    if type(pc) == "string" and pc ~= "" then cidr[n.metadata.name] = pc end
  end
  local missing = {}
  for _, n in ipairs(st.nodes) do
    -- a spare once it joined (`lab network`): its Node, or its kubelet.conf before the Node registers
    local f = n.role == "spare" and not joined[n.name:lower()] and io.open(n.root .. "/etc/kubernetes/kubelet.conf", "r")
    if f then f:close() end
    if n.role ~= "spare" or joined[n.name:lower()] or f then
      local pc = cidr[n.name:lower()]
      if not pc then
        missing[#missing + 1] = n.name
      elseif n.pod_cidr ~= pc then
        state.write(n.root .. M.CONFLIST, M.conflist(pc), "0644", "0755")
        n.pod_cidr = pc
        for _, peer in ipairs(st.nodes) do if peer.routes then peer.routes[n.name] = nil end end
      end
    end
  end
  -- every node reaches every other wired node's pods through that node's address
  for _, n in ipairs(st.nodes) do
    for _, peer in ipairs(st.nodes) do
      if peer ~= n and peer.pod_cidr and (n.role ~= "spare" or n.pod_cidr) and not (n.routes or {})[peer.name] then
        local code = proc.run { argv = { "ip", "-n", net.netns_name(n.name, st.name), "route", "replace", peer.pod_cidr,
          "via", peer.ip } }
        if code == 0 then n.routes = n.routes or {}; n.routes[peer.name] = true end
      end
    end
  end
  return missing
end

-- Pod networking as each Node's pod CIDR says (M.sync, the Nodes read with the API client c), with
-- the lab's record saved → the nodes still without a pod CIDR | nil, err.
function M.wire(c, st)
  local nodes, err = c:list({ apiVersion = "v1", kind = "Node" }, { timeout = 5 })
  if not nodes then return nil, "listing the Nodes for their pod CIDRs: " .. tostring(err) end
  local missing = M.sync(st, nodes)
  state.save(st.dir, st)
  return missing
end

return M
