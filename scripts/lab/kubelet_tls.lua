-- The kubelet stand-in's identity and its API client (the methods of lab/node_api.lua's object that
-- hold them): kubelet.conf's client, with on a first control plane the client certificate taken from
-- its embedded data; TLS bootstrap from bootstrap-kubelet.conf (CSR with signer
-- kube-apiserver-client-kubelet, wait for the real controller-manager to approve and sign, write the
-- client cert and kubelet.conf); and the client certificate's rotation.
local client_mod = require "kube.client"
local core = require "moonadm.core"
local encoding = require "moonadm.encoding"
local fs = require "moonadm.fs"
local kubeconfig = require "kube.kubeconfig"
local pki = require "moonadm.pki"
local yaml = require "moonadm.yaml"

local M = {}

M.KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
M.BOOTSTRAP_CONF = "/etc/kubernetes/bootstrap-kubelet.conf"
M.CLIENT_PEM = "/var/lib/kubelet/pki/kubelet-client-current.pem"
local KUBELET_CONF <const>, BOOTSTRAP_CONF <const>, CLIENT_PEM <const> = M.KUBELET_CONF, M.BOOTSTRAP_CONF, M.CLIENT_PEM

local function log(fmt, ...)
  io.stdout:write(os.date("!%Y-%m-%dT%H:%M:%SZ "), core.redact(fmt:format(...)), "\n")
  io.stdout:flush()
end

local function read_root(path) return fs.read(path) end

-- A client certificate's pair (certificate and key, one PEM) in the kubelet's cert dir: a dated file
-- and kubelet-client-current.pem, as a kubelet keeps them.
local function store_pair(pem)
  fs.write(("/var/lib/kubelet/pki/kubelet-client-%s.pem"):format(os.date("!%Y-%m-%d-%H-%M-%S")), pem, "0600")
  fs.write(CLIENT_PEM, pem, "0600")
end

-- A new key and a CSR for the node's client certificate, created through client c
-- → {name = the CSR's, key_pem = the key's} | nil, err.
local function request_cert(c, node)
  local key = assert(pki.generate_key("ECDSA-P256"))
  local csr = assert(pki.create_csr(key, { cn = "system:node:" .. node, o = { "system:nodes" } }))
  local obj, err = c:create {
    apiVersion = "certificates.k8s.io/v1", kind = "CertificateSigningRequest", metadata = { generateName = "csr-" },
    spec = { request = encoding.base64_encode(csr), signerName = "kubernetes.io/kube-apiserver-client-kubelet",
      usages = { "digital signature", "client auth" } } }
  if not obj then return nil, err end
  return { name = obj.metadata.name, key_pem = key:pem() }
end

-- First start of a control plane's kubelet: kubelet.conf carries an embedded client certificate;
-- a kubelet writes it to its cert dir so that kubelet-finalize can point kubelet.conf at it.
function M.client_pem_from_kubelet_conf(_, text)
  if fs.exists(CLIENT_PEM) then return end
  local docs = yaml.decode(text, KUBELET_CONF)
  local kc = docs and docs[1]
  for _, u in ipairs(kc and kc.users or {}) do
    local cert = u.user and u.user["client-certificate-data"]
    local key = u.user and u.user["client-key-data"]
    if cert and key then
      fs.mkdir("/var/lib/kubelet/pki", "0755")
      store_pair(encoding.base64_decode(cert) .. encoding.base64_decode(key))
      log("wrote %s from the embedded client certificate of kubelet.conf", CLIENT_PEM)
      return
    end
  end
end

-- The node's client from kubelet.conf (self.client, self.client_conf: the file it was made from),
-- or a step of TLS bootstrap while there is only bootstrap-kubelet.conf.
function M.connect(self)
  local text = fs.read(KUBELET_CONF)
  if text then
    self:client_pem_from_kubelet_conf(text)
    local opts, err = kubeconfig.parse(text, { filename = KUBELET_CONF, read = read_root })
    if not opts then return self:note("kubelet.conf", err) end
    opts.timeout, opts.request_timeout, opts.connect_timeout, opts.no_retry = 3, 3, 2, true -- see node_api's tick
    local c, cerr = client_mod.new(opts)
    if not c then return self:note("client", cerr) end
    self.client, self.client_conf = c, text
    log("talking to %s as system:node:%s", opts.server, self.node)
    return
  end
  if fs.exists(BOOTSTRAP_CONF) then self:bootstrap() end
end

