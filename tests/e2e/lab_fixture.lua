-- Shared lab fixtures for the e2e specs: one 1-node lab and one HA lab per test run, started on
-- first use and reused by every spec that only reads. tests/busted.sh takes them down at the end
-- with every other lab the run brought up (also on failure or interruption); `lab up` itself
-- cleans a stale lab left by a killed run. Also what several e2e specs read: a lab's state, a node.
local cjson = require "cjson"
local h = require "helpers"

local M = {}

M.LABS = {
  one = { name = "e2e1", subnet = "10.252.1", args = {} },
  ha = { name = "e2eha", subnet = "10.252.2", args = { "--control-planes", "3", "--workers", "2", "--spares", "1" } },
}

M.bin_dir = os.getenv("MOONADM_LAB_BIN") or (h.top .. "/.lab/bin")

local function dir_of(lab) return h.top .. "/.lab/" .. lab.name end

-- The state of the lab named name (its .lab/NAME/lab.json), or nil when it has none.
function M.state(name)
  local text = h.read(h.top .. "/.lab/" .. name .. "/lab.json")
  return text and cjson.decode(text)
end

local function is_up(lab)
  local st = M.state(lab.name)
  return st ~= nil and st.ready == true and st
end

-- The node of a lab's state by name; raises when the lab has none of that name.
function M.node(st, name)
  for _, n in ipairs(st.nodes) do if n.name == name then return n end end
  error("lab " .. tostring(st.name) .. " has no node " .. tostring(name), 2)
end

-- The paths init, join and reset write under a node's root (etc/kubernetes, var/lib/kubelet,
-- var/lib/etcd), one a line, sorted: equal before and after, nothing was added or removed.
function M.node_files(root)
  local p = io.popen("cd " .. h.q(root) .. " && find etc/kubernetes var/lib/kubelet var/lib/etcd 2>/dev/null | sort")
  local s = p:read("a")
  p:close()
  return s
end

