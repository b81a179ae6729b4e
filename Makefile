# moonadm: C engine (engine/), Lua bindings and host (bindings/), embedded Lua scripts (scripts/).
CC      ?= cc
PKGS    := lua5.4 libcrypto yaml-0.1 libcurl
# linked (statically): libcurl is not (engine/libcurl.c loads it on the first request)
LINK_PKGS := lua5.4 libcrypto yaml-0.1
CFLAGS  ?= -O2 -g
# PLAIN=1: every start-up trick of README's "Choices" off, so a maintainer can tell whether a bug is in
# one: the Lua state on glibc's malloc and closed by lua_close (bindings/lalloc.c), libm linked (no
# bindings/libm_lazy.c), no layout by use, every library linked dynamically. In a build dir of its own
# (build-plain/moonadm), since make does not see a flag change in objects it already has.
PLAIN   ?=
# pkg-config runs when a compile first needs it (not when make reads this file), so `make deps`,
# `make demo` and `make test` work on a bare machine before pkg-config and the -dev packages exist.
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(shell pkg-config --cflags $(PKGS)))$(PKG_CFLAGS)
# Every library but libc is linked statically (README, "Choices"): GMP (RSA key generation,
# engine/pki_rsa.c), nettle (SHA-256), OpenSSL's libcrypto, Lua and libyaml; libm is not linked into
# the binary (bindings/libm_lazy.c loads it when Lua first needs it). The loader then binds no
# symbol of theirs at start-up (about 0.5 ms of every command) and no page of theirs is touched unless used.
# The executable exports the Lua C API alone (bindings/lua_api.dyn) for the Lua modules it dlopens.
LDLIBS     = $(eval LDLIBS := -Wl,--dynamic-list=bindings/lua_api.dyn$(if $(PLAIN),, -Wl,-Bstatic) -lnettle -lgmp \
  $$(shell pkg-config --libs $(LINK_PKGS))$(if $(PLAIN),, -Wl,-Bdynamic) -pthread -lm -ldl)$(LDLIBS)
# A rebuild relinks when Debian updates one of those archives (a libssl-dev security update).
# (Read with the rules, so before `make deps` on a bare machine: no compiler yet, no archives, no noise.)
STATIC_ARCHIVES := $(wildcard $(addprefix $(dir $(shell $(CC) -print-file-name=libcrypto.a 2>/dev/null)),\
  libnettle.a libgmp.a libcrypto.a liblua5.4.a libyaml.a))
ALL_CFLAGS = $(CFLAGS) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread $(PKG_CFLAGS)$(if $(PLAIN), -DMA_PLAIN)
B       ?= build$(if $(PLAIN),-plain)
# Go for `make lab-bins`: the PATH's, else the official tarball's /usr/local/go (as .ci/run does).
GO_PATH := $(PATH)$(if $(wildcard /usr/local/go/bin/go),$(if $(filter /usr/local/go/bin,$(subst :, ,$(PATH))),,:/usr/local/go/bin))
HAVE_GO  = $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go))

# The Debian packages (one list: tools/deps.sh). `make deps`, `make demo` and `make test` install
# what is missing when run as root; otherwise (and for a plain `make`) a missing package stops make
# here with one line saying what to run.
SETUP_GOALS := deps demo test test-unit test-long
ifeq ($(MAKELEVEL),0)
ifneq ($(if $(MAKECMDGOALS),$(filter all $(SETUP_GOALS),$(MAKECMDGOALS)),all),)
ifneq ($(if $(filter $(SETUP_GOALS),$(MAKECMDGOALS)),$(shell id -u),1),0)
MISSING_DEBS := $(shell tools/deps.sh missing)
ifneq ($(MISSING_DEBS),)
ifeq ($(shell id -u),0)
$(error moonadm: missing Debian packages: $(MISSING_DEBS); run: make deps)
else
$(error moonadm: missing Debian packages: $(MISSING_DEBS); run as root: sudo make deps)
endif
endif
endif
endif
endif

