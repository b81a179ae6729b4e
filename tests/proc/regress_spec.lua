-- Runs every regression test under tests/regress/ (NNN-what.lua, busted files: one per finding of
-- the fuzzers or the e2e tests, named after what it guards).
local h = require "helpers"
local p = io.popen("ls " .. h.q(h.top .. "/tests/regress") .. "/*.lua 2>/dev/null")
for f in p:lines() do assert(loadfile(f, "t", _ENV))() end -- with busted's describe/it
p:close()
