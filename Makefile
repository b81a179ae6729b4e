# moonadm: C engine (engine/), Lua bindings and host (bindings/), embedded Lua scripts (scripts/).
CC      ?= cc
PKGS    := lua5.4 openssl yaml-0.1 libcurl
CFLAGS  ?= -O2 -g
ALL_CFLAGS = $(CFLAGS) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread $(shell pkg-config --cflags $(PKGS))
LDLIBS  := $(shell pkg-config --libs $(PKGS)) -pthread -lm -ldl
B       ?= build

ENGINE_SRC := $(sort $(wildcard engine/*.c))
BIND_SRC   := $(sort $(wildcard bindings/*.c))
SCRIPTS    := $(sort $(shell find scripts -name '*.lua'))
CTESTS     := $(patsubst tests/engine/%.c,$(B)/tests/%,$(sort $(wildcard tests/engine/test_*.c)))

ENGINE_OBJ := $(patsubst %.c,$(B)/%.o,$(ENGINE_SRC))
BIND_OBJ   := $(patsubst %.c,$(B)/%.o,$(BIND_SRC))
BIN        ?= bin/moonadm

.PHONY: all deps test test-unit test-long demo lab-bins asan valgrind bench clean fuzz
all: $(BIN)

# Debian packages the build, the tests and the lab need.
deps:
	apt-get update
	apt-get install -y --no-install-recommends build-essential pkg-config liblua5.4-dev lua5.4 libssl-dev \
	  libyaml-dev libcurl4-openssl-dev lua-cjson lua-busted lua-argparse lua-luv openssl iproute2 \
	  ca-certificates curl kmod

$(B)/%.o: %.c $(wildcard engine/*.h bindings/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iengine -Ibindings -c $< -o $@

$(B)/libmoonadm.a: $(ENGINE_OBJ)
	ar rcs $@ $^

$(B)/embed: tools/embed.c
	@mkdir -p $(B)
	$(CC) $(ALL_CFLAGS) $< -o $@

# The stock scripts, compiled into the binary (module name = path under scripts/, / -> .).
$(B)/scripts_embed.c: $(B)/embed $(SCRIPTS)
	@$(B)/embed scripts $(SCRIPTS) > $@.tmp && mv $@.tmp $@

$(BIN): $(BIND_OBJ) $(B)/scripts_embed.o $(B)/libmoonadm.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(BIND_OBJ) $(B)/scripts_embed.o $(B)/libmoonadm.a $(LDLIBS)

$(B)/scripts_embed.o: $(B)/scripts_embed.c
	$(CC) $(ALL_CFLAGS) -Ibindings -c $< -o $@

$(B)/tests/%: tests/engine/%.c $(B)/libmoonadm.a tests/engine/t.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iengine -o $@ $< $(B)/libmoonadm.a $(LDLIBS)

# Every test: C unit tests, busted specs run inside moonadm, e2e on the lab when its binaries exist.
test: $(BIN) $(CTESTS)
	@tests/run.sh $(B)

test-unit: $(BIN) $(CTESTS)
	@MOONADM_NO_E2E=1 tests/run.sh $(B)

test-long: $(BIN) $(CTESTS)
	@MOONADM_LONG=1 tests/run.sh $(B)

# The engine and the specs under AddressSanitizer + UndefinedBehaviorSanitizer.
asan:
	$(MAKE) B=build-asan BIN=build-asan/moonadm CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  build-asan/moonadm $(patsubst $(B)/%,build-asan/%,$(CTESTS))
	MOONADM_BIN=build-asan/moonadm MOONADM_NO_E2E=1 ASAN_OPTIONS=detect_leaks=0 tests/run.sh build-asan

valgrind: $(CTESTS)
	@for t in $(CTESTS); do valgrind -q --error-exitcode=9 --leak-check=full $$t >/dev/null || exit 1; done; echo "valgrind: clean"

lab-bins:
	lab/build-bins.sh

demo: $(BIN)
	tools/demo.sh

bench: $(BIN)
	bench/run.sh

clean:
	rm -rf build build-asan bin
