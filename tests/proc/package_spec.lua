-- `make deb` as a user installs it: the .deb unpacked into a scratch root (dpkg -x) has the binary,
-- a man page per command, the completions and the kubelet drop-in; ldd finds every library; the
-- Depends name the package of every library the binary links and of the Lua modules it loads; and
-- the unpacked binary runs from a directory with no checkout around it. Built-Using names the source of
-- every library linked in statically.
local h = require "helpers"

local sh = h.sh

local function lines(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

-- The Debian package that owns a file (dpkg's database may know it by /lib or /usr/lib).
local function owner(path)
  for _, p in ipairs { path, (path:gsub("^/usr/lib/", "/lib/")), (path:gsub("^/lib/", "/usr/lib/")) } do
    local code, out = sh("dpkg-query -S " .. h.q(p))
    if code == 0 then return (out:match("^([^:,%s]+)")) end
  end
  local code, real = sh("readlink -f " .. h.q(path))
  if code == 0 and real:match("^%S+") ~= path then return owner(real:match("^%S+")) end
  return nil
end

local plain = not os.getenv("MOONADM_BIN") or os.getenv("MOONADM_BIN") == h.top .. "/bin/moonadm"

describe("make deb", function()
  if not plain then
    pending("packages bin/moonadm: checked in the plain pass, not again under " .. os.getenv("MOONADM_BIN"))
    return
  end

  local tmp, deb, root, version, build_out
  setup(function()
    tmp = h.tmpdir()
    local code
    code, build_out = sh("cd " .. h.q(h.top) .. " && make -s --no-print-directory deb DEB_OUT=" .. h.q(tmp .. "/out"))
    assert(code == 0, "make deb failed:\n" .. build_out)
    local _, ls = sh("ls " .. h.q(tmp .. "/out"))
    deb = tmp .. "/out/" .. (ls:match("(moonadm_[^\n]+%.deb)") or "none")
    root = tmp .. "/root"
    assert(sh("dpkg-deb -x " .. h.q(deb) .. " " .. h.q(root)) == 0, "dpkg-deb -x " .. deb .. " failed")
    local _, v = h.moonadm { "version", "-o", "short" }
    version = v:match("^v?(%S+)")
  end)
  teardown(function() if tmp then h.rmrf(tmp) end end)

  local function field(name)
    local code, out = sh("dpkg-deb -f " .. h.q(deb) .. " " .. name)
    assert.equal(0, code, out)
    return (out:gsub("%s+$", ""))
  end

  it("is named and described after the binary's version", function()
    local _, arch = sh("dpkg --print-architecture")
    arch = arch:match("%S+")
    assert.equal(("moonadm_%s_%s.deb"):format(version, arch), deb:match("[^/]+$"))
    assert.equal("moonadm", field("Package"))
    assert.equal(version, field("Version"))
    assert.equal(arch, field("Architecture"))
    assert.equal("admin", field("Section"))
    assert.equal("optional", field("Priority"))
    assert.matches("^.+ <.+@.+>$", field("Maintainer"))
    assert.truthy(#field("Description") > 40)
  end)

  it("holds the binary, a man page per command, the completions and the kubelet drop-in", function()
    local code, mode = sh("stat -c %a " .. h.q(root .. "/usr/bin/moonadm"))
    assert.equal(0, code, mode)
    assert.equal("755", mode:match("%d+"))
    for _, f in ipairs {
      "usr/share/bash-completion/completions/moonadm",
      "usr/share/zsh/vendor-completions/_moonadm",
      "usr/share/fish/vendor_completions.d/moonadm.fish",
    } do
      local s = h.read(root .. "/" .. f)
      assert(s and #s > 100, f .. " is missing or nearly empty")
    end
    -- a page for the top command and for each command of its listing that answers --help
    local _, top_help = h.moonadm { "--help" }
    local cmds = top_help:match("\nAvailable Commands:\n(.-)\n\n") or ""
    local want = { "moonadm" }
    for name in cmds:gmatch("\n?%s+(%S+)[^\n]*") do
      if name ~= "help" and h.moonadm { name, "--help" } == 0 then want[#want + 1] = "moonadm-" .. name end
    end
    assert.truthy(#want > 5, "moonadm --help lists too few commands:\n" .. top_help)
    local man = root .. "/usr/share/man/man1/"
    for _, page in ipairs(want) do
      assert(h.read(man .. page .. ".1.gz"), "no man page " .. page .. ".1.gz")
    end
    -- every page: gzip -n, roff with NAME and SYNOPSIS, its SEE ALSO pages in the package too
    local _, list = sh("ls " .. h.q(man))
    local pages = lines(list)
    assert.truthy(#pages >= #want)
    for _, gz in ipairs(pages) do
      local bytes = h.read(man .. gz)
      assert.equal("\31\139", bytes:sub(1, 2), gz .. " is not gzip")
      assert.equal(0, bytes:byte(4) & 0x08, gz .. " keeps a file name (not gzip -n)")
      assert.equal("\0\0\0\0", bytes:sub(5, 8), gz .. " keeps a time stamp (not gzip -n)")
      local c, text = sh("gzip -dc " .. h.q(man .. gz))
      assert.equal(0, c, text)
      assert.matches('\n?%.TH "' .. gz:gsub("%.1%.gz$", ""):upper():gsub("%p", "%%%0") .. '" "1"', text)
      assert.truthy(text:find("\n.SH NAME\n", 1, true), gz .. ": no NAME")
      assert.truthy(text:find("\n.SH SYNOPSIS\n", 1, true), gz .. ": no SYNOPSIS")
      local see = text:match("\n%.SH SEE ALSO\n([^\n]*)")
      for ref in (see or ""):gmatch("\\fB(.-)\\fR%(1%)") do
        local name = ref:gsub("\\%-", "-")
        assert(h.read(man .. name .. ".1.gz"), gz .. " refers to " .. name .. "(1), which is not in the package")
      end
    end
    -- the renewal timer and its service, installed and not enabled (no wants/ link in the package)
    local svc = h.read(root .. "/usr/lib/systemd/system/moonadm-certs-renew.service")
    assert(svc, "no moonadm-certs-renew.service")
    assert.matches("\nExecStart=/usr/bin/moonadm certs renew all %-%-if%-expiring%-within ${MOONADM_RENEW_WITHIN}\n", svc)
    local timer = h.read(root .. "/usr/lib/systemd/system/moonadm-certs-renew.timer")
    assert(timer and timer:find("\nOnCalendar=daily\n", 1, true), "no daily moonadm-certs-renew.timer")
    -- the snapshot timer likewise: twice a day, the newest five kept, its man page there
    local ssvc = h.read(root .. "/usr/lib/systemd/system/moonadm-etcd-snapshot.service")
    assert(ssvc, "no moonadm-etcd-snapshot.service")
    assert.matches("\nExecStart=/usr/bin/moonadm etcd snapshot save %-%-dir ${MOONADM_SNAPSHOT_DIR} %-%-keep ${MOONADM_SNAPSHOT_KEEP}\n", ssvc)
    assert.truthy(ssvc:find("MOONADM_SNAPSHOT_KEEP=5", 1, true), ssvc)
    local stimer = h.read(root .. "/usr/lib/systemd/system/moonadm-etcd-snapshot.timer")
    assert(stimer and stimer:find("\nOnCalendar=*-*-* 00,12:00:00\n", 1, true), "no twice-daily moonadm-etcd-snapshot.timer")
    assert(h.read(man .. "moonadm-etcd-snapshot-save.1.gz"), "no man page for moonadm etcd snapshot save")
    local _, wants = sh("find " .. h.q(root) .. " -path '*wants*' -name 'moonadm*'")
    assert.equal("", wants:gsub("%s", ""))
    local dropin = h.read(root .. "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf")
    assert(dropin, "no /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf")
    local body = {}
    for _, l in ipairs(lines(dropin)) do
      if not l:match("^#") then body[#body + 1] = l end
    end
    assert.same({
      "[Service]",
      'Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"',
      'Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"',
      "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env",
      "EnvironmentFile=-/etc/default/kubelet",
      "ExecStart=",
      "ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS",
    }, body)
  end)

  it("lists every file with its checksum (DEBIAN/md5sums)", function()
    local ctl = tmp .. "/control"
    assert.equal(0, (sh("dpkg-deb -e " .. h.q(deb) .. " " .. h.q(ctl))))
    local code, out = sh("cd " .. h.q(root) .. " && md5sum --quiet -c " .. h.q(ctl .. "/md5sums"))
    assert.equal(0, code, out)
    local _, n = sh("cd " .. h.q(root) .. " && find . -type f | wc -l")
    assert.equal(tonumber(n:match("%d+")), #lines(h.read(ctl .. "/md5sums")))
  end)

  it("runs as kubeadm through a link, and its prerm takes the kubeadm alternative away", function()
    local link = tmp .. "/kubeadm"
    assert.equal(0, (sh(("ln -sf %s %s"):format(h.q(root .. "/usr/bin/moonadm"), h.q(link)))))
    local code, out = sh(h.q(link) .. " version -o short")
    assert.equal(0, code, out)
    assert.matches("^v1%.%d+%.%d+\n$", out) -- a Kubernetes release, not moonadm's own version
    local ctl = tmp .. "/control-prerm"
    assert.equal(0, (sh("dpkg-deb -e " .. h.q(deb) .. " " .. h.q(ctl))))
    local c2, mode = sh("stat -c %a " .. h.q(ctl .. "/prerm"))
    assert.equal(0, c2, mode)
    assert.equal("755", mode:match("%d+"))
    -- run with an update-alternatives of the test's first on PATH: it removes the link only when chosen
    local fake = tmp .. "/fakebin"
    os.execute("mkdir -p " .. h.q(fake))
    h.write(fake .. "/update-alternatives", table.concat({ "#!/bin/sh",
      'echo "$*" >> "$FAKE_LOG"',
      '[ "$1" = --query ] && [ -n "$FAKE_CHOSEN" ] && printf "Name: kubeadm\nAlternative: /usr/bin/moonadm\nPriority: 50\n"',
      "exit 0", "" }, "\n"))
    os.execute("chmod 0755 " .. h.q(fake .. "/update-alternatives"))
    local function prerm(arg, chosen)
      local log = tmp .. "/ua-" .. arg .. (chosen and "-chosen" or "") .. ".log"
      local c, o = sh(("PATH=%s:$PATH FAKE_LOG=%s FAKE_CHOSEN=%s sh %s %s"):format(h.q(fake), h.q(log),
        chosen and "1" or "", h.q(ctl .. "/prerm"), arg))
      assert.equal(0, c, o)
      return h.read(log) or ""
    end
    assert.equal("--query kubeadm\n--remove kubeadm /usr/bin/moonadm\n", prerm("remove", true))
    assert.equal("--query kubeadm\n", prerm("remove", false))
    assert.equal("", prerm("upgrade", true)) -- an upgrade keeps the user's choice
  end)

  it("links only libraries ldd finds, and Depends names the package of each and of the Lua modules", function()
    local bin = root .. "/usr/bin/moonadm"
    local code, ldd = sh("ldd " .. h.q(bin))
    assert.equal(0, code, ldd)
    assert.falsy(ldd:find("not found", 1, true), ldd)
    local resolved = {}
    for soname, path in ldd:gmatch("([%w%.%-_+]+) => (/%S+)") do resolved[soname] = path end
    local deps = {}
    for name in field("Depends"):gmatch("([%w][%w%.%+%-]*)[^,]*,?") do deps[name] = true end
    local c2, dyn = sh("readelf -d " .. h.q(bin))
    assert.equal(0, c2, dyn)
    local needed = 0
    for soname in dyn:gmatch("%(NEEDED%)%s+Shared library: %[([^%]]+)%]") do
      needed = needed + 1
      local path = assert(resolved[soname], soname .. " is not in ldd's output")
      local pkg = owner(path)
      assert(pkg, "no Debian package owns " .. path)
      assert(deps[pkg], ("Depends lacks %s (%s => %s): %s"):format(pkg, soname, path, field("Depends")))
    end
    -- every library but libc and libm is linked statically (Makefile LDLIBS): libc's package at least
    local libc = resolved["libc.so.6"]
    assert.truthy(needed >= 1 and libc and deps[owner(libc)], dyn)
    -- the Lua C modules: cjson is loaded by every command, luv by the lab
    local lua = tmp .. "/mods.lua"
    h.write(lua, 'for _, m in ipairs(arg) do print(m, package.searchpath(m, package.cpath) or "-") end\n')
    local c3, mods = sh(h.q(bin) .. " lua " .. h.q(lua) .. " cjson luv")
    assert.equal(0, c3, mods)
    local cjson_so = mods:match("cjson\t(/%S+)")
    assert(cjson_so, "the unpacked binary's Lua finds no cjson: " .. mods)
    assert(deps[owner(cjson_so)], "Depends lacks " .. tostring(owner(cjson_so)) .. " (cjson)")
    local luv_so = mods:match("luv\t(/%S+)")
    if luv_so then assert.equal(owner(luv_so), field("Recommends")) end
    -- libcurl, loaded on the first request (engine/libcurl.c): no NEEDED entry names it
    local c4, cache = sh("ldconfig -p")
    assert.equal(0, c4, cache)
    local curl = cache:match("libcurl%.so%.4 %([^)]*%) => (/%S+)")
    assert(curl, "libcurl.so.4 is not in ldconfig's cache")
    assert(deps[owner(curl)], ("Depends lacks %s (libcurl.so.4 => %s): %s"):format(tostring(owner(curl)), curl, field("Depends")))
  end)

  -- Debian policy 7.8: a binary holding a library's code names that library's source in Built-Using
  it("names in Built-Using the source and version of each library linked in statically", function()
    local code, dyn = sh("readelf -d " .. h.q(root .. "/usr/bin/moonadm"))
    assert.equal(0, code, dyn)
    local using = {}
    for src, ver in field("Built-Using"):gmatch("([%w][%w%.%+%-]*) %(= ([^)]+)%)") do using[src] = ver end
    for _, lib in ipairs { { "libssl-dev", "libcrypto.so" }, { "libgmp-dev", "libgmp.so" }, { "nettle-dev", "libnettle.so" },
                           { "liblua5.4-dev", "liblua5.4.so" }, { "libyaml-dev", "libyaml-0.so" } } do
      local c, src = sh("dpkg-query -W -f='${source:Package} ${source:Version}' " .. lib[1])
      local name, ver = src:match("^(%S+) (%S+)$")
      assert(c == 0 and name, lib[1] .. ": " .. src)
      if dyn:find("[" .. lib[2], 1, true) then
        assert.is_nil(using[name], lib[2] .. " is linked dynamically: " .. name .. " is no Built-Using")
      else
        assert.equal(ver, using[name], lib[2] .. " is linked statically: Built-Using needs " .. name .. " (= " .. ver .. ")")
      end
    end
  end)

  it("runs from a directory with no checkout around it", function()
    local away = tmp .. "/away"
    os.execute("mkdir -p " .. h.q(away))
    local cmd = "cd " .. h.q(away) .. " && env -u MOONADM_SCRIPTS -u MOONADM_BIN HOME=" .. h.q(away) .. " "
      .. h.q(root .. "/usr/bin/moonadm")
    local code, out = sh(cmd .. " version -o short")
    assert.equal(0, code, out)
    assert.equal("v" .. version, out:match("%S+"))
    code, out = sh(cmd .. " version")
    assert.equal(0, code, out)
    assert.truthy(out:find(version, 1, true), out)
    code, out = sh(cmd .. " init --help")
    assert.equal(0, code, out)
    assert.truthy(out:find("Usage:", 1, true), out)
  end)
end)
