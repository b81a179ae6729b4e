-- `moonadm join [api-server-endpoint] [flags]` and `moonadm join phase <name>`.
local flowcmd = require "commands.flowcmd"
local data = require "flows.join.data"
local join_done = require "flows.join.done"

local M = {}

M.flags = {
  { name = "apiserver-advertise-address", type = "string", help = "If the node should host a new control plane instance, the IP address the API Server will advertise it's listening on" },
  { name = "apiserver-bind-port", type = "int", help = "If the node should host a new control plane instance, the port for the API Server to bind to (default 6443)" },
  { name = "certificate-key", type = "string", help = "Use this key to decrypt the certificate secrets uploaded by init" },
  { name = "control-plane", type = "bool", help = "Create a new control plane instance on this node" },
  { name = "control-plane-endpoint-vip-interface", type = "string", help = "moonadm: the interface keepalived holds the cluster's virtual IP on, when it has one (default: the one with the advertise address)" },
  { name = "cri-socket", type = "string", help = "Path to the CRI socket to connect" },
  { name = "discovery-file", type = "string", help = "For file-based discovery, a file or URL from which to load cluster information" },
  { name = "discovery-token", type = "string", help = "For token-based discovery, the token used to validate cluster information fetched from the API server" },
  { name = "discovery-token-ca-cert-hash", type = "list", help = "For token-based discovery, validate that the root CA public key matches this hash (format: \"<type>:<value>\")" },
  { name = "discovery-token-unsafe-skip-ca-verification", type = "bool", help = "For token-based discovery, allow joining without --discovery-token-ca-cert-hash pinning" },
  { name = "node-name", type = "string", help = "Specify the node name" },
  { name = "patches", type = "string", help = "Path to a directory that contains files named \"target[suffix][+patchtype].extension\"" },
  { name = "tls-bootstrap-token", type = "string", help = "Specify the token used to temporarily authenticate with the Kubernetes Control Plane while joining the node" },
  { name = "token", type = "string", help = "Use this token for both discovery-token and tls-bootstrap-token when those values are not provided" },
  { name = "kubelet-server", type = "string", help = "moonadm experiment: where a joining control plane's kubelet talks to: local or endpoint (default: local under ControlPlaneKubeletLocalMode)" },
}

local OPTS <const> = { name = "join", flow = "join", kind = "join", flags = M.flags, cmd = "join", cmd_words = { "join" },
  args = "[api-server-endpoint]", desc = "Run this on any machine you wish to join an existing cluster",
  prepare = function(ctx) data.prepare(ctx) end, prepare_data = data.DATA,
  done = function(ctx) return join_done.text(ctx) end }

M.help, M.help_for = flowcmd.help_tree(OPTS)

function M.main(argv)
  return flowcmd.main(setmetatable({ argv = argv }, { __index = OPTS }))
end

return M
