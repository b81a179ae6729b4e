-- The join commands kubeadm prints after init and for `token create --print-join-command`
-- (cmd/kubeadm/app/cmd/util/join.go): endpoint from admin.conf's server, the CA's public-key pin.
local pki = require "moonadm.pki"
local progname = require "framework.progname"

local M = {}

-- opts: {endpoint="host:port", token=, hashes={...}, control_plane=bool, certificate_key=}
function M.text(o)
  -- run as kubeadm, the command is kubeadm's (tools that read it, as kubespray, run it as printed)
  local out = { ("%s join %s --token %s \\\n"):format(progname.name, o.endpoint, o.token) }
  for _, h in ipairs(o.hashes) do out[#out + 1] = ("\t--discovery-token-ca-cert-hash %s "):format(h) end
  if o.control_plane then
    out[#out + 1] = "\\\n\t--control-plane "
    if o.certificate_key then out[#out + 1] = ("--certificate-key %s"):format(o.certificate_key) end
  end
  return table.concat(out)
end

-- One line, as `token create --print-join-command` prints it.
function M.one_line(text) return (text:gsub("\\\n", ""):gsub("\t", "")) end

-- host:port of a server URL.
function M.endpoint(server) return (server:gsub("^https://", ""):gsub("/.*$", "")) end

-- sha256:<hex> pins of every certificate in a CA bundle. `src` names where the bundle came from
-- (for the message when there is none: a kubeconfig without certificate-authority data).
function M.hashes(ca_pem, src)
  if type(ca_pem) ~= "string" or ca_pem == "" then
    error(("%s has no certificate authority for its cluster (certificate-authority-data or certificate-authority): " ..
      "the join command's --discovery-token-ca-cert-hash is the pin of the cluster CA"):format(src or "the kubeconfig"), 0)
  end
  local certs, err = pki.read_certs(ca_pem)
  if not certs then error("parsing the cluster CA: " .. tostring(err), 0) end
  local out = {}
  for _, c in ipairs(certs) do out[#out + 1] = assert(c:pin()) end
  return out
end

local DONE = [[
Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i %s $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

Alternatively, if you are the root user, you can run:

  export KUBECONFIG=%s

You should now deploy a pod network to the cluster.
Run "kubectl apply -f [podnetwork].yaml" with one of the options listed at:
  https://kubernetes.io/docs/concepts/cluster-administration/addons/

]]

-- The text init prints at its end. o: {kubeconfig=, cpe=bool, upload_certs=bool, worker=, control_plane=}
function M.init_done(o)
  local out = { DONE:format(o.kubeconfig, o.kubeconfig) }
  if o.cpe then
    if o.upload_certs then
      out[#out + 1] = "You can now join any number of control-plane nodes running the following command on each as root:\n\n"
      out[#out + 1] = "  " .. o.control_plane .. "\n\n"
      out[#out + 1] = "Please note that the certificate-key gives access to cluster sensitive data, keep it secret!\n" ..
        "As a safeguard, uploaded-certs will be deleted in two hours; If necessary, you can use\n" ..
        "\"moonadm init phase upload-certs --upload-certs\" to reload certs afterward.\n\n"
    else
      out[#out + 1] = "You can now join any number of control-plane nodes by copying certificate authorities\n" ..
        "and service account keys on each node and then running the following as root:\n\n"
      out[#out + 1] = "  " .. o.control_plane .. "\n\n"
    end
  end
  out[#out + 1] = "Then you can join any number of worker nodes by running the following on each as root:\n\n"
  out[#out + 1] = o.worker .. "\n"
  return table.concat(out)
end

return M
