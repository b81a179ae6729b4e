-- The certificate authorities `certs rotate-ca` rotates: per CA its certlist row (the files
-- <base>.crt|key under certificatesDir), the leaves it signs on a control plane, the static Pods that
-- read them only at start (restarted one at a time after each stage), and where the API servers
-- publish it. One home of what a rotation touches per CA: a CA added here is one the flow rotates.
local certlist = require "pki.certlist"

local M = {}

M.list = {
  -- kube-apiserver reads --requestheader-client-ca-file and --proxy-client-cert-file again when they
  -- change (dynamiccertificates): nothing restarts. The apiservers publish the CA in
  -- kube-system/extension-apiserver-authentication, where aggregated API servers read it.
  { name = "front-proxy", row = "front-proxy-ca", leaves = { "front-proxy-client" }, restart = {},
    published = "requestheader-client-ca-file" },
  -- etcd reads --trusted-ca-file and --peer-trusted-ca-file at start, kube-apiserver its --etcd-* files:
  -- both restart after each stage, etcd only while the other members keep a quorum.
  { name = "etcd", row = "etcd-ca", leaves = { "etcd-server", "etcd-peer", "etcd-healthcheck-client",
    "apiserver-etcd-client" }, restart = { "etcd", "kube-apiserver" }, local_etcd = true },
}

M.by_name = {}
for _, c in ipairs(M.list) do
  c.base = certlist.by_name[c.row].base
  M.by_name[c.name] = c
end

-- The CA names of a --ca value ("all" or a comma list) | nil, message.
function M.parse(text)
  local names = {}
  for _, c in ipairs(M.list) do names[#names + 1] = c.name end
  local hint = ("name the CAs: --ca %s (a comma list), or all"):format(table.concat(names, ","))
  if not text or text == "" then return nil, "no CA named: " .. hint end
  local want = {}
  for word in text:gmatch("[^,%s]+") do
    if word == "all" then
      for _, c in ipairs(M.list) do want[c.name] = true end
    elseif M.by_name[word] then
      want[word] = true
    elseif word == "ca" then
      return nil, "--ca ca: this moonadm rotates the front-proxy and etcd CAs so far (the cluster CA is " ..
        "docs/rotate-ca.md's next step)"
    else
      return nil, ("--ca: unknown CA %q: %s"):format(word, hint)
    end
  end
  local out = {}
  for _, c in ipairs(M.list) do if want[c.name] then out[#out + 1] = c.name end end
  if #out == 0 then return nil, "no CA named: " .. hint end
  return out
end

-- The static Pods to restart after a stage of the CAs named (renewal.restart's order is kept there).
function M.restarts(names)
  local out, seen = {}, {}
  for _, n in ipairs(names) do
    for _, c in ipairs(M.by_name[n].restart) do
      if not seen[c] then out[#out + 1], seen[c] = c, true end
    end
  end
  return out
end

return M
