-- luacheck (Debian's lua-check), run by tests/proc/guards_spec.lua: an undefined global or dead code
-- a linter sees (an unused variable, a value never read, unreachable code) fails `make test-unit`.
std = "lua54"
max_line_length = false -- help texts and kubeadm's messages are long on purpose
unused_args = false     -- a phase, a callback or an interface method takes what its caller passes
