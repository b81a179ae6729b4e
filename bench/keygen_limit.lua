-- The key-generation limit of this machine with the generator moonadm uses (engine/pki_rsa.c's
-- prime search behind pki.generate_key): `moonadm lua bench/keygen_limit.lua ALG N THREADS`
-- generates N keys, on one thread (THREADS=1: one key at a time) or spread over THREADS (0 = every
-- core, as `certs all` does), and prints "seconds cpu_seconds" for the batch. No files, no Lua
-- flow: the floor under any phase that makes these keys. RSA keys come from the generator in force
-- (MOONADM_RSA_GENERATOR=openssl: OpenSSL's; SECURITY.md, "Key generation").
local core = require "moonadm.core"
local pki = require "moonadm.pki"

local alg, n, threads = arg[1] or "RSA-2048", tonumber(arg[2] or "11"), tonumber(arg[3] or "0")
local c0, t0 = os.clock(), core.monotonic()
if threads == 1 then
  for _ = 1, n do assert(pki.generate_key(alg)) end
else
  local algs = {}
  for i = 1, n do algs[i] = alg end
  assert(pki.generate_keys(algs, threads))
end
io.write(("%.6f %.6f\n"):format(core.monotonic() - t0, os.clock() - c0))
