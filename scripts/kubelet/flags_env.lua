-- /var/lib/kubelet/kubeadm-flags.env: KUBELET_KUBEADM_ARGS="<sorted --name=value ...>" (kubeadm's
-- buildKubeletArgs + ArgumentsToCommand, quoted as Go's %q).
local args = require "kube.args"

local M = {}

M.PATH = "/var/lib/kubelet/kubeadm-flags.env"

-- Go's strconv.Quote for the ASCII text flags contain.
function M.go_quote(s)
  return '"' .. s:gsub('[%c"\\\127-\255]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\"
    elseif c == "\n" then return "\\n" elseif c == "\t" then return "\\t" elseif c == "\r" then return "\\r" end
    return ("\\x%02x"):format(c:byte())
  end) .. '"'
end

-- opts: {socket, node_name, hostname, gate_cri (NodeLocalCRISocket), taints_as_flags, taints}
function M.list(cluster, nodereg, opts)
  local d = {}
  if not opts.gate_cri then d["container-runtime-endpoint"] = opts.socket end
  -- kubeadm v1.35 no longer passes --pod-infra-container-image (checked against the reference kubeadm)
  if opts.taints_as_flags and nodereg.taints and #nodereg.taints > 0 then
    local t = {}
    for _, x in ipairs(nodereg.taints) do
      t[#t + 1] = ("%s=%s:%s"):format(x.key, x.value or "", x.effect)
    end
    d["register-with-taints"] = table.concat(t, ",")
  end
  if opts.node_name and opts.hostname and opts.node_name ~= opts.hostname then
    d["hostname-override"] = opts.node_name
  end
  return args.build(d, nodereg.kubeletExtraArgs)
end

function M.text(list)
  return ("KUBELET_KUBEADM_ARGS=%s\n"):format(M.go_quote(table.concat(list, " ")))
end

-- Parses a flags file back into {name = value} (kubeadm's reader: split on spaces, --a=b or --a b).
function M.parse(text)
  local q = text:match('KUBELET_KUBEADM_ARGS="(.*)"')
  if not q then return {} end
  q = q:gsub('\\"', '"'):gsub("\\\\", "\\")
  local words = {}
  for w in q:gmatch("%S+") do words[#words + 1] = w end
  return args.parse(words)
end

return M
