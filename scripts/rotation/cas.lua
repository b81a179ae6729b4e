-- The certificate authorities `certs rotate-ca` rotates, each with the files a control plane holds
-- of it (certificatesDir-relative) and the leaves it signs there. One home of what a rotation
-- touches per CA: a CA added here is one the flow (scripts/flows/rotate-ca.lua) rotates.
local M = {}

-- front-proxy: kube-apiserver reads --requestheader-client-ca-file and --proxy-client-cert-file
-- again when they change (dynamiccertificates), so no component restarts; the apiservers publish
-- the CA in kube-system/extension-apiserver-authentication, where aggregated API servers read it.
M.list = {
  { name = "front-proxy", base = "front-proxy-ca", leaves = { "front-proxy-client" },
    published = "requestheader-client-ca-file" },
}

M.by_name = {}
for _, c in ipairs(M.list) do M.by_name[c.name] = c end

-- The CA names of a --ca value ("all" or a comma list) | nil, message.
function M.parse(text)
  if not text or text == "" then return nil, "no CA named: --ca front-proxy (or all)" end
  local out, seen = {}, {}
  for word in text:gmatch("[^,%s]+") do
    if word == "all" then
      for _, c in ipairs(M.list) do if not seen[c.name] then out[#out + 1], seen[c.name] = c.name, true end end
    elseif M.by_name[word] then
      if not seen[word] then out[#out + 1], seen[word] = word, true end
    elseif word == "ca" or word == "etcd" then
      return nil, ("--ca %s: this moonadm rotates the front-proxy CA only so far (the cluster and etcd CAs " ..
        "are docs/rotate-ca.md's next steps)"):format(word)
    else
      local names = {}
      for _, c in ipairs(M.list) do names[#names + 1] = c.name end
      return nil, ("--ca: unknown CA %q: one of %s, or all"):format(word, table.concat(names, ", "))
    end
  end
  if #out == 0 then return nil, "no CA named: --ca front-proxy (or all)" end
  return out
end

return M
