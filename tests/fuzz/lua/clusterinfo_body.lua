-- The whole answer of the anonymous cluster-info fetch, as join's token discovery reads it: the
-- HTTP body through kube.client (JSON decode, shape checks, the Status of an error answer), the
-- ConfigMap's signed kubeconfig and JWS (discovery.signed_content), the JWS check, the kubeconfig
-- YAML (discovery.cluster_of) and the CA pin check. Input: one byte for the HTTP status, the body.
local client = require "kube.client"
local discovery = require "cluster.discovery"
local pki = require "moonadm.pki"

local STATUSES = { 200, 200, 200, 403, 404, 500 }
local REF = { apiVersion = "v1", kind = "ConfigMap", namespace = "kube-public", name = "cluster-info" }
local c = assert(client.new { server = "https://127.0.0.1:9", timeout = 0, max_backoff = 0, sleep = function() end })
local answer = { status = 200, body = "", headers = {} }
c.conn = { request = function() return answer end, close = function() end }

return function(input)
  if #input < 1 then return end
  answer.status = STATUSES[input:byte(1) % #STATUSES + 1]
  answer.body = input:sub(2)
  local cm = c:get(REF)
  local content, jws = discovery.signed_content(cm, "jws-kubeconfig-abcdef")
  if not content then return end
  pki.jws_verify(content, "abcdef", "0123456789abcdef", jws)
  local ok, server, ca = pcall(discovery.cluster_of, content, "cluster-info")
  if not ok then
    if type(server) ~= "string" or server:match("attempt to") or server:match("bad argument") then error(server, 0) end
    return
  end
  discovery.pinned(ca, { "sha256:" .. ("0"):rep(64) })
end
