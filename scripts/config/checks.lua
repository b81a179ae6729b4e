-- Value checks named by schema.lua. Each takes a value (already of the right base type) and
-- returns the value to keep (possibly normalized) and an optional warning, or nil and why
-- the value is refused.
local net <const> = require "config.net"
local duration <const> = require "config.duration"
local gates <const> = require "config.gates"

local checks = {}
local fmt <const> = string.format

local function enum(values)
  local set, quoted = {}, {}
  for _, v in ipairs(values) do set[v] = true; quoted[#quoted + 1] = fmt("%q", v) end
  local supported = table.concat(quoted, ", ")
  return function(v)
    if set[v] then return v end
    return nil, fmt("unsupported value %q: supported values: %s", v, supported)
  end
end

function checks.duration(v)
  local ns = duration.parse(v)
  if not ns then return nil, fmt("%q is not a valid duration (e.g. \"24h0m0s\", \"4m\", \"90s\")", v) end
  if ns < 0 then return nil, fmt("%q must not be negative", v) end
  return duration.format(ns)
end

-- One CIDR, or two of different families (dual-stack), comma-separated.
function checks.cidrs(v)
  local fams, n = {}, 0
  for part in (v .. ","):gmatch("([^,]*),") do
    n = n + 1
    local fam, _, bits = net.parse_cidr(part)
    if not fam then return nil, fmt("%q is not a valid CIDR", part) end
    fams[n] = { fam = fam, bits = bits, text = part }
  end
  if n > 2 then return nil, fmt("%q: at most two CIDRs (one IPv4, one IPv6) may be given", v) end
  if n == 2 and fams[1].fam == fams[2].fam then
    return nil, fmt("%q: a dual-stack pair must be one IPv4 and one IPv6 CIDR", v)
  end
  return v, nil, fams
end

function checks.service_cidrs(v)
  local ok, err, fams = checks.cidrs(v)
  if not ok then return nil, err end
  for _, f in ipairs(fams) do
    local min = f.fam == 4 and 12 or 108
    if f.bits < min then
      return nil, fmt("%q: the service subnet is too large; for %d-bit addresses the mask must be >= %d",
        f.text, f.fam == 4 and 32 or 128, min)
    end
  end
  return v
end

function checks.advertise_ip(v)
  local class = net.classify(v)
  if not class then return nil, fmt("%q is not a valid IP address", v) end
  if class ~= "global-unicast" and class ~= "loopback" then
    return nil, fmt("cannot use %q as the advertise address of the API server (%s address)", v, class)
  end
  return v
end

function checks.port(v)
  if v < 1 or v > 65535 then return nil, fmt("%d is not a valid port number (1-65535)", v) end
  return v
end

function checks.endpoint(v)
  local host, why = net.split_host_port(v)
  if not host then return nil, fmt("%q is not a valid endpoint (host or host:port): %s", v, why) end
  return v
end

function checks.endpoint_with_port(v)
  local host, port = net.split_host_port(v)
  if not host then return nil, fmt("%q is not a valid host:port: %s", v, port) end
  if not port then return nil, fmt("%q is not a valid host:port: missing port number", v) end
  return v
end

function checks.dns_domain(v)
  if net.is_dns_subdomain(v) then return v end
  return nil, fmt("%q is not a valid DNS domain (a lowercase RFC 1123 subdomain)", v)
end

function checks.node_name(v)
  if net.is_dns_subdomain(v) then return v end
  return nil, fmt("%q is not a valid node name (a lowercase RFC 1123 subdomain)", v)
end

function checks.cri_socket(v)
  if v:sub(1, 1) == "/" then
    return "unix://" .. v, fmt("usage of CRI endpoints without URL scheme is deprecated; "
      .. "using %q", "unix://" .. v)
  end
  local scheme, rest = v:match("^(%a[%w+.-]*)://(.*)$")
  if not scheme then return nil, fmt("%q is not a valid CRI endpoint (expected unix:///path/to/socket)", v) end
  if scheme ~= "unix" then return nil, fmt("%q: URL scheme %q is not supported", v, scheme) end
  if rest:sub(1, 1) ~= "/" then return nil, fmt("%q: the socket path must be absolute", v) end
  return v
end

local TOKEN <const> = "^" .. ("[a-z0-9]"):rep(6) .. "%." .. ("[a-z0-9]"):rep(16) .. "$"
function checks.token(v)
  if v:match(TOKEN) then return v end
  return nil, fmt("%q is not a valid bootstrap token (expected the format [a-z0-9]{6}.[a-z0-9]{16})", v)
end

checks.token_usage = enum { "signing", "authentication" }

function checks.token_group(v)
  local rest = v:match("^system:bootstrappers:(.*)$")
  if rest and #rest <= 256 and rest:match("^[a-z0-9:-]*[a-z0-9]$") then return v end
  return nil, fmt("%q is not a valid bootstrap token group (must match "
    .. "system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9])", v)
end

function checks.timestamp(v)
  local rest = v:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d(.*)$")
  if rest and (rest:match("^%.?%d*Z$") or rest:match("^%.?%d*[+-]%d%d:%d%d$")) then return v end
  return nil, fmt("%q is not an RFC 3339 time (e.g. 2025-06-01T12:00:00Z)", v)
end

function checks.san(v)
  local s = v:lower() -- kubeadm lowercases SANs
  if net.parse_ip(s) or net.is_dns_subdomain(s) or
      (s:sub(1, 2) == "*." and net.is_dns_subdomain(s:sub(3))) then
    return s
  end
  return nil, fmt("%q is not a valid IP address, DNS name or wildcard DNS name", v)
end

function checks.abs_path(v)
  if v:sub(1, 1) == "/" then return v end
  return nil, fmt("%q is not an absolute path", v)
end

function checks.url(v)
  if v:match("^https?://[^/]+") then return v end
  return nil, fmt("%q is not a valid URL (expected http(s)://host:port)", v)
end

-- An exact version, "v" added as kubeadm does; labels would need a network look-up.
function checks.version(v)
  local core, extra = v:match("^v?(%d+%.%d+%.%d+)(.*)$")
  if core and (extra == "" or extra:match("^[-+][%w.+-]+$")) then return "v" .. core .. extra end
  if v:match("^stable") or v:match("^latest") or v:match("^ci/") or v:match("^release/") then
    return nil, fmt("%q is a version label; moonadm never looks versions up over the network: "
      .. "give an exact version such as v1.35.4", v)
  end
  return nil, fmt("%q is not a valid Kubernetes version (e.g. v1.35.4)", v)
end

function checks.ca_hash(v)
  local kind, hex = v:match("^([^:]*):([^:]*)$")
  if not kind then return nil, fmt("%q is not a valid CA certificate hash (expected sha256:<64 hex digits>)", v) end
  if kind:lower() ~= "sha256" then return nil, fmt("%q: unsupported hash type %q (only sha256)", v, kind) end
  if not hex:match("^" .. ("%x"):rep(64) .. "$") then
    return nil, fmt("%q: a sha256 hash is 64 hex digits", v)
  end
  return "sha256:" .. hex:lower()
end

function checks.certificate_key(v)
  if v:match("^" .. ("%x"):rep(64) .. "$") then return v end
  return nil, fmt("%q is not a valid certificate key (expected 64 hex digits: a 32-byte AES key)", v)
end

checks.pull_policy = enum { "Always", "IfNotPresent", "Never" }
checks.taint_effect = enum { "NoSchedule", "PreferNoSchedule", "NoExecute" }
checks.path_type = enum { "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
  "CharDevice", "BlockDevice" }
checks.encryption_algorithm = enum { "RSA-2048", "RSA-3072", "RSA-4096", "ECDSA-P256", "ECDSA-P384" }
checks.unmount_flag = enum { "MNT_FORCE", "MNT_DETACH", "MNT_EXPIRE", "UMOUNT_NOFOLLOW" }

-- A feature gate entry: the key is the gate name. Known to some minor here; validation checks it
-- against the cluster's own minor (gates.check).
function checks.feature_gate(v, name)
  local ok, msg = gates.check_any(name)
  if not ok then return nil, msg end
  return v
end

-- Compare "v1.2.3" versions (pre-release suffixes ignored): -1, 0, 1.
function checks.compare_versions(a, b)
  local pa = { a:match("^v?(%d+)%.(%d+)%.(%d+)") }
  local pb = { b:match("^v?(%d+)%.(%d+)%.(%d+)") }
  for i = 1, 3 do
    local x, y = tonumber(pa[i]) or 0, tonumber(pb[i]) or 0
    if x ~= y then return x < y and -1 or 1 end
  end
  return 0
end

return checks