-- Returns the lab's state (lab.json), starting it if this run has not yet.
function M.get(which)
  local lab = assert(M.LABS[which], "no lab fixture " .. tostring(which))
  local st = is_up(lab)
  if st and os.getenv("MOONADM_E2E_RUN") and st.run_id == os.getenv("MOONADM_E2E_RUN") then return st end
  local args = { "lab", "up", "--name", lab.name, "--subnet", lab.subnet }
  for _, a in ipairs(lab.args) do args[#args + 1] = a end
  local code, out, err = h.moonadm(args)
  assert(code == 0, ("lab %s did not come up (exit %d):\n%s\n%s"):format(lab.name, code, out, err))
  st = assert(is_up(lab), "lab " .. lab.name .. " says up but lab.json is not ready")
  -- tag the state with this run, so a later run does not reuse a lab whose processes are gone
  st.run_id = os.getenv("MOONADM_E2E_RUN")
  local f = assert(io.open(dir_of(lab) .. "/lab.json", "w"))
  f:write(cjson.encode(st))
  f:close()
  return st
end

function M.kubectl(st, args, kubeconfig)
  local argv = { M.bin_dir .. "/kubectl", "--kubeconfig", kubeconfig or (st.dir .. "/super-admin.conf") }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local parts = {}
  for _, a in ipairs(argv) do parts[#parts + 1] = h.q(a) end
  return h.sh(table.concat(parts, " "))
end

-- kubectl ARGS (which ask for -o json) on the lab, decoded; raises with kubectl's words on failure.
function M.kjson(st, args)
  local rc, out = M.kubectl(st, args)
  if rc ~= 0 then error(("kubectl %s failed (exit %s): %s"):format(table.concat(args, " "), tostring(rc), out), 2) end
  return cjson.decode(out)
end

-- What a stand-in node's static pods run (the kubelet's children), as the .lab/bin/images/<image>:<tag>
-- each manifest's image named, sorted.
function M.running_images(st, node)
  local kubelet
  for _, n in ipairs(st.nodes) do if n.name == node then kubelet = math.tointeger(n.kubelet_pid) end end
  assert(kubelet, "no stand-in kubelet on lab node " .. node)
  local p = io.popen("ps -eo ppid=,args= 2>/dev/null")
  local out = {}
  for line in p:lines() do
    local ppid, img = line:match("^%s*(%d+)%s+%S*/%.lab/bin/images/(%S+)")
    if img and tonumber(ppid) == kubelet then out[#out + 1] = img end
  end
  p:close()
  table.sort(out)
  return out
end

-- Polls the API server's /readyz every 0.25 s (through the load balancer of an HA lab: the lab's
-- super-admin.conf names the control-plane endpoint) in the background; the function returned
-- stops it and returns the successful and the failed polls.
function M.readyz_poller(st)
  local dir = h.tmpdir()
  os.execute(([[(while [ ! -e %s/stop ]; do %s --kubeconfig %s --request-timeout=2s get --raw /readyz >/dev/null 2>&1 && echo ok || echo fail; sleep 0.25; done) > %s/polls 2>&1 &]])
    :format(h.q(dir), h.q(M.bin_dir .. "/kubectl"), h.q(st.dir .. "/super-admin.conf"), h.q(dir)))
  return function()
    os.execute("sleep 1; touch " .. h.q(dir .. "/stop") .. "; sleep 3")
    local polls = h.read(dir .. "/polls") or ""
    h.rmrf(dir)
    return select(2, polls:gsub("ok\n", "")), select(2, polls:gsub("fail\n", ""))
  end
end

-- Runs moonadm's `lab exec NODE -- argv...` on a lab node.
function M.exec(st, node, argv)
  local args = { "lab", "exec", node, "--name", st.name, "--" }
  for _, a in ipairs(argv) do args[#args + 1] = a end
  return h.moonadm(args)
end

-- crictl on a real-kubelet lab node, dialling its containerd, never its /etc/crictl.yaml: as exec.
M.CRICTL = { "crictl", "--config", "/dev/null", "--runtime-endpoint", "unix:///run/containerd/containerd.sock" }
function M.crictl(st, node, args)
  local argv = {}
  for _, a in ipairs(M.CRICTL) do argv[#argv + 1] = a end
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  return M.exec(st, node, argv)
end

-- Polls fn (→ ok, why) every interval seconds (default 1) until ok; after timeout seconds raises
-- an error naming what was awaited and fn's last why.
function M.wait_for(what, timeout, fn, interval)
  local deadline = os.time() + timeout
  local last
  repeat
    local ok, why = fn()
    if ok then return end
    last = why
    os.execute("sleep " .. (interval or 1))
  until os.time() > deadline
  error(("timed out after %ds waiting for %s: %s"):format(timeout, what, tostring(last)))
end

-- Waits until the node's static pods run exactly the images want names (sorted, as running_images
-- gives them): a component that lost its lease while the apiserver was down exits, and the stand-in
-- restarts it after a back-off, so one look right after a restart may miss it.
function M.wait_images(st, node, want, timeout)
  local text = table.concat(want, " ")
  M.wait_for(node .. " to run " .. text, timeout or 60, function()
    local got = table.concat(M.running_images(st, node), " ")
    return got == text, got
  end)
end

-- As exec, with stdout and stderr as one text and the seconds it took: code, text, seconds.
function M.run_on(st, node, argv)
  local t0 = os.time()
  local code, out, err = M.exec(st, node, argv)
  return code, out .. err, os.time() - t0
end

-- etcdctl on a lab node against its own member, with the node's healthcheck client: code, text.
M.ETCDCTL = { "etcdctl", "--endpoints", "https://127.0.0.1:2379", "--cacert", "/etc/kubernetes/pki/etcd/ca.crt",
  "--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt", "--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key",
  "--command-timeout", "5s" }
function M.etcdctl(st, node, args)
  local argv = table.move(M.ETCDCTL, 1, #M.ETCDCTL, 1, {})
  table.move(args, 1, #args, #argv + 1, argv)
  return M.run_on(st, node, argv)
end

-- The names of the voting etcd members, as the node's member lists them (sorted); raises on failure.
function M.etcd_voting(st, node)
  local code, out = M.etcdctl(st, node, { "member", "list", "-w", "json" })
  assert(code == 0, out)
  local names = {}
  for _, m in ipairs(cjson.decode(out:match("{.*}")).members) do
    if not m.isLearner then names[#names + 1] = m.name end
  end
  table.sort(names)
  return names
end

-- Waits up to two minutes until the cluster of kubeconfig has exactly n Nodes, all Ready.
function M.nodes_ready(st, kubeconfig, n)
  local deadline = os.time() + 120
  repeat
    local code, text = M.kubectl(st, { "get", "nodes", "-o", "json" }, kubeconfig)
    if code == 0 then
      local ready, items = 0, cjson.decode(text).items
      for _, node in ipairs(items) do
        for _, c in ipairs(node.status.conditions or {}) do
          if c.type == "Ready" and c.status == "True" then ready = ready + 1 end
        end
      end
      if ready == n and #items == n then return true end
    end
    os.execute("sleep 1")
  until os.time() > deadline
  return false
end

return M
