-- Address syntax as Go's net package and apimachinery's validators accept it.
local net = {}

local function parse_ipv4(s)
  local parts = {}
  for p in (s .. "."):gmatch("([^.]*)%.") do parts[#parts + 1] = p end
  if #parts ~= 4 then return nil end
  local bytes = {}
  for i, p in ipairs(parts) do
    -- Go (>= 1.17) rejects empty parts, leading zeros and values over 255
    if not p:match("^%d%d?%d?$") or (#p > 1 and p:sub(1, 1) == "0") then return nil end
    local n = tonumber(p)
    if n > 255 then return nil end
    bytes[i] = n
  end
  return bytes
end

local function parse_ipv6(s)
  if s:find("%%") then return nil end -- zones are not addresses
  local head, tail = s, nil
  local dc = s:find("::", 1, true)
  if dc then
    head, tail = s:sub(1, dc - 1), s:sub(dc + 2)
    if tail:find("::", 1, true) then return nil end
  end
  local function groups(part)
    local out = {}
    if part == "" then return out end
    local items = {}
    for g in (part .. ":"):gmatch("([^:]*):") do items[#items + 1] = g end
    for i, g in ipairs(items) do
      if i == #items and g:find(".", 1, true) then
        local v4 = parse_ipv4(g)
        if not v4 then return nil end
        out[#out + 1] = v4[1] * 256 + v4[2]
        out[#out + 1] = v4[3] * 256 + v4[4]
      elseif g:match("^%x%x?%x?%x?$") then
        out[#out + 1] = tonumber(g, 16)
      else
        return nil
      end
    end
    return out
  end
  local h, t = groups(head), groups(tail or "")
  if not h or not t then return nil end
  local n = #h + #t
  if dc then
    if n > 7 then return nil end
  elseif n ~= 8 then
    return nil
  end
  local words = {}
  for _, w in ipairs(h) do words[#words + 1] = w end
  for _ = 1, 8 - n do words[#words + 1] = 0 end
  for _, w in ipairs(t) do words[#words + 1] = w end
  local bytes = {}
  for _, w in ipairs(words) do bytes[#bytes + 1] = w // 256; bytes[#bytes + 1] = w % 256 end
  return bytes
end

-- Parse an IP address: returns family (4 or 6) and its bytes, or nil.
function net.parse_ip(s)
  if type(s) ~= "string" then return nil end
  if s:find(":", 1, true) then
    local b = parse_ipv6(s)
    if not b then return nil end
    -- an IPv4-mapped IPv6 address is IPv4 for Go
    local mapped = true
    for i = 1, 10 do if b[i] ~= 0 then mapped = false end end
    if mapped and b[11] == 255 and b[12] == 255 then return 4, { b[13], b[14], b[15], b[16] } end
    return 6, b
  end
  local b = parse_ipv4(s)
  return b and 4, b
end

-- Parse "ip/prefix": family, bytes, prefix length; or nil.
function net.parse_cidr(s)
  if type(s) ~= "string" then return nil end
  local ip, bits = s:match("^([^/]+)/(%d%d?%d?)$")
  if not ip then return nil end
  local fam, bytes = net.parse_ip(ip)
  if not fam then return nil end
  bits = tonumber(bits)
  if bits > (fam == 4 and 32 or 128) then return nil end
  return fam, bytes, bits
end

-- Go's IP.IsGlobalUnicast, and loopback, for the API server advertise address.
function net.classify(s)
  local fam, b = net.parse_ip(s)
  if not fam then return nil end
  local zero = true
  for _, v in ipairs(b) do if v ~= 0 then zero = false end end
  if zero then return "unspecified" end
  if fam == 4 then
    if b[1] == 127 then return "loopback" end
    if b[1] >= 224 and b[1] <= 239 then return "multicast" end
    if b[1] == 169 and b[2] == 254 then return "link-local" end
    if b[1] == 255 and b[2] == 255 and b[3] == 255 and b[4] == 255 then return "broadcast" end
  else
    local loop = b[16] == 1
    for i = 1, 15 do if b[i] ~= 0 then loop = false end end
    if loop then return "loopback" end
    if b[1] == 0xff then return "multicast" end
    if b[1] == 0xfe and b[2] & 0xc0 == 0x80 then return "link-local" end
  end
  return "global-unicast"
end

-- RFC 1123 subdomain (apimachinery IsDNS1123Subdomain): lowercase labels joined by dots.
function net.is_dns_subdomain(s)
  if type(s) ~= "string" or #s == 0 or #s > 253 then return false end
  for label in (s .. "."):gmatch("([^.]*)%.") do
    if #label == 0 or #label > 63 or not label:match("^[a-z0-9][-a-z0-9]*$")
        or not label:match("[a-z0-9]$") then
      return false
    end
  end
  return true
end

-- "host", "host:port" or "[v6]:port": host, port (number or nil); or nil, reason.
function net.split_host_port(s)
  if type(s) ~= "string" or s == "" then return nil, "empty" end
  local host, port = s:match("^%[([^%]]+)%]:(%d+)$")
  if not host then
    if s:match("^%[[^%]]+%]$") then
      host = s:sub(2, -2)
    elseif select(2, s:gsub(":", "")) > 1 then
      host = s -- a bare IPv6 address
    else
      host, port = s:match("^([^:]+):(%d*)$")
      if not host then host = s end
      if port == "" then return nil, "missing port number" end
    end
  end
  if not (net.parse_ip(host) or net.is_dns_subdomain(host)) then
    return nil, "not a valid IP address or DNS name"
  end
  if port then
    port = tonumber(port)
    if port < 1 or port > 65535 then return nil, "port out of range 1-65535" end
  end
  return host, port
end

-- host:port as Go's net.JoinHostPort writes it: an IPv6 address in brackets. The one home of this
-- text (and of the URLs below): every manifest, kubeconfig, probe and etcd URL is made here.
function net.join_host_port(host, port)
  if host:find(":", 1, true) then return ("[%s]:%s"):format(host, port) end
  return ("%s:%s"):format(host, port)
end

-- scheme://host:port, IPv6 in brackets.
function net.url(scheme, host, port) return ("%s://%s"):format(scheme, net.join_host_port(host, port)) end

-- A local etcd member's URLs, as kubeadm writes them (etcdutil.GetPeerURL / GetClientURL).
net.ETCD_CLIENT_PORT, net.ETCD_PEER_PORT = 2379, 2380
function net.etcd_peer_url(host) return net.url("https", host, net.ETCD_PEER_PORT) end
function net.etcd_client_url(host) return net.url("https", host, net.ETCD_CLIENT_PORT) end

-- The host of a URL ("https://[fd00::1]:2380" -> "fd00::1"), or nil.
function net.url_host(url)
  return url:match("^%a[%w+.-]*://%[([^%]]+)%]") or url:match("^%a[%w+.-]*://([^:/,%[]+)")
end

return net
