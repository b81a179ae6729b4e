-- Issue 18 (the wrong-shape class, API side): a list answer without `items` read as an empty list,
-- and an empty 200 to a GET as the object `true`. kube.client now fails both with a BadResponse
-- naming the path; a watch event without a type or an object is an error too. (A transport double stands in
-- for the server: what matters is the answer's shape.)
local client = require "kube.client"

describe("regress 024: API answers of the wrong shape", function()
  local function with_body(body)
    local c = assert(client.new { server = "https://127.0.0.1:9", timeout = 1 })
    c.conn = { request = function() return { status = 200, body = body, headers = {} } end,
               close = function() end, server = function() return "https://127.0.0.1:9" end }
    return c
  end
  for _, body in ipairs { '{"kind":"SecretList","apiVersion":"v1","metadata":{}}', '{"kind":"SecretList","items":{"a":1}}',
      '{"kind":"SecretList","items":"x"}', "", "null", "[]", '"x"', "7" } do
    it("a list answered " .. (body == "" and "(empty)" or body) .. " is an error, not an empty list", function()
      local list, err = with_body(body):list { apiVersion = "v1", kind = "Secret", namespace = "kube-system" }
      assert.is_nil(list)
      assert.equal("BadResponse", err.reason)
      assert.matches("/api/v1/namespaces/kube%-system/secrets", tostring(err))
    end)
  end
  for _, body in ipairs { "", "null", "7", '"x"' } do
    it("a get answered " .. (body == "" and "(empty)" or body) .. " is an error", function()
      local obj, err = with_body(body):get { apiVersion = "v1", kind = "ConfigMap", namespace = "kube-public", name = "cluster-info" }
      assert.is_nil(obj)
      assert.equal("BadResponse", err.reason)
    end)
  end
  for _, event in ipairs { '{"type":"ADDED"}', '{"object":{"metadata":{"name":"a"}}}' } do
    it("a watch event without a type or an object is an error: " .. event, function()
      local c = assert(client.new { server = "https://127.0.0.1:9", timeout = 1 })
      c.conn = { request = function(_, r)
        r.on_data(event .. "\n")
        return { status = 200, body = "", headers = {}, stopped = true }
      end, close = function() end }
      local rv, err = c:watch({ apiVersion = "v1", kind = "ConfigMap", namespace = "x" }, function() return true end)
      assert.is_nil(rv)
      assert.equal("BadResponse", err.reason)
    end)
  end
end)