-- The kubelet.conf TLS bootstrap writes: the server and CA of bootstrap b, the rotating client pair.
local function bootstrapped_conf(b)
  return {
    apiVersion = "v1", kind = "Config",
    clusters = { { name = "default-cluster", cluster = { server = b.server,
      ["certificate-authority-data"] = encoding.base64_encode(b.ca_pem) } } },
    contexts = { { name = "default-context", context = { cluster = "default-cluster", user = "default-auth",
      namespace = "default" } } },
    ["current-context"] = "default-context",
    users = { { name = "default-auth", user = { ["client-certificate"] = CLIENT_PEM, ["client-key"] = CLIENT_PEM } } },
  }
end

-- TLS bootstrap, as a kubelet with --bootstrap-kubeconfig does it: one step per call (self.boot the
-- CSR in flight).
function M.bootstrap(self)
  local text = fs.read(BOOTSTRAP_CONF)
  local opts, err = kubeconfig.parse(text or "", { filename = BOOTSTRAP_CONF, read = read_root })
  if not opts then return self:note("bootstrap-kubelet.conf", err) end
  opts.timeout, opts.request_timeout, opts.connect_timeout, opts.no_retry = 3, 3, 2, true -- see node_api's tick
  local c, cerr = client_mod.new(opts)
  if not c then return self:note("bootstrap client", cerr) end
  local b = self.boot
  if not b then
    local oerr
    b, oerr = request_cert(c, self.node)
    if not b then c:close() return self:note("bootstrap CSR", oerr) end
    b.server, b.ca_pem = opts.server, opts.ca_pem
    self.boot = b
    log("TLS bootstrap: created CertificateSigningRequest %s; waiting for approval and signing", b.name)
  end
  local obj, gerr = c:get { apiVersion = "certificates.k8s.io/v1", kind = "CertificateSigningRequest", name = b.name }
  c:close()
  if not obj then return self:note("bootstrap CSR", gerr) end
  for _, cond in ipairs(obj.status and obj.status.conditions or {}) do
    if cond.type == "Denied" or cond.type == "Failed" then
      self.boot = nil
      return self:note("bootstrap CSR", ("CSR %s %s: %s"):format(b.name, cond.type, cond.message or ""))
    end
  end
  local cert = obj.status and obj.status.certificate
  if not cert or cert == "" then return end
  fs.mkdir("/var/lib/kubelet/pki", "0755")
  store_pair(encoding.base64_decode(cert) .. b.key_pem)
  fs.write(KUBELET_CONF, yaml.encode(bootstrapped_conf(b)), "0600")
  fs.remove(BOOTSTRAP_CONF)
  self.boot = nil
  log("TLS bootstrap done: wrote %s and %s, removed %s", CLIENT_PEM, KUBELET_CONF, BOOTSTRAP_CONF)
end

-- Client certificate rotation, as a kubelet with rotateCertificates does: past 80% of the
-- certificate's lifetime (a kubelet picks 70-90%), or when asked (SIGUSR1 to the stand-in), a new
-- key and a CSR signed with the node's current identity (auto-approved through
-- kubeadm:node-autoapprove-certificate-rotation); the new pair replaces kubelet-client-current.pem.
function M.rotate(self, force)
  local pem = fs.read(CLIENT_PEM)
  if not pem then return end
  local cert = pki.read_cert(pem)
  if not cert then return end
  local info = cert:info()
  local life = info.not_after - info.not_before
  if not force and os.time() < info.not_before + 0.8 * life then return end
  local r = self.rotation
  if not r then
    local err
    r, err = request_cert(self.client, self.node)
    if not r then return self:note("certificate rotation", err) end
    self.rotation = r
    log("certificate rotation: created CertificateSigningRequest %s", r.name)
  end
  local obj, err = self.client:get { apiVersion = "certificates.k8s.io/v1", kind = "CertificateSigningRequest", name = r.name }
  if not obj then return self:note("certificate rotation", err) end
  local signed = obj.status and obj.status.certificate
  if not signed or signed == "" then return end
  store_pair(encoding.base64_decode(signed) .. r.key_pem)
  self.rotation, self.rotate_now = nil, false
  log("certificate rotation done: %s renewed (CSR %s)", CLIENT_PEM, r.name)
  -- reconnect with the new certificate when kubelet.conf points at the rotating file
  if (self.client_conf or ""):find(CLIENT_PEM, 1, true) then
    self.client:close()
    self.client, self.client_conf = nil, nil
  end
end

return M
