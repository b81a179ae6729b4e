-- Prints, as JSON, the etcd client URLs moonadm's endpoint discovery finds (KEP-2506: the etcd pods'
-- annotations), using this node's admin.conf. Run on a lab node: moonadm lab exec cp1 -- moonadm lua FILE
local cjson = require "cjson"
local client = require "kube.client"
local endpoints = require "etcd.endpoints"
local c = assert(client.from_kubeconfig("/etc/kubernetes/admin.conf"))
local urls, err = endpoints.endpoints_from_pods(c, { timeout = 20 })
if not urls then io.stderr:write(tostring(err), "\n") os.exit(1) end
table.sort(urls)
print(cjson.encode(urls))
