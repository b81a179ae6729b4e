-- Issue 18 #2: the anonymous cluster-info fetch of token discovery read a body of any size (a 2 GB
-- answer took `join` to 2.1 GB RSS; no token needed to send it). Now the fetch stops at
-- discovery.MAX_BODY (1 MiB) with an error naming the URL and the cap, at once (no 5-minute wait),
-- and this process's peak RSS stays within a few MiB of where it was. The server: `openssl
-- s_server` on 127.0.0.1 relaying an endless JSON string (yes | tr) after a 200 header.
local h = require "helpers"
local net = require "moonadm.net"
local core = require "moonadm.core"
local discovery = require "cluster.discovery"

local function vm_hwm_kb()
  for line in io.lines("/proc/self/status") do
    local kb = line:match("^VmHWM:%s+(%d+)")
    if kb then return tonumber(kb) end
  end
end

describe("regress 020: an endless cluster-info body", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmrf(dir) end)

  local function serve(head)
    assert(os.execute(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s/k.pem " ..
      "-out %s/c.pem -subj /CN=x -days 1 >/dev/null 2>&1"):format(h.q(dir), h.q(dir))))
    local l = assert(net.listen("127.0.0.1", 0))
    local port = l:port()
    l:close()
    local A = ("A"):rep(100)
    os.execute(("{ printf %s; yes %s | tr -d '\\n'; } 2>/dev/null | timeout 60 openssl s_server -quiet -accept 127.0.0.1:%d " ..
      "-cert %s/c.pem -key %s/k.pem -naccept 1 >/dev/null 2>&1 &"):format(h.q(head), A, port, h.q(dir), h.q(dir)))
    for _ = 1, 50 do -- until it listens
      if net.port_free("127.0.0.1", port) == false then break end
      core.sleep(0.1)
    end
    return port
  end

  for _, case in ipairs {
    { "streamed without a length", 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"data":{"kubeconfig":"' },
    { "announced as 2 GB", 'HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\n\r\n{"data":{"kubeconfig":"' },
  } do
    it("is refused at the 1 MiB cap, naming the URL, with bounded memory: " .. case[1], function()
      local port = serve(case[2])
      local before = vm_hwm_kb()
      local t0 = core.monotonic()
      local ok, err = pcall(discovery.token, {}, { bootstrapToken = { token = "abcdef.0123456789abcdef",
        apiServerEndpoint = "127.0.0.1:" .. port, unsafeSkipCAVerification = true } }, 300)
      assert.is_false(ok)
      assert.matches("refusing the cluster-info answer of https://127.0.0.1:" .. port, err, 1, true)
      assert.matches("/api/v1/namespaces/kube-public/configmaps/cluster-info", err, 1, true)
      assert.matches("larger than the limit of 1048576 bytes", err, 1, true)
      assert.is_true(core.monotonic() - t0 < 60, "it waited for more") -- not the 300 s discovery timeout
      local grown = vm_hwm_kb() - before
      assert.is_true(grown < 32 * 1024, ("peak RSS grew by %d KiB"):format(grown))
    end)
  end
end)
