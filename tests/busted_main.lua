-- busted, run inside moonadm (`moonadm lua tests/busted_main.lua ...`) so specs use the real bindings.
require 'busted.runner'({ standalone = false })
