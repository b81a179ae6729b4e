/* libFuzzer: tests/fuzz/lua/journal.lua inside the moonadm host (see fuzz_lua.h). */
#define FUZZ_LUA "journal"
#include "fuzz_lua.h"
