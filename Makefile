# rein — one non-recursive GNU Makefile.
#
#   make                 build/librein.a, build/rein, the tests and helpers
#   make check           install missing deps, build, run every test
#   make serve           the same set-up, then exec `rein serve` (stdout clean)
#   make check-grammars  validate grammars/*.json against tests/fixtures
#   make bench           benchmarks, each beside its floor measured in the same run
#   make SAN=1 check     ASan + UBSan build in build-san/
#   make fuzz            libFuzzer targets (clang) in build-fuzz/
#   make fuzz-smoke      each fuzz target for FUZZ_SECONDS (default 30)
#   make install PREFIX=/usr/local [DESTDIR=...]
#
# CI=true or WERROR=1 turns warnings into errors.  V=1 shows full commands.

SHELL := /bin/bash
.DEFAULT_GOAL := all

ifeq ($(origin CC),default)
CC := gcc
endif

V ?= 0
ifeq ($(V),0)
Q := @
say = @printf '  %-6s %s\n' $(1) $(2)
else
Q :=
say = @:
endif

SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD ?= build
SAN_FLAGS :=
endif

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
# The shipped grammars; the loader looks for them at <bin>/../share/rein/
# grammars (src/squash/grammar.h), so this is $(BINDIR)/../share/rein/grammars.
GRAMMARDIR ?= $(DATADIR)/rein/grammars
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

# Debian packages rein builds on (scripts/deps-debian.sh installs them).
PKGS := jansson libpcre2-8 sqlite3 vterm
# Recursive (=) so pkg-config runs only when a rule needs it, after deps.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes \
        -Wmissing-prototypes -Wold-style-definition -Wpointer-arith \
        -Wwrite-strings -Wundef -Wvla -Wnull-dereference -Wimplicit-fallthrough
ifneq ($(filter true 1,$(CI) $(WERROR)),)
WARN += -Werror
endif

OPT ?= -O2
CFLAGS ?= $(OPT) -g
ALL_CFLAGS = -std=gnu11 -D_GNU_SOURCE -pthread $(WARN) $(CFLAGS) $(SAN_FLAGS) \
             -Iinclude -Isrc $(PKG_CFLAGS) -MMD -MP
