/* libFuzzer: tests/fuzz/lua/api_answer.lua inside the moonadm host (see fuzz_lua.h). */
#define FUZZ_LUA "api_answer"
#include "fuzz_lua.h"
