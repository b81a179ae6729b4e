-- Certificate renewal during `upgrade apply|node` (kubeadm's renewCertsByComponent): each
-- component's certificates are renewed with the local CA just before its manifest is replaced;
-- admin.conf and super-admin.conf once the control plane is upgraded. Same subject, usages and
-- CA, a new key and NotAfter = now + certificateValidityPeriod. The apiserver serving certificate
-- also gains the SANs the current ClusterConfiguration asks for (a certSAN added to kubeadm-config
-- reaches the certificate — kubeadm keeps the old SANs; see docs/upgrade.md).
local pki = require "moonadm.pki"
local log = require "framework.log"
local certlist = require "pki.certlist"
local expiration = require "pki.expiration"
local kubeconfig = require "pki.kubeconfigs"
local tree = require "pki.tree"
local altnames = require "pki.altnames"
local encoding = require "moonadm.encoding"
local yaml = require "moonadm.yaml"

local M = {}

-- kubeadm's lists per component.
function M.names(cluster, component)
  local local_etcd = not (cluster.etcd and cluster.etcd.external)
  if component == "etcd" then
    return local_etcd and { "etcd-server", "etcd-peer", "etcd-healthcheck-client" } or {}
  elseif component == "kube-apiserver" then
    local l = { "apiserver", "apiserver-kubelet-client", "front-proxy-client" }
    if local_etcd then l[#l + 1] = "apiserver-etcd-client" end
    return l
  elseif component == "kube-controller-manager" then return { "controller-manager.conf" }
  elseif component == "kube-scheduler" then return { "scheduler.conf" }
  elseif component == "admin" then return { "admin.conf", "super-admin.conf" } end
  return {}
end

local function union(list, extra)
  local seen, out = {}, {}
  for _, x in ipairs(list or {}) do if not seen[x] then seen[x] = true; out[#out + 1] = x end end
  for _, x in ipairs(extra or {}) do if not seen[x] then seen[x] = true; out[#out + 1] = x end end
  return out
end

-- Renews the named certificates; returns the list of names renewed. Missing files are skipped
-- (super-admin.conf exists only on the first control plane); an external CA is reported.
function M.renew(ctx, names, prefix)
  prefix = prefix or "[upgrade/staticpods]"
  local E = tree.env(ctx)
  local kdir = kubeconfig.dir and kubeconfig.dir(ctx) or "/etc/kubernetes"
  local rows = {}
  local all = expiration.rows(E, kdir)
  for _, name in ipairs(names) do
    for _, r in ipairs(all) do if r.name == name then rows[#rows + 1] = r end end
  end
  local done = {}
  for _, row in ipairs(rows) do
    local cert, kc = expiration.load(E, row)
    if not cert then
      log.v(1, "%s %s does not exist; not renewed", prefix, row.name)
    elseif expiration.external(E, row.ca) then
      log.info("%s External CA detected, %s certificate can't be renewed", prefix, row.name)
    else
      log.info("%s Renewing %s certificate", prefix, row.name)
      if ctx.dry_run then
        log.info("[dryrun] Would renew %s", row.path)
      else
        local info = cert:info()
        local dns, ips = info.dns, info.ips
        if row.name == "apiserver" then
          local want_dns, want_ips = altnames.apiserver(E)
          dns, ips = union(dns, want_dns), union(ips, want_ips)
        end
        local keys, kerr = pki.generate_keys { E.alg }
        if not keys then error("generating a private key: " .. kerr, 0) end
        local ca = tree.load_ca(E, certlist.by_name[row.ca])
        if ca.state ~= "ok" then error(("couldn't load the %s CA to renew %s"):format(row.ca, row.name), 0) end
        local spec = { cn = info.subject.cn, o = info.subject.o, dns = dns, ips = ips, ext_usages = info.ext_usages,
          not_before = E.start - 300, not_after = E.start + E.leaf_validity }
        local new, err = pki.sign_cert(keys[1], spec, ca.cert, ca.key)
        if not new then error(("failed to renew %s: %s"):format(row.name, err), 0) end
        if row.kind == "kubeconfig" then
          kc.user.user["client-certificate-data"] = encoding.base64_encode(assert(new:pem()))
          kc.user.user["client-key-data"] = encoding.base64_encode(assert(keys[1]:pem()))
          ctx:write(row.path, yaml.encode(kc.doc), "0600")
        else
          tree.write_pair(E, row.entry.base, keys[1], new)
        end
        done[#done + 1] = row.name
      end
    end
  end
  return done
end

return M