ALL_LDFLAGS = -pthread $(SAN_FLAGS) $(LDFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -lutil

LIB_SRCS := $(sort $(wildcard src/base/*.c src/term/*.c src/exec/*.c \
              src/supervise/*.c src/squash/*.c src/mcp/*.c))
CLI_SRCS := $(sort $(wildcard src/cli/*.c))
TEST_SRCS := tests/harness.c tests/tutil.c $(sort $(wildcard tests/test_*.c))
TEST_BIN_SRCS := $(sort $(wildcard tests/bin/*.c))
SELFTEST_SRCS := tests/harness.c $(sort $(wildcard tests/selftest/*.c))
BENCH_SRCS := $(sort $(wildcard bench/*.c))
FUZZ_SRCS := $(sort $(wildcard fuzz/fuzz_*.c))

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_BINS := $(TEST_BIN_SRCS:tests/bin/%.c=$(BUILD)/tests/bin/%)
SELFTEST_OBJS := $(SELFTEST_SRCS:%.c=$(BUILD)/obj/%.o)
BENCH_OBJS := $(BENCH_SRCS:%.c=$(BUILD)/obj/%.o)

LIB := $(BUILD)/librein.a
BIN := $(BUILD)/rein
TEST_RUNNER := $(BUILD)/tests/rein-test
SELFTEST := $(BUILD)/tests/harness-selftest
BENCH_BIN := $(BUILD)/rein-bench

all: $(LIB) $(BIN) $(TEST_RUNNER) $(SELFTEST) $(TEST_BINS) $(BENCH_BIN)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	$(call say,AR,$@)
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

$(BIN): $(CLI_OBJS) $(LIB)
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS_ALL)

$(TEST_RUNNER): $(TEST_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(TEST_OBJS) $(LIB) $(LDLIBS_ALL)

# The runner's own test cases (scripts/check-harness.sh), kept out of the
# real suite.
$(SELFTEST): $(SELFTEST_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(SELFTEST_OBJS) $(LIB) $(LDLIBS_ALL)

$(BUILD)/tests/bin/%: tests/bin/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $<

$(BENCH_BIN): $(BENCH_OBJS) $(LIB)
	$(call say,LINK,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(BENCH_OBJS) $(LIB) $(LDLIBS_ALL)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BENCH_OBJS:.o=.d) \
         $(SELFTEST_OBJS:.o=.d)

# ------------------------------------------------------------------ set-up

deps:
	@scripts/deps-debian.sh

# `make check`: deps, then a fresh make (so pkg-config sees what was just
# installed), then every test.  TESTS= narrows to matching test names.
check: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) SAN=$(SAN) scripts/check.sh $(TESTS)

# `make serve`: everything to stderr, then exec the server on stdio.
serve:
	@scripts/deps-debian.sh >&2
	@$(MAKE) -s --no-print-directory all >&2
	@exec $(BIN) serve

# `make check-grammars`: validate grammars/*.json and run tests/fixtures
# through the reference classification (python3, stdlib only).
check-grammars:
	python3 scripts/check-grammars.py

bench: deps
	@$(MAKE) --no-print-directory all
	$(BENCH_BIN) $(BENCH_ARGS)

# ------------------------------------------------------------------- fuzz

FUZZ_BUILD := build-fuzz
FUZZ_CC ?= clang
# The same warnings as every build: a harness that no longer matches a
# struct it fills must not compile into one that aborts at once.
# -MMD: an object older than a header it reads is built again, as in the
# other builds (a struct grown under a stale object reads past its end).
FUZZ_CFLAGS := -std=gnu11 -D_GNU_SOURCE -g -O1 -Iinclude -Isrc $(WARN) \
               -fsanitize=fuzzer-no-link,address,undefined -MMD -MP
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_BINS := $(FUZZ_SRCS:fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_SECONDS ?= 30

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(PKG_CFLAGS) -c -o $@ $<

$(FUZZ_BUILD)/librein.a: $(FUZZ_LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_BUILD)/librein.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< \
	    $(FUZZ_BUILD)/librein.a $(PKG_LIBS) -lutil -pthread

-include $(FUZZ_LIB_OBJS:.o=.d) $(FUZZ_BINS:=.d)

fuzz: $(FUZZ_BINS)

fuzz-smoke: fuzz
	@set -e; for f in $(FUZZ_BINS); do \
	    name=$$(basename $$f); corpus=$(FUZZ_BUILD)/corpus/$$name; \
	    mkdir -p $$corpus; \
	    seeds=; [ -d fuzz/corpus/$$name ] && seeds=fuzz/corpus/$$name; \
	    echo "fuzz: $$name for $(FUZZ_SECONDS)s"; \
	    $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -rss_limit_mb=2048 $$corpus $$seeds 2>$(FUZZ_BUILD)/$$name.log \
	      || { tail -n 60 $(FUZZ_BUILD)/$$name.log; exit 1; }; \
	    grep -E 'stat::number_of_executed_units|Done' $(FUZZ_BUILD)/$$name.log | tail -n 2; \
	done

# ---------------------------------------------------------------- install

install: $(LIB) $(BIN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(PKGCONFIGDIR)
	install -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/rein
	install -m 0644 $(LIB) $(DESTDIR)$(LIBDIR)/librein.a
	install -m 0644 include/rein.h $(DESTDIR)$(INCDIR)/rein.h
	install -m 0644 docs/rein.1 $(DESTDIR)$(MANDIR)/man1/rein.1
	install -d $(DESTDIR)$(GRAMMARDIR)/_shared
	install -m 0644 grammars/*.json $(DESTDIR)$(GRAMMARDIR)/
	install -m 0644 grammars/_shared/*.json $(DESTDIR)$(GRAMMARDIR)/_shared/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCDIR@|$(INCDIR)|g' -e 's|@VERSION@|$(shell sed -n 's/^#define REIN_VERSION_STRING "\(.*\)"/\1/p' include/rein.h)|g' \
	    -e 's|@REQUIRES@|$(PKGS)|g' \
	    rein.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/rein.pc

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/rein $(DESTDIR)$(LIBDIR)/librein.a \
	    $(DESTDIR)$(INCDIR)/rein.h $(DESTDIR)$(MANDIR)/man1/rein.1 \
	    $(DESTDIR)$(PKGCONFIGDIR)/rein.pc
	rm -f $(addprefix $(DESTDIR)$(GRAMMARDIR)/,$(notdir $(wildcard grammars/*.json))) \
	    $(addprefix $(DESTDIR)$(GRAMMARDIR)/_shared/,$(notdir $(wildcard grammars/_shared/*.json)))
	-rmdir $(DESTDIR)$(GRAMMARDIR)/_shared $(DESTDIR)$(GRAMMARDIR) $(DESTDIR)$(DATADIR)/rein 2>/dev/null

clean:
	rm -rf build build-san build-fuzz

.PHONY: all deps check check-grammars serve bench fuzz fuzz-smoke install uninstall clean
