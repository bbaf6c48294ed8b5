# mpm-ng top-level build (Linux).  `make` builds the modules with the flags
# of the installed httpd (apxs); `make check` installs what it needs, builds
# and runs every test; `make demo` starts a private server.
# Windows: see Makefile.win (MSVC) and build/ (mingw-w64 cross-build).

APXS      ?= apxs
APR_CONFIG = $(shell $(APXS) -q APR_CONFIG 2>/dev/null || echo apr-1-config)
CC        := $(shell $(APXS) -q CC 2>/dev/null || echo cc)
HTTPD_INC := $(shell $(APXS) -q INCLUDEDIR 2>/dev/null)
MODDIR    := $(shell $(APXS) -q LIBEXECDIR 2>/dev/null)
APR_CPPFLAGS := $(shell $(APR_CONFIG) --cppflags --includes 2>/dev/null)

OUT      := out
SANITIZE ?=
ifeq ($(SANITIZE),)
  VARIANT  := plain
  SANFLAGS :=
else
  VARIANT  := san
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined
endif
OBJ := $(OUT)/obj-$(VARIANT)

WARN   := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wpointer-arith \
          -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
          -Wno-format-nonliteral
CFLAGS ?= -O2 -g
ALL_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -pthread $(SANFLAGS) \
             -I$(HTTPD_INC) $(APR_CPPFLAGS) -Iinclude -MMD -MP

# Helpers every module compiles in (common/, headers in include/; their
# symbols are hidden, so each .so keeps its own copy).
COMMON_SRCS := $(wildcard common/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(OBJ)/%.o)

