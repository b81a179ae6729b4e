-- How the lab's kubelet stand-in turns a static pod manifest into host processes: the container's
-- command + args with the binary of the image's release from the lab bin dir, its env, and a private mount
-- namespace where each hostPath volume is bind-mounted from the node's root at its mountPath.
local fs = require "moonadm.fs"
local runtime_lab = require "runtime.lab"

local M = {}

-- The node-local trees a pod may mount from; each gets a fresh tmpfs in the pod's mount namespace
-- so that only the pod's own volumes appear there (and nothing leaks from the host's copy).
M.NODE_TREES = { "/etc/kubernetes", "/var/lib/etcd", "/var/lib/kubelet" }

local function under(path, dir)
  return path == dir or path:sub(1, #dir + 1) == dir .. "/"
end

local function node_tree(path)
  for _, d in ipairs(M.NODE_TREES) do if under(path, d) then return d end end
end

local function host_exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

-- Where the stand-in finds an image's binary is the lab runtime's knowledge (runtime/lab.lua), which
-- the upgrade's image check asks too.
M.image_binary = runtime_lab.image_binary
M.image_path = runtime_lab.image_path

-- argv for one container: command[1] (or the image's name) resolved in bin_dir, from the image's
-- release when the lab has it by tag.
function M.argv(container, bin_dir)
  local argv = {}
  for _, a in ipairs(container.command or {}) do argv[#argv + 1] = a end
  for _, a in ipairs(container.args or {}) do argv[#argv + 1] = a end
  if #argv == 0 then argv[1] = M.image_binary(container.image) end
  local name = argv[1]:match("([^/]+)$")
  if name == M.image_binary(container.image) then
    local tagged, terr = M.image_path(bin_dir, container.image)
    if terr then return nil, ("container %q: %s"):format(container.name or "?", terr) end
    if tagged then argv[1] = tagged; return argv end
  end
  local candidate = bin_dir .. "/" .. name
  if host_exists(candidate) then
    argv[1] = candidate
  else
    local by_image = bin_dir .. "/" .. M.image_binary(container.image)
    if not host_exists(by_image) then
      return nil, ("no binary for container %q: neither %s nor %s exists (run `make lab-bins`)")
        :format(container.name or "?", candidate, by_image)
    end
    if #(container.command or {}) == 0 then argv[1] = by_image else table.insert(argv, 1, by_image) end
  end
  return argv
end

function M.env(container)
  local env = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root" }
  for _, e in ipairs(container.env or {}) do
    if type(e.value) == "string" then env[#env + 1] = e.name .. "=" .. e.value end
  end
  return env
end

-- The mount plan for a container: tmpfs over each node tree it uses, then one bind per hostPath
-- volume it mounts. root is the node's directory on the host. Creates DirectoryOrCreate /
-- FileOrCreate sources under the node root, as a kubelet creates them on its host.
function M.mounts(pod, container, root)
  local volumes = {}
  for _, v in ipairs((pod.spec or {}).volumes or {}) do volumes[v.name] = v end
  local plan, trees, notes = {}, {}, {}
  local binds = {}
  for _, vm in ipairs(container.volumeMounts or {}) do
    local v = volumes[vm.name]
    local hp = v and v.hostPath
    if hp and hp.path then
      local src = fs.path(hp.path) -- the node's copy, under the root
      local kind = hp.type
      if not host_exists(src) then
        if kind == "DirectoryOrCreate" then
          fs.mkdir(hp.path, "0755")
        elseif kind == "FileOrCreate" then
          fs.write(hp.path, "", "0644")
        elseif host_exists(hp.path) and root ~= "/" then
          src = hp.path -- a host-wide path the node root does not have (e.g. /etc/ssl/certs)
        end
      end
      local tree = node_tree(vm.mountPath)
      if not host_exists(src) then
        notes[#notes + 1] = ("volume %s: %s does not exist, not mounted"):format(vm.name, hp.path)
      elseif tree then
        trees[tree] = true
        local st = fs.stat(hp.path)
        binds[#binds + 1] = { type = "bind", src = src, dst = vm.mountPath, ro = vm.readOnly or false,
          file = st ~= nil and st.type == "file" }
      elseif src ~= vm.mountPath then
        if host_exists(vm.mountPath) then
          binds[#binds + 1] = { type = "bind", src = src, dst = vm.mountPath, ro = vm.readOnly or false }
        else
          notes[#notes + 1] = ("volume %s: mount path %s does not exist on this host, not mounted"):format(vm.name, vm.mountPath)
        end
      end
    end
  end
  for _, t in ipairs(M.NODE_TREES) do
    if trees[t] then plan[#plan + 1] = { type = "tmpfs", dst = t } end
  end
  table.sort(binds, function(a, b) return a.dst < b.dst end) -- parents before children
  for _, b in ipairs(binds) do plan[#plan + 1] = b end
  return plan, notes
end

return M
