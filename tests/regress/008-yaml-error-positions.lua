-- Issue 18, defect 10: error messages. libyaml's reader errors always said 1:1 (the bad byte was on
-- line 3: the reader gives a byte offset, not a mark); a config document that is a list had no line;
-- `--config DIR` printed an internal Lua error ("bad argument #1 to 'decode'"); `--config /dev/zero`
-- read until memory ran out. Positions now come from libyaml's own marks and offsets; --config and
-- --patches files are read as regular files only, no bigger than yaml.limits.max_bytes.
local h = require "helpers"
local yaml = require "moonadm.yaml"

local function init(dir, config)
  return h.moonadm { "init", "--config", config, "--dry-run", "--root", dir .. "/root" }
end

describe("regress 008: YAML and config error positions", function()
  it("a bad UTF-8 byte on line 3 is reported on line 3", function()
    local _, err = yaml.decode("a: 1\nb: 2\nc: \255\254 bad\n", "u.yaml")
    assert.equal("u.yaml:3:4: invalid leading UTF-8 octet 0xff (byte 13): YAML must be UTF-8 text without control "
      .. "characters", err)
    local _, err2 = yaml.decode("a: 1\nb: 2\nc: x\0y\n", "z.yaml")
    assert.matches("^z%.yaml:3:5: control characters are not allowed", err2)
  end)

  it("a scanner error says where the construct began", function()
    local _, err = yaml.decode('a: 1\nb: 2\nc: "unterminated\n', "q.yaml")
    assert.equal("q.yaml:4:1: found unexpected end of stream while scanning a quoted scalar that starts at 3:4", err)
  end)

  it("a config document that is a list or a string has its line", function()
    local dir = h.tmpdir()
    h.write(dir .. "/c.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n---\n- a\n- list\n---\njust a string\n")
    local code, out, err = init(dir, dir .. "/c.yaml")
    h.rmrf(dir)
    assert.not_equal(0, code)
    assert.matches("c.yaml:4: a configuration document must be a mapping, got a list", out .. err, 1, true)
    assert.matches('c.yaml:7: a configuration document must be a mapping, got a string ("just a string")', out .. err, 1, true)
  end)

  it("--config DIR, /dev/zero, a FIFO, a file too big: one clear line each, no Lua error", function()
    local dir = h.tmpdir()
    os.execute("mkfifo " .. h.q(dir .. "/fifo"))
    os.execute(("truncate -s %d %s"):format(yaml.limits.max_bytes + 1, h.q(dir .. "/big.yaml")))
    for path, what in pairs {
      [dir] = "is a directory, not a regular file",
      ["/dev/zero"] = "is a character device, not a regular file",
      [dir .. "/fifo"] = "is a FIFO, not a regular file",
      [dir .. "/big.yaml"] = ("is %d bytes, larger than the %d bytes allowed"):format(yaml.limits.max_bytes + 1, yaml.limits.max_bytes),
    } do
      local code, out, err = init(dir, path)
      assert.not_equal(0, code)
      assert.matches(('unable to read config from "%s": %s %s; --config takes a YAML file of at most 8 MiB'):format(path, path, what),
        out .. err, 1, true)
      assert.not_matches("bad argument", out .. err, 1, true)
    end
    h.rmrf(dir)
  end)
end)