RP_SRCS := $(wildcard mpm_reuseport/*.c)
RP_OBJS := $(RP_SRCS:%.c=$(OBJ)/%.o) $(COMMON_OBJS)
RP_SO   := $(OUT)/mod_mpm_reuseport.so

FHC_SRCS := $(wildcard mod_fhcache/*.c)
FHC_OBJS := $(FHC_SRCS:%.c=$(OBJ)/%.o) $(COMMON_OBJS)
FHC_SO   := $(OUT)/mod_fhcache.so

UNIT_TESTS := $(patsubst test/unit/%.c,$(OBJ)/test/%,$(wildcard test/unit/check_*.c))

.PHONY: all check unit unit-run fuzz integration regress deps demo demo-stop install \
        uninstall bench clean win win-dist win-check win-regress win-bench deb intree soak \
        check-stress \
        compat FORCE

all: $(RP_SO) $(FHC_SO)

# The .so is rebuilt when the variant (plain/sanitized) changes.
$(OUT)/.variant: FORCE
	@mkdir -p $(OUT)
	@[ "$$(cat $@ 2>/dev/null)" = "$(VARIANT)" ] || echo $(VARIANT) > $@

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(RP_SO): $(RP_OBJS) $(OUT)/.variant
	$(CC) -shared -pthread $(SANFLAGS) $(LDFLAGS) -o $@ $(RP_OBJS)

$(FHC_SO): $(FHC_OBJS) $(OUT)/.variant
	$(CC) -shared -pthread $(SANFLAGS) $(LDFLAGS) -o $@ $(FHC_OBJS)

# Unit tests (Check) for the platform-neutral pieces.
$(OBJ)/test/check_int: test/unit/check_int.c $(OBJ)/common/mpmng_int.o
$(OBJ)/test/check_settings: test/unit/check_settings.c $(OBJ)/mpm_reuseport/rp_settings.o \
    $(OBJ)/common/mpmng_int.o
$(OBJ)/test/check_stock: test/unit/check_stock.c $(OBJ)/mpm_reuseport/rp_stock.o
$(OBJ)/test/check_timeq: test/unit/check_timeq.c $(OBJ)/mpm_reuseport/rp_timeq.o
$(OBJ)/test/check_reqscan: test/unit/check_reqscan.c $(OBJ)/mpm_reuseport/rp_reqscan.o
$(OBJ)/test/check_rtimeout: test/unit/check_rtimeout.c $(OBJ)/mpm_reuseport/rp_rtimeout.o
$(OBJ)/test/check_lf: test/unit/check_lf.c $(OBJ)/mpm_reuseport/rp_lf.o
$(OBJ)/test/check_balance_rule: test/unit/check_balance_rule.c \
    $(OBJ)/mpm_reuseport/rp_balance_rule.o
$(OBJ)/test/check_relief_rule: test/unit/check_relief_rule.c \
    $(OBJ)/mpm_reuseport/rp_relief_rule.o
$(OBJ)/test/check_drop_rule: test/unit/check_drop_rule.c $(OBJ)/mpm_reuseport/rp_drop_rule.o
$(OBJ)/test/check_cpumap: test/unit/check_cpumap.c $(OBJ)/mpm_reuseport/rp_cpumap.o
$(OBJ)/test/check_fhcache: test/unit/check_fhcache.c \
    $(OBJ)/mod_fhcache/fhc_cache.o $(OBJ)/mod_fhcache/fhc_watchset.o
$(OBJ)/test/check_tally: test/unit/check_tally.c $(OBJ)/mod_fhcache/fhc_tally.o
# Log-once needs APR (atomics, formatting); httpd's logger is stood in for.
$(OBJ)/test/check_once: test/unit/check_once.c $(OBJ)/common/mpmng_once.o
$(OBJ)/test/check_once: UNIT_FLAGS = -I$(HTTPD_INC) $(APR_CPPFLAGS) \
    $$($(APR_CONFIG) --link-ld)
# mpm_winnt_ng's pure parts build natively too.
$(OBJ)/test/check_wn: test/unit/check_wn.c \
    $(OBJ)/mpm_winnt_ng/wn_settings.o $(OBJ)/mpm_winnt_ng/wn_reuse_policy.o
$(OBJ)/test/%:
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) -pthread $(SANFLAGS) -Iinclude -Impm_reuseport -Imod_fhcache -Impm_winnt_ng \
	    -o $@ $^ $(UNIT_FLAGS) \
	    $$(pkg-config --cflags --libs check)

# unit, integration and regress install what they need first (as root), then
# build in a new make: the apxs values above may have been read before
# apache2-dev was there.
unit:
	@build/deps.sh base
	@$(MAKE) --no-print-directory unit-run

unit-run: $(UNIT_TESTS)
	@rc=0; for t in $(UNIT_TESTS); do $$t || rc=1; done; exit $$rc

deps:
	@build/deps.sh base demo test fuzz regress fhcache intree deb win compat

# Our parsers under libFuzzer (ASan/UBSan): a million inputs per target by
# default; FUZZ_ARGS="--seconds 600" for longer, "--merge" keeps new finds
# in test/fuzz/corpus/.  Then a million mutated requests, HTTP/2 frames and
# TLS records over the network to a server with our modules built with
# ASan/UBSan (~20 min; FUZZ_NET_INPUTS=N).  make check runs short versions.
FUZZ_NET_INPUTS ?= 1000000
SAN_PRELOAD = $$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)
fuzz:
	@build/deps.sh fuzz
	@test/fuzz/run.sh $(FUZZ_ARGS)
	@$(MAKE) --no-print-directory -s SANITIZE=1 all
	@MPMNG_FUZZ_INPUTS=$(FUZZ_NET_INPUTS) MPMNG_LD_PRELOAD="$(SAN_PRELOAD)" \
	    python3 -m mpmng_py.integration -k test_fuzz_input -v

integration:
	@build/deps.sh base test
	@$(MAKE) --no-print-directory all
	python3 -m mpmng_py.integration

# 30 minutes of mixed load (keep-alive, new connections, TLS, HTTP/2, CGI,
# a proxied backend, uploads, 1 MiB downloads) with a graceful restart every
# 60 s, a rename-over deploy every 5 s and children killed now and then
# (mpmng_py/soak/; results in out/soak/<time>/).  make check runs 3
# minutes of it.  SOAK_SECONDS=N for another length.  soak.png needs gnuplot
# (gnuplot-nox, in build/packages/bench.txt); without it the plot is skipped.
SOAK_SECONDS ?= 1800
soak:
	@build/deps.sh base test
	@$(MAKE) --no-print-directory all
	python3 -m mpmng_py.soak --seconds $(SOAK_SECONDS) $(SOAK_ARGS)

# The timing-sensitive tests (restarts, stops, upgrades, signals, idle
# memory, slow clients: mpmng_py/integration/stress.py) STRESS_REPEAT times
# and the soak as often (STRESS_SOAK_SECONDS each), beside STRESS_HOGS
# busy loops; each test's failure rate (test/stress/run.sh).  make check
# runs a few rounds of the restart, stop and signal tests.
STRESS_REPEAT ?= 50
STRESS_HOGS ?= 2
check-stress:
	@build/deps.sh base test
	@$(MAKE) --no-print-directory all
	STRESS_REPEAT=$(STRESS_REPEAT) STRESS_HOGS=$(STRESS_HOGS) test/stress/run.sh

regress:
	@build/deps.sh base test regress
	@$(MAKE) --no-print-directory all
	test/regress/run.sh event reuseport --with-fhcache

# Everything, in order; prints one summary and fails if anything failed.
check: deps
	@SANITIZE="$(SANITIZE)" test/check.sh

# The demo installs what it needs first (as root; otherwise deps.sh names
# what is missing and stops), then builds in a new make: the apxs values
# above were read when this make started, maybe before apache2-dev was there.
DEMO_ENV = MPMNG_OUT="$(abspath $(OUT))"
demo:
	@build/deps.sh demo
	@$(MAKE) --no-print-directory all
	@$(DEMO_ENV) python3 -m mpmng_py.demo start --port "$(or $(PORT),8080)" \
	    $(if $(DOCROOT),--docroot "$(DOCROOT)")

demo-stop:
	@$(DEMO_ENV) python3 -m mpmng_py.demo stop

install: all
	build/install.sh "$(RP_SO)" "$(MODDIR)" "$(DESTDIR)"

uninstall:
	build/install.sh --uninstall "$(RP_SO)" "$(MODDIR)" "$(DESTDIR)"

bench:
	@build/deps.sh base bench
	@$(MAKE) --no-print-directory all
	python3 -m mpmng_py.bench $(BENCH_ARGS)

# Debian packages (libapache2-mod-mpm-reuseport, libapache2-mod-fhcache)
# into out/deb/, checked with lintian.
deb:
	@build/deps.sh deb
	build/deb/build.sh

# httpd built from Debian's apache2 source with mpm-ng in its tree
# (build/intree/install.sh), static and shared MPM, tested (out/intree/).
intree:
	@build/deps.sh base test intree
	test/intree/run.sh

# The older httpd releases LTS distributions ship (2.4.37 RHEL 8, 2.4.52
# Ubuntu 22.04, 2.4.58 Ubuntu 24.04, 2.4.62 RHEL 9): each built from its
# tarball in MPMNG_HTTPD_SOURCES (default ../shared/httpd-src; kept in
# /var/cache/mpm-ng/httpd), our modules built with its apxs without a warning,
# the whole integration suite, the upgrade to Debian's apache2 under load
# and httpd's regression suite against that release's mpm_event
# (mpmng_py/compat).  make check runs the integration tests of what differs.
compat:
	@build/deps.sh base test regress compat
	python3 -m mpmng_py.compat $(COMPAT_ARGS)

# Windows: httpd.exe with mpm_winnt_ng (and a stock one to compare) and
# every module httpd builds for Windows, cross-built with mingw-w64 into
# build/win/out/ (libraries cached by key in ~/.cache/mpm-ng/win-libs), tested
# under wine64.  win-dist: the zip a Windows user unzips, in out/win/.
win:
	@build/deps.sh win
	build/win/build.sh

win-dist: win
	build/win/dist.sh

win-check: win-dist
	python3 -m mpmng_py.win

# httpd's perl-framework against httpd.exe under wine64: stock mpm_winnt vs
# mpm_winnt_ng, each also with mod_fhcache (test/win/regress/README.md).
# make check runs the short list (stock vs ng+fhcache, --subset mpm).
win-regress: win
	@build/deps.sh base test regress win
	python3 -m mpmng_py.winregress stock ng --with-fhcache

win-bench: win
	@build/deps.sh bench
	python3 -m mpmng_py.bench.win $(BENCH_ARGS)

clean:
	rm -rf $(OUT)

-include $(sort $(RP_OBJS:.o=.d) $(FHC_OBJS:.o=.d))
