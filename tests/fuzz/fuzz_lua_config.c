/* libFuzzer: tests/fuzz/lua/config.lua inside the moonadm host (see fuzz_lua.h). */
#define FUZZ_LUA "config"
#include "fuzz_lua.h"
