-- Subject alternative names as kubeadm computes them (GetAPIServerAltNames, getAltNames for etcd)
-- and de-duplicates them (RemoveDuplicateAltNames: DNS names sorted and unique, IPs unique by
-- their string form in first-seen order). IPs are written in Go's canonical form.
local net = require "config.net"
local log = require "framework.log"

local M = {}

-- Go's net.IP.String() of parsed bytes.
local function format_ip(fam, b)
  if fam == 4 then return ("%d.%d.%d.%d"):format(b[1], b[2], b[3], b[4]) end
  local w = {}
  for i = 1, 8 do w[i] = b[2 * i - 1] * 256 + b[2 * i] end
  -- the longest run of two or more zero groups (the first one on a tie) becomes "::"
  local best, blen, i = 0, 0, 1
  while i <= 8 do
    if w[i] == 0 then
      local j = i
      while j <= 8 and w[j] == 0 do j = j + 1 end
      if j - i > blen then best, blen = i, j - i end
      i = j
    else
      i = i + 1
    end
  end
  local parts = {}
  local function hex(k) return ("%x"):format(w[k]) end
  if blen >= 2 then
    local head, tail = {}, {}
    for k = 1, best - 1 do head[#head + 1] = hex(k) end
    for k = best + blen, 8 do tail[#tail + 1] = hex(k) end
    return table.concat(head, ":") .. "::" .. table.concat(tail, ":")
  end
  for k = 1, 8 do parts[k] = hex(k) end
  return table.concat(parts, ":")
end

-- The canonical text of an IP address | nil.
function M.canonical_ip(s)
  local fam, b = net.parse_ip(s)
  if not fam then return nil end
  return format_ip(fam, b)
end

-- The index-th address of a CIDR (GetIndexedIP): network address + index | nil, message.
function M.indexed_ip(cidr, index)
  local fam, b, bits = net.parse_cidr(cidr)
  if not fam then return nil, ("%q is not a valid CIDR"):format(tostring(cidr)) end
  local out = {}
  for i = 1, #b do
    local keep = math.max(0, math.min(8, bits - 8 * (i - 1)))
    out[i] = b[i] & ((0xff << (8 - keep)) & 0xff)
  end
  local carry = index
  for i = #out, 1, -1 do
    local v = out[i] + carry
    out[i], carry = v & 0xff, v >> 8
  end
  return format_ip(fam, out)
end

-- The first usable address of the first service CIDR (the `kubernetes` Service's ClusterIP).
function M.apiserver_virtual_ip(cluster)
  local subnet = (cluster.networking or {}).serviceSubnet or "10.96.0.0/12"
  local first = subnet:match("^%s*([^,]+)")
  local ip, err = M.indexed_ip(first and first:match("^(.-)%s*$") or "", 1)
  if not ip then error(("unable to get the first IP address from the given CIDR %s: %s"):format(subnet, err), 0) end
  return ip
end

-- Go's RemoveDuplicateAltNames.
function M.dedup(dns, ips)
  local seen, d = {}, {}
  for _, n in ipairs(dns) do
    if not seen[n] then seen[n] = true; d[#d + 1] = n end
  end
  table.sort(d)
  local seen_ip, i = {}, {}
  for _, ip in ipairs(ips) do
    local c = M.canonical_ip(ip) or ip
    if not seen_ip[c] then seen_ip[c] = true; i[#i + 1] = c end
  end
  return d, i
end

local function is_wildcard_subdomain(s)
  return type(s) == "string" and s:sub(1, 2) == "*." and net.is_dns_subdomain(s:sub(3))
end

-- appendSANsToAltNames: IPs, RFC 1123 subdomains and wildcard subdomains; others are skipped.
function M.append_extra(dns, ips, extra, certname)
  for _, san in ipairs(extra or {}) do
    if net.parse_ip(san) then
      ips[#ips + 1] = san
    elseif net.is_dns_subdomain(san) or is_wildcard_subdomain(san) then
      dns[#dns + 1] = san
    else
      log.warn("[certificates] '%s' was not added to the '%s' SAN, because it is not a valid IP or " ..
        "RFC-1123 compliant DNS entry", tostring(san), certname)
    end
  end
end

local function advertise_ip(addr)
  if not addr or not net.parse_ip(addr) then
    error(("error parsing LocalAPIEndpoint AdvertiseAddress %s: is not a valid textual representation of an IP address")
      :format(tostring(addr)), 0)
  end
  return addr
end

-- E: {cluster, node_name, advertise_address}. Returns dns, ips (de-duplicated).
function M.apiserver(E)
  local c = E.cluster
  local domain = (c.networking or {}).dnsDomain or "cluster.local"
  local dns = { E.node_name, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
    "kubernetes.default.svc." .. domain }
  local ips = { M.apiserver_virtual_ip(c), advertise_ip(E.advertise_address) }
  local cpe = c.controlPlaneEndpoint
  if cpe and cpe ~= "" then
    local host, err = net.split_host_port(cpe)
    if not host then
      error(("error parsing cluster controlPlaneEndpoint %q: %s"):format(cpe, err), 0)
    end
    if net.parse_ip(host) then ips[#ips + 1] = host else dns[#dns + 1] = host end
  end
  M.append_extra(dns, ips, (c.apiServer or {}).certSANs, "apiserver")
  return M.dedup(dns, ips)
end

local function etcd(E, field, certname)
  local dns = { E.node_name, "localhost" }
  local ips = { advertise_ip(E.advertise_address), "127.0.0.1", "::1" }
  local loc = (E.cluster.etcd or {})["local"]
  M.append_extra(dns, ips, loc and loc[field], certname)
  return M.dedup(dns, ips)
end

function M.etcd_server(E) return etcd(E, "serverCertSANs", "etcd/server") end
function M.etcd_peer(E) return etcd(E, "peerCertSANs", "etcd/peer") end

return M
