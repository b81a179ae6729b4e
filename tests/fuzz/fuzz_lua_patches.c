/* libFuzzer: tests/fuzz/lua/patches.lua inside the moonadm host (see fuzz_lua.h). */
#define FUZZ_LUA "patches"
#include "fuzz_lua.h"