ENGINE_SRC := $(sort $(wildcard engine/*.c))
BIND_SRC   := $(filter-out $(if $(PLAIN),bindings/libm_lazy.c),$(sort $(wildcard bindings/*.c)))
SCRIPTS    := $(sort $(shell find scripts -name '*.lua'))
CTESTS     := $(patsubst tests/engine/%.c,$(B)/tests/%,$(sort $(wildcard tests/engine/test_*.c)))

ENGINE_OBJ := $(patsubst %.c,$(B)/%.o,$(ENGINE_SRC))
BIND_OBJ   := $(patsubst %.c,$(B)/%.o,$(BIND_SRC))
BIN        ?= $(if $(PLAIN),$(B)/moonadm,bin/moonadm)

.PHONY: all deps test test-unit test-long test-build demo lab-bins lab-bins-for-test lab-bins-for-specs spec asan valgrind \
  sanitizers test-hooks fuzz fuzz-build bench install deb clean lab-bins-node layout
all: $(BIN)

# The Debian packages the build, the tests, the lab and `make deb` need (the list: tools/deps.sh):
# apt-get only what is missing; nothing at all when everything is installed.
deps:
	@tools/deps.sh install
	@echo "deps: all $$(tools/deps.sh list | wc -l) Debian packages of tools/deps.sh are installed"

$(B)/%.o: %.c $(wildcard engine/*.h bindings/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iengine -Ibindings -c $< -o $@

$(B)/libmoonadm.a: $(ENGINE_OBJ)
	ar rcs $@ $^

$(B)/embed: tools/embed.c $(STATIC_ARCHIVES)
	@mkdir -p $(B)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(LDLIBS)

# The stock scripts, compiled into the binary (module name = path under scripts/, / -> .), the
# modules a command loads first (tools/layout-modules.txt): their bytecode sits together.
$(B)/scripts_embed.c: $(B)/embed $(SCRIPTS) tools/layout-modules.txt
	@$(B)/embed $(if $(PLAIN),,--order tools/layout-modules.txt )scripts $(SCRIPTS) > $@.tmp && mv $@.tmp $@

# The binary's layout by use (tools/layout.lua; `make layout` writes it anew from a profile): the code
# and read-only data the commands use first (tools/layout.ld), so a command's resident pages are few.
# Relative relocations packed (DT_RELR, glibc >= 2.36): 440 KB of them were read at every start.
# Segments aligned to 64 KiB: the kernel then loads the binary at a 64 KiB-aligned address, so the
# 64 KiB windows it maps around each page fault are the layout's, not shifted by a random 4 KiB
# (a command's resident size no longer varies by 200 KiB from one run to the next).
# (PLAIN=1: none of these, and libm linked.)
LAYOUT_LDFLAGS = $(if $(PLAIN),,-Wl,-z,pack-relative-relocs -Wl,-z,max-page-size=0x10000 -Wl,-T,tools/layout.ld -Wl,-Map,$(B)/moonadm.map)
$(BIN): $(BIND_OBJ) $(B)/scripts_embed.o $(B)/libmoonadm.a bindings/lua_api.dyn tools/layout.ld $(STATIC_ARCHIVES)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(BIND_OBJ) $(B)/scripts_embed.o $(B)/libmoonadm.a $(filter-out $(if $(PLAIN),,-lm),$(LDLIBS)) $(LAYOUT_LDFLAGS)

# GCC emits a file's variables in reverse unless told not to: the bytecode keeps embed's order
# (clang has no such flag, and keeps the order).
$(B)/scripts_embed.o: $(B)/scripts_embed.c
	$(CC) $(ALL_CFLAGS) $(if $(PLAIN),,$(shell $(CC) -fno-toplevel-reorder -E -x c /dev/null >/dev/null 2>&1 && echo -fno-toplevel-reorder)) -Ibindings -c $< -o $@

# A new layout from a profile of the commands `make bench` times (needs valgrind; perf when here): run it when the
# code a command runs has changed much; a stale layout costs memory, never correctness.
layout: $(BIN)
	$(BIN) lua tools/layout.lua $(BIN) $(B)/moonadm.map tools

$(B)/tests/%: tests/engine/%.c $(B)/libmoonadm.a tests/engine/t.h $(STATIC_ARCHIVES)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iengine -o $@ $< $(B)/libmoonadm.a $(LDLIBS)

# Every test: C unit tests, busted specs run inside moonadm, e2e on the lab when its binaries exist.
# Each first installs missing Debian packages (as root), then builds in a second make (whose
# pkg-config now finds the -dev packages), then (with Go, or the lab's cached binaries) `make lab-bins`.
test test-long:
	@tools/deps.sh install
	@$(MAKE) --no-print-directory test-build
	@$(MAKE) --no-print-directory lab-bins-for-test $(if $(filter test-long,$@),TEST_RELEASES='$(LONG_RELEASES)' TEST_NODE_RELEASES='$(LONG_NODE_RELEASES)')
	@$(if $(filter test-long,$@),MOONADM_LONG=1 )tests/run.sh $(B)

# The C unit tests and every spec, no lab. The binaries the specs run come first (lab-bins-for-specs);
# when they cannot all be had (no Go and no cache), a spec needing a missing one is pending, printed
# as not built (MOONADM_NOT_BUILT=pending), where make test fails it.
test-unit:
	@tools/deps.sh install
	@$(MAKE) --no-print-directory $(BIN) $(CTESTS)
	@missing=; { $(SPEC_BINS); } || { missing=1; echo "$(SPEC_BINS_MISSING)"; }; \
	  env $${missing:+MOONADM_NOT_BUILT=pending} $(if $(PLAIN),MOONADM_BIN=$(abspath $(BIN)) )MOONADM_NO_E2E=1 tests/run.sh $(B)

# One spec inside the built binary: make spec NAME=util runs tests/spec/util_spec.lua, or else the
# tests/proc, or else the tests/e2e spec of that name; NAME=tests/e2e/x_spec.lua runs that file (an
# e2e spec needs the lab's binaries; the labs it brings up are taken down when it ends).
SPEC_NAME = $(patsubst %_spec,%,$(basename $(notdir $(NAME))))
spec: $(BIN)
	@f=$$(if [ -f '$(NAME)' ]; then echo '$(NAME)'; else for d in spec proc e2e; do \
	  [ -f tests/$$d/$(SPEC_NAME)_spec.lua ] && { echo tests/$$d/$(SPEC_NAME)_spec.lua; break; }; done; fi); \
	  if [ -z "$(SPEC_NAME)" ] || [ -z "$$f" ]; then \
	    echo "spec: no spec named '$(NAME)': make spec NAME=<name> runs tests/{spec,proc,e2e}/<name>_spec.lua"; exit 2; fi; \
	  MOONADM_STRICT_RESULTS=1 MOONADM_E2E_RUN=spec-$$$$ $(if $(PLAIN),MOONADM_BIN=$(abspath $(BIN)) )tests/busted.sh "$$f"

test-build: $(BIN) $(CTESTS) test-hooks

# The further releases the tests need: the control plane of the next minor (the minor-upgrade e2e, the
# differential spec's v1.36 column) and the kubeadm alone of the one after (its v1.37 column).
TEST_RELEASES ?= v1.36.3
# make test-long also builds the whole control plane of the one after (the two-step HA upgrade).
LONG_RELEASES ?= v1.36.3 v1.37.2
# and the node set (kubelet, kube-proxy, coredns) of the next minor, whose images then join the
# real-kubelet lab's archive (the real-kubelet minor upgrade); make test builds none.
LONG_NODE_RELEASES ?= v1.36.3
TEST_NODE_RELEASES ?=
TEST_REFERENCES ?= v1.37.2

# The binaries the specs run: the lab's kube-apiserver, etcd, kubectl and the reference kubeadm (the
# default release's control plane) and the differential spec's further columns (TEST_RELEASES'
# control plane, as make test builds it, and kubeadm TEST_REFERENCES). Linked from the cache, built
# when Go is here; fails when any could not be had, after trying each.
SPEC_BINS = rc=0; PATH='$(GO_PATH)' lab/build-bins.sh control-plane || rc=1; \
  PATH='$(GO_PATH)' LAB_RELEASES='$(TEST_RELEASES)' lab/build-bins.sh control-plane || rc=1; \
  PATH='$(GO_PATH)' LAB_RELEASES='$(TEST_REFERENCES)' lab/build-bins.sh reference || rc=1; [ $$rc = 0 ]
SPEC_BINS_MISSING = test-unit: the lab's binaries the specs run could not all be had$(if $(HAVE_GO),,$(strip \
  ) (no Go toolchain: /usr/local/go or go on PATH)): the specs that need a missing one are pending (not built)
lab-bins-for-specs:
	@$(SPEC_BINS)

# The lab's binaries for the e2e tests: built (or linked from the cache) when Go is here; without Go
# a cache from an earlier build still links; otherwise tests/run.sh counts the e2e tests as failed.
lab-bins-for-test:
	@PATH='$(GO_PATH)' lab/build-bins.sh control-plane node etcdutl || \
	  echo "test: the lab's binaries could not be built$(if $(HAVE_GO),, (no Go toolchain: /usr/local/go or go on PATH)): the e2e tests will count as failed"
	@PATH='$(GO_PATH)' LAB_RELEASES='$(TEST_RELEASES)' lab/build-bins.sh control-plane && \
	  PATH='$(GO_PATH)' LAB_RELEASES='$(TEST_REFERENCES)' lab/build-bins.sh reference || \
	  echo "test: the further releases ($(TEST_RELEASES), kubeadm $(TEST_REFERENCES)) could not be built: their tests will count as failed"
	@$(if $(strip $(TEST_NODE_RELEASES)),PATH='$(GO_PATH)' LAB_RELEASES='$(TEST_NODE_RELEASES)' lab/build-bins.sh node || \
	  echo "test: the node sets of $(TEST_NODE_RELEASES) could not be built: their tests will count as failed")
	@lab/build-images.sh || echo "test: the real-kubelet lab's images could not be built: its tests will count as failed"

# The engine and the specs under AddressSanitizer + UndefinedBehaviorSanitizer.
asan:
	$(MAKE) B=build-asan BIN=build-asan/moonadm CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  build-asan/moonadm $(patsubst $(B)/%,build-asan/%,$(CTESTS))
	MOONADM_BIN=build-asan/moonadm MOONADM_NO_E2E=1 ASAN_OPTIONS=detect_leaks=0 tests/run.sh build-asan

valgrind: $(CTESTS)
	@for t in $(CTESTS); do valgrind -q --error-exitcode=9 --leak-check=full --suppressions=tests/valgrind.supp $$t >/dev/null || exit 1; done; echo "valgrind: clean"

# Every sanitizer pass CI runs: the C tests and the specs under ASan+UBSan, the engine tests under valgrind.
sanitizers: asan valgrind

# The test build with the fault-injection hooks (engine/testhooks.h): bin/moonadm-hooks, for the
# crash-anywhere and secrets e2e tests (MOONADM_CRASH_AFTER, MOONADM_HOOK_LOG).
HOOKS_BIN := bin/moonadm-hooks
test-hooks:
	@$(MAKE) -s B=build-hooks BIN=$(HOOKS_BIN) CFLAGS="-O2 -g -DMA_TEST_HOOKS" $(HOOKS_BIN)

# libFuzzer harnesses (tests/fuzz/fuzz_*.c), built with clang against an instrumented engine and
# bindings in build-fuzz; each runs FUZZ_SECONDS from its committed seed corpus (tests/fuzz/corpus/NAME)
# plus a scratch corpus in build-fuzz/corpus/NAME. A crash stops `make fuzz` and leaves its input
# (crash-*) in build-fuzz: it becomes a regression test under tests/regress/.
FUZZ_SECONDS ?= 15
FUZZ_FLAGS   := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_NAMES   := $(patsubst tests/fuzz/%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZERS      := $(patsubst %,build-fuzz/fuzz/%,$(FUZZ_NAMES))
# (not libm_lazy.o: a fuzzer links libm, and libFuzzer's own math calls need no detour)
FUZZ_BIND    := $(filter-out build-fuzz/bindings/main.o build-fuzz/bindings/libm_lazy.o,$(patsubst %.c,build-fuzz/%.o,$(BIND_SRC)))
fuzz-build: build/embed
	@mkdir -p build-fuzz && cp -p build/embed build-fuzz/embed && touch build-fuzz/embed # a host tool: not instrumented
	$(MAKE) B=build-fuzz CC=clang CFLAGS="$(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -Wno-unused-command-line-argument" \
	  build-fuzz/libmoonadm.a build-fuzz/scripts_embed.o $(FUZZ_BIND)
	$(MAKE) B=build-fuzz CC=clang $(FUZZERS)

build-fuzz/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_lua.h build-fuzz/libmoonadm.a build-fuzz/scripts_embed.o $(FUZZ_BIND)
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) -fsanitize=fuzzer -std=c11 -D_GNU_SOURCE -pthread $(PKG_CFLAGS) \
	  -DFUZZ_LUA_DIR='"$(CURDIR)/tests/fuzz/lua"' -Iengine -Ibindings -o $@ $< \
	  $(if $(findstring fuzz_lua_,$*),$(FUZZ_BIND) build-fuzz/scripts_embed.o) build-fuzz/libmoonadm.a $(LDLIBS)

fuzz: fuzz-build
	@for f in $(FUZZ_NAMES); do \
	  mkdir -p build-fuzz/corpus/$$f build-fuzz/artifacts; \
	  echo "== $$f ($(FUZZ_SECONDS)s)"; \
	  build-fuzz/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
	    -artifact_prefix=build-fuzz/artifacts/$$f- build-fuzz/corpus/$$f tests/fuzz/corpus/$$f 2>build-fuzz/$$f.log \
	    || { tail -40 build-fuzz/$$f.log; echo "fuzz: $$f found a crash: build-fuzz/artifacts/$$f-*"; exit 1; }; \
	  grep -E 'stat::number_of_executed_units|stat::new_units_added' build-fuzz/$$f.log | tr '\n' ' '; echo; \
	done; echo "fuzz: clean"

lab-bins:
	@PATH='$(GO_PATH)' lab/build-bins.sh control-plane

# What the real-kubelet lab adds (kubelet, kube-proxy, containerd v2, crictl, coredns, its image
# tool and pause) and its images (lab/build-images.sh, from those and the control plane's
# binaries): only `lab up --kubelet real` and the tests that run it need these. With
# LAB_RELEASES="v1.36.3 ..." also those releases' control planes and node sets (their kubelet,
# kube-proxy and coredns), whose images then join the archive: `lab up --kubelet real
# --kubernetes-version v1.36.3`, and a real-kubelet upgrade to them.
lab-bins-node:
	@PATH='$(GO_PATH)' LAB_RELEASES= lab/build-bins.sh control-plane node etcdutl
	@$(if $(strip $(LAB_RELEASES)),PATH='$(GO_PATH)' LAB_RELEASES='$(LAB_RELEASES)' lab/build-bins.sh control-plane node)
	@lab/build-images.sh

# The README's first command: Debian packages (as root), bin/moonadm, the lab's binaries, a lab.
demo:
	@tools/deps.sh install
	@$(MAKE) --no-print-directory $(BIN)
	@$(MAKE) --no-print-directory lab-bins
	@tools/demo.sh

# Installed as users install kubeadm: the binary, a man page per command, bash/zsh/fish completions
# and the kubelet's systemd drop-in (packaging/10-kubeadm.conf). The man pages and completions come
# from the binary (`--help` of every command, `moonadm completion SHELL`).
PREFIX         ?= /usr/local
DESTDIR        ?=
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
install: $(BIN)
	@DESTDIR='$(DESTDIR)' PREFIX='$(PREFIX)' SYSTEMDUNITDIR='$(SYSTEMDUNITDIR)' packaging/install.sh $(BIN)

# build/moonadm_<version>_<arch>.deb: `make install DESTDIR=<stage> PREFIX=/usr` packed by dpkg-deb,
# Depends from dpkg-shlibdeps and the Lua modules the scripts load (packaging/build-deb.sh).
DEB_OUT ?= $(B)
deb: $(BIN)
	@MAKE='$(MAKE)' packaging/build-deb.sh $(BIN) $(DEB_OUT)

bench: $(BIN)
	bench/run.sh

clean:
	rm -rf build build-asan build-hooks build-fuzz build-plain bin
