-- API answers as kube.client reads them (an API server, or a proxy or a machine in the middle of an
-- unverified connection): get, list (pages, items), a watch stream cut into chunks, the Status of
-- an error answer, and the scrubber the -v 8/9 logs pass bodies through. Input: one byte for the
-- HTTP status and one for the chunk size of the watch, then the body.
local client = require "kube.client"
local json = require "kube.json"

local STATUSES = { 200, 200, 201, 400, 403, 404, 409, 410, 422, 500 }
local c = assert(client.new { server = "https://127.0.0.1:9", timeout = 0, max_backoff = 0, sleep = function() end })
local answer, chunk = { status = 200, body = "", headers = {} }, 1
c.conn = {
  request = function(_, r)
    if r.on_data and answer.status < 300 then
      for i = 1, #answer.body, chunk do
        if r.on_data(answer.body:sub(i, i + chunk - 1)) == false then
          return { status = answer.status, body = "", headers = {}, stopped = true }
        end
      end
      return { status = answer.status, body = "", headers = {} }
    end
    return answer
  end,
  close = function() end,
}

local REF = { apiVersion = "v1", kind = "Secret", namespace = "kube-system" }

-- A broken invariant is a finding: libFuzzer reports an exiting target and keeps the input.
local function bug(msg)
  io.stderr:write("fuzz: api_answer: ", msg, "\n")
  os.exit(77)
end

local function all_masked(o)
  if type(o) == "table" and type(o.data) == "table" then
    for _, x in pairs(o.data) do if x ~= "<redacted>" then bug("Secret data survived the scrubber") end end
  end
end

return function(input)
  if #input < 2 then return end
  answer.status = STATUSES[input:byte(1) % #STATUSES + 1]
  chunk = input:byte(2) % 64 + 1
  answer.body = input:sub(3)
  local obj, err = c:get { apiVersion = "v1", kind = "Secret", namespace = "kube-system", name = "x" }
  if obj == nil and err == nil then bug("get returned neither an object nor an error") end
  if obj ~= nil and type(obj) ~= "table" then bug("get returned a " .. type(obj)) end
  if err then local _ = tostring(err) end
  local list, lerr = c:list(REF, { all = false })
  if list then
    if type(list.items) ~= "table" then bug("a list without items") end
  else
    local _ = tostring(lerr)
  end
  local n = 0
  local rv, werr = c:watch(REF, function(ev)
    if type(ev.object) ~= "table" or type(ev.type) ~= "string" then bug("an event of the wrong shape reached the handler") end
    n = n + 1
    return n < 100
  end, { timeout = 1 })
  if not rv and werr then local _ = tostring(werr) end
  local v = json.decode(answer.body)
  if type(v) == "table" then
    local sv = client.scrub(v)
    if v.kind == "Secret" then all_masked(sv) end
    if v.kind == "SecretList" and type(sv.items) == "table" then
      for _, it in pairs(sv.items) do
        if type(it) == "table" and (it.kind == nil or it.kind == "Secret") then all_masked(it) end
      end
    end
    pcall(json.encode, sv)
  end
end
