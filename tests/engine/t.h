/* A minimal test harness for the engine's C unit tests: TAP-like lines, and a
 * closing "# tests: P passed, F failed" line that `make test` adds up. */
#ifndef MA_T_H
#define MA_T_H

#include <stdio.h>
#include <string.h>

static int t_passed, t_failed, t_check_failures;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			t_check_failures++;                                \
			printf("not ok %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
		}                                                          \
	} while (0)

#define CHECK_STR(got, want)                                                        \
	do {                                                                        \
		const char *g_ = (got), *w_ = (want);                               \
		CHECK(g_ && w_ && strcmp(g_, w_) == 0, "got \"%s\", want \"%s\"", \
		      g_ ? g_ : "(null)", w_ ? w_ : "(null)");                      \
	} while (0)

/* Runs one test function and prints its name with its result. */
#define RUN(fn)                                                              \
	do {                                                                 \
		int f0_ = t_check_failures;                                  \
		fn();                                                        \
		int ok_ = t_check_failures == f0_;                           \
		if (ok_) t_passed++; else t_failed++;                        \
		printf("%s - %s\n", ok_ ? "ok" : "not ok", #fn);            \
	} while (0)

#define DONE()                                                                    \
	do {                                                                      \
		printf("# tests: %d passed, %d failed\n", t_passed, t_failed);    \
		return t_failed ? 1 : 0;                                          \
	} while (0)

#endif
