/* libFuzzer: tests/fuzz/lua/clusterinfo.lua inside the moonadm host (see fuzz_lua.h). */
#define FUZZ_LUA "clusterinfo"
#include "fuzz_lua.h"
