-- An external etcd cluster for a lab (`moonadm lab up --external-etcd N`): N etcd members, each a
-- plain process in its own network namespace (as a separately run etcd service would be), with
-- their own CA, server and peer certificates, and the client certificate the kube-apiservers use.
-- The ClusterConfiguration then names them under etcd.external, as a site with external etcd does.
local pki = require "moonadm.pki"
local proc = require "moonadm.proc"
local net = require "lab.net"
local state = require "lab.state"

local M = {}

-- Atomic, created at its final mode (a key is never readable by others, not even for a moment).
local function write(path, text, mode) state.write(path, text, mode, "0755") end

local function sign(ca, cakey, spec)
  local key = assert(pki.generate_key("ECDSA-P256"))
  local now = os.time()
  spec.not_before, spec.not_after = now - 300, now + 365 * 86400
  spec.usages = { "digital_signature", "key_encipherment" }
  local cert = assert(pki.sign_cert(key, spec, ca, cakey))
  return cert:pem(), key:pem()
end

-- members: list of {name, ip, root}. Writes every member's PKI under its root and the client
-- files under client_dir; returns the etcd.external config fragment (paths as the nodes see them).
function M.pki(dir, members)
  local cakey = assert(pki.generate_key("ECDSA-P256"))
  local now = os.time()
  local ca = assert(pki.create_ca(cakey, { cn = "external-etcd-ca", dns = { "external-etcd-ca" },
    not_before = now - 300, not_after = now + 10 * 365 * 86400, is_ca = true,
    usages = { "digital_signature", "key_encipherment", "cert_sign" } }))
  for _, m in ipairs(members) do
    local base = m.root .. "/etc/etcd/pki"
    write(base .. "/ca.crt", ca:pem(), "0644")
    local crt, key = sign(ca, cakey, { cn = m.name, dns = { m.name, "localhost" }, ips = { m.ip, "127.0.0.1" },
      ext_usages = { "server_auth", "client_auth" } })
    write(base .. "/server.crt", crt, "0644")
    write(base .. "/server.key", key, "0600")
  end
  local crt, key = sign(ca, cakey, { cn = "kube-apiserver-etcd-client", ext_usages = { "client_auth" } })
  local client = { ca = ca:pem(), crt = crt, key = key }
  local endpoints = {}
  for _, m in ipairs(members) do endpoints[#endpoints + 1] = ("https://%s:2379"):format(m.ip) end
  return client, endpoints
end

-- Starts every member; returns their PIDs.
function M.start(st, members, bin)
  local initial = {}
  for _, m in ipairs(members) do initial[#initial + 1] = ("%s=https://%s:2380"):format(m.name, m.ip) end
  for _, m in ipairs(members) do
    local pkidir = m.root .. "/etc/etcd/pki"
    os.execute(("mkdir -p '%s/var/lib/etcd' '%s/var/log' && chmod 0700 '%s/var/lib/etcd'"):format(m.root, m.root, m.root))
    local pid = assert(proc.spawn { argv = { bin .. "/etcd", "--name", m.name, "--data-dir", m.root .. "/var/lib/etcd",
      "--listen-client-urls", ("https://%s:2379,https://127.0.0.1:2379"):format(m.ip),
      "--advertise-client-urls", ("https://%s:2379"):format(m.ip),
      "--listen-peer-urls", ("https://%s:2380"):format(m.ip),
      "--initial-advertise-peer-urls", ("https://%s:2380"):format(m.ip),
      "--initial-cluster", table.concat(initial, ","), "--initial-cluster-state", "new",
      "--cert-file", pkidir .. "/server.crt", "--key-file", pkidir .. "/server.key", "--client-cert-auth=true",
      "--trusted-ca-file", pkidir .. "/ca.crt", "--peer-cert-file", pkidir .. "/server.crt",
      "--peer-key-file", pkidir .. "/server.key", "--peer-client-cert-auth=true", "--peer-trusted-ca-file", pkidir .. "/ca.crt" },
      netns = net.netns_path(m.name, st.name), log = m.root .. "/var/log/etcd.log", new_session = true })
    m.etcd_pid = pid
  end
end

-- `lab up`'s external etcd (st.etcd, lab/network.lua's addresses): the members' namespaces, PKI and
-- processes, and the kube-apiserver's client files on the first control plane where kubeadm's docs
-- put them; st.external says the endpoints (lab/configs.lua's etcd.external).
function M.up(st)
  for _, m in ipairs(st.etcd) do net.node_up(m.name, m.ip, st.subnet, st.name) end
  local client, endpoints = M.pki(st.dir, st.etcd)
  M.start(st, st.etcd, st.bin_dir)
  st.external = { endpoints = endpoints }
  local pkidir = st.nodes[1].root .. "/etc/kubernetes/pki"
  for file, text in pairs { ["etcd/ca.crt"] = client.ca, ["apiserver-etcd-client.crt"] = client.crt,
    ["apiserver-etcd-client.key"] = client.key } do
    write(pkidir .. "/" .. file, text, file:match("%.key$") and "0600" or "0644")
  end
  state.save(st.dir, st)
end

return M
