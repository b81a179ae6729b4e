/* The math functions Lua calls (lmathlib, and lvm's float % and ^), bound to libm on the first call.
 * Why: the binary is not linked with libm, so no command pays for loading it. Loading libm.so.6
 * runs its 21 IFUNC resolvers, spread over its text: about 0.35 ms of every start and 330 KiB of
 * resident pages, for functions a command seldom calls (the stock scripts use none on their usual
 * paths). These definitions are the executable's own (not exported: bindings/lua_api.dyn), so a
 * library loaded later that needs libm still binds to libm's. frexp and ldexp are libc's. */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef double (*fn1)(double);
typedef double (*fn2)(double, double);

static struct {
	fn1 acos, asin, cos, cosh, exp, log, log10, log2, sin, sinh, sqrt, tan, tanh;
	fn2 atan2, fmod, pow;
} m;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *must(void *lib, const char *name)
{
	void *f = lib ? dlsym(lib, name) : NULL;
	if (!f) {
		/* a math function cannot return an error to Lua: the command stops, saying why */
		fprintf(stderr, "moonadm: cannot bind %s from %s (%s); is glibc's libm installed?\n", name, LIBM_SO,
			dlerror());
		exit(EXIT_FAILURE);
	}
	return f;
}

static void bind_libm(void)
{
	void *lib = dlopen(LIBM_SO, RTLD_NOW | RTLD_LOCAL);
#define BIND(name) m.name = (__typeof__(m.name))must(lib, #name)
	BIND(acos), BIND(asin), BIND(cos), BIND(cosh), BIND(exp), BIND(log), BIND(log10), BIND(log2);
	BIND(sin), BIND(sinh), BIND(sqrt), BIND(tan), BIND(tanh), BIND(atan2), BIND(fmod), BIND(pow);
#undef BIND
}

#define LAZY1(name)                                                                                    \
	double name(double x)                                                                          \
	{                                                                                              \
		pthread_once(&once, bind_libm);                                                        \
		return m.name(x);                                                                      \
	}
#define LAZY2(name)                                                                                    \
	double name(double x, double y)                                                                \
	{                                                                                              \
		pthread_once(&once, bind_libm);                                                        \
		return m.name(x, y);                                                                   \
	}
LAZY1(acos)
LAZY1(asin)
LAZY1(cos)
LAZY1(cosh)
LAZY1(exp)
LAZY1(log)
LAZY1(log10)
LAZY1(log2)
LAZY1(sin)
LAZY1(sinh)
LAZY1(sqrt)
LAZY1(tan)
LAZY1(tanh)
LAZY2(atan2)
LAZY2(fmod)
LAZY2(pow)
