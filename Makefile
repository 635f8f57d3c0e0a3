# weft build. Plain GNU make: every .c under src/basic and src/shared goes into one static library
# (libweft.a) that every executable, unit test and fuzzer links; each directory under src/plugins/
# and src/ipam/ is one plugin executable named after the directory. Adding a file needs no edit here.
#
#   make              build everything into build/
#   make SAN=1        ASan+UBSan build into build-san/
#   make check        unit tests + fuzz corpus replay + netns tests (root) + sanitizer run
#   make clean

CC      ?= cc
SAN     ?= 0
ifeq ($(SAN),1)
BUILD   ?= build-san
else
BUILD   ?= build
endif

PKGS    := jansson libmnl libnftables libcurl yaml-0.1
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# weftd only (WireGuard keys, src/daemon/wireguard/): libcrypto. Kept out of PKG_LIBS so the host
# suite, which links PKG_LIBS when dynamic, never gains it.
DAEMON_PKGS := libcrypto
DAEMON_PKG_CFLAGS := $(shell pkg-config --cflags $(DAEMON_PKGS) 2>/dev/null)
DAEMON_PKG_LIBS   := $(shell pkg-config --libs $(DAEMON_PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wmissing-prototypes -Wstrict-prototypes -Wvla \
           -Wno-unused-parameter -Wno-format-nonliteral
CFLAGS  ?= -O2 -g
override CFLAGS += -std=gnu17 $(WARN) -D_GNU_SOURCE -Isrc $(PKG_CFLAGS) $(DAEMON_PKG_CFLAGS) -MMD -MP
override LDFLAGS += -Wl,--as-needed
ifeq ($(SAN),1)
override CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -O1
override LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRCS    := $(sort $(wildcard src/basic/*.c src/shared/*/*.c))
LIB_OBJS    := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LIB         := $(BUILD)/libweft.a

PLUGIN_DIRS := $(sort $(wildcard src/plugins/*/ src/ipam/*/))
PLUGIN_NAMES := $(sort $(foreach d,$(PLUGIN_DIRS),$(notdir $(patsubst %/,%,$(d)))))
MULTICALL   := $(BUILD)/bin/weft-plugins
MC_GEN      := $(BUILD)/gen
PLUGINS     := $(MULTICALL) $(foreach n,$(PLUGIN_NAMES),$(BUILD)/bin/$(n))

# What lands on a host (the plugins) is statically linked: no loader, no shared library, no
# dlopen(). Debian 12 ships libjansson.a but no static libmnl, libnftnl or libnftables:
# tools/build-static-deps.sh builds those from Debian's source packages into $(STATIC_DEPS)
# (tools/install-deps.sh runs it). STATIC=auto (default): static when those archives are there;
# STATIC=1: they must be (the build fails otherwise); STATIC=0: dynamic host suite, libnftables
# dlopen()ed as before. Sanitizer builds are dynamic (ASan's runtime is a shared library).
# $(BUILD)/linkage records the choice; test-static-suite checks build/bin against it.
STATIC_DEPS ?= build/static-deps
STATIC  ?= auto
ifeq ($(SAN),1)
override STATIC := 0
endif
ifeq ($(STATIC),auto)
HOST_STATIC := $(if $(wildcard $(STATIC_DEPS)/.stamp),1,0)
else
HOST_STATIC := $(if $(filter 1,$(STATIC)),1,0)
endif
LINKAGE_STAMP := $(BUILD)/linkage
ifeq ($(HOST_STATIC),1)
# -static: glibc's static libc; libnftables is linked, not loaded. --gc-sections drops what the
# archives carry and no plugin calls.
HOST_LDFLAGS := -static -Wl,--gc-sections
HOST_LIBS    := -L$(STATIC_DEPS)/lib -lnftables -lnftnl -lmnl -ljansson
NFT_CTX_CFLAGS :=
else
HOST_LDFLAGS :=
HOST_LIBS    := $(PKG_LIBS)
# dynamic host suite: keep libnftables out of every plugin's exec (nft-ctx.c)
NFT_CTX_CFLAGS := -DWEFT_NFT_DLOPEN
endif

# weftd: src/daemon/weftd.c is main(); every other daemon file goes into libweftd.a, which the
# unit tests link too, so datastores, backends and reconcilers are testable without the binary.
DAEMON_SRCS := $(sort $(wildcard src/daemon/*.c src/daemon/*/*.c))
DAEMON_LIB_SRCS := $(filter-out src/daemon/weftd.c,$(DAEMON_SRCS))
DAEMON_LIB  := $(BUILD)/libweftd.a
TOOL_SRCS   := $(sort $(wildcard src/tool/*.c))
# src/tool/weft.c is the tool's main(); the rest goes into libweft-tool.a, which unit tests link.
TOOL_LIB_SRCS := $(filter-out src/tool/weft.c,$(TOOL_SRCS))
TOOL_LIB    := $(BUILD)/libweft-tool.a
# build/bin mirrors /opt/cni/bin (every plugin, usable as CNI_PATH) plus weftd; the runtime tool
# `weft` (installed as /usr/bin/weft) lives in build/tool/ because the `weft` CNI plugin owns
# build/bin/weft.
PROGRAMS    := $(if $(wildcard src/daemon/weftd.c),$(BUILD)/bin/weftd) $(if $(TOOL_SRCS),$(BUILD)/tool/weft)

# Unit tests (cmocka), one executable each in $(BUILD)/test/, named after the file: test/unit/ holds
# those that need nothing, test/netns/unit/ those that need root, a private network namespace or a
# real etcd (they skip without them). A name may be in one directory only.
UNIT_SRCS   := $(sort $(wildcard test/unit/test-*.c test/netns/unit/test-*.c))
UNIT_TESTS  := $(addprefix $(BUILD)/test/,$(basename $(notdir $(UNIT_SRCS))))
$(if $(filter-out $(words $(UNIT_TESTS)),$(words $(sort $(UNIT_TESTS)))),\
  $(error unit test names must be unique across test/unit/ and test/netns/unit/))
FUZZ_SRCS   := $(sort $(wildcard test/fuzz/fuzz-*.c))
FUZZ_REPLAY := $(FUZZ_SRCS:test/fuzz/%.c=$(BUILD)/test/%-replay)

all: $(PLUGINS) $(PROGRAMS) $(UNIT_TESTS) $(FUZZ_REPLAY)

# The dependency file names the object both relative to the tree and absolute, so a build dir
# built once as BUILD=build and once as BUILD=$PWD/build still sees header changes.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MT $(patsubst $(CURDIR)/%,%,$(abspath $@)) -MT $(abspath $@) -c -o $@ $<

# The linkage (static/dynamic) changes how nft-ctx.c is compiled and how the suite is linked.
$(LINKAGE_STAMP): FORCE
	@mkdir -p $(@D)
	@echo $(if $(filter 1,$(HOST_STATIC)),static,dynamic) >$@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@
$(BUILD)/obj/src/shared/nft/nft-ctx.o: override CFLAGS += $(NFT_CTX_CFLAGS)
$(BUILD)/obj/src/shared/nft/nft-ctx.o: $(LINKAGE_STAMP)
ifeq ($(STATIC),1)
$(MULTICALL): $(STATIC_DEPS)/.stamp
$(STATIC_DEPS)/.stamp:
	tools/build-static-deps.sh $(STATIC_DEPS)
endif

$(LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# The host suite: ONE multi-call executable, $(MULTICALL) (src/multicall/), and every plugin name
# in build/bin a hard link to it, as in /opt/cni/bin after `weft install-cni`. Each plugin
# directory's objects are compiled with -Dmain=cni_<name>_main; the dispatch table and those
# prototypes are generated from the directory list (written only when it changes).
applet_fn = cni_$(subst -,_,$(1))_main
PLUGIN_OBJS :=
define plugin_rule
$(1)_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard $(2)*.c))
PLUGIN_OBJS += $$($(1)_OBJS)
$$($(1)_OBJS): override CFLAGS += -Dmain=$(call applet_fn,$(1)) -include $(MC_GEN)/multicall-applets.h
$$($(1)_OBJS): $(MC_GEN)/multicall-applets.h
$(BUILD)/bin/$(1): $(MULTICALL)
	ln -f $$< $$@
endef
$(foreach n,$(PLUGIN_NAMES),$(eval $(call plugin_rule,$(n),$(filter %/$(n)/,$(PLUGIN_DIRS)))))

$(MC_GEN)/multicall-applets.h: FORCE
	@mkdir -p $(@D)
	@{ echo '/* Generated by the Makefile from the plugin directories. */'; echo '#pragma once'; \
	  $(foreach n,$(PLUGIN_NAMES),echo 'int $(call applet_fn,$(n))(int argc, char *argv[]);';) } >$@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@
$(MC_GEN)/multicall-applets.c: FORCE
	@mkdir -p $(@D)
	@{ echo '/* Generated by the Makefile from the plugin directories. */'; \
	  echo '#include "multicall/multicall.h"'; echo '#include "multicall-applets.h"'; \
	  echo 'const MulticallApplet multicall_applets[] = {'; \
	  $(foreach n,$(PLUGIN_NAMES),echo '	{ "$(n)", $(call applet_fn,$(n)) },';) \
	  echo '};'; echo 'const size_t multicall_n_applets = sizeof(multicall_applets) / sizeof(multicall_applets[0]);'; } >$@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@
$(BUILD)/obj/gen/multicall-applets.o: $(MC_GEN)/multicall-applets.c $(MC_GEN)/multicall-applets.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I$(MC_GEN) -c -o $@ $<

$(MULTICALL): $(BUILD)/obj/src/multicall/multicall.o $(BUILD)/obj/gen/multicall-applets.o $(PLUGIN_OBJS) $(LIB) \
		$(LINKAGE_STAMP)
	@mkdir -p $(@D)
	$(CC) $(HOST_LDFLAGS) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(HOST_LIBS)

$(DAEMON_LIB): $(DAEMON_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/weftd: $(BUILD)/obj/src/daemon/weftd.o $(DAEMON_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(DAEMON_PKG_LIBS)

# The tool links libweft.a only: the etcd client and the object decoders it uses (weft apply/get,
# pod records) are in src/shared/. It must not need libweftd.a.
$(BUILD)/tool/weft: $(BUILD)/obj/src/tool/weft.o $(TOOL_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lm

$(TOOL_LIB): $(TOOL_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# One explicit rule per unit test (not a pattern over one directory: an object left in build/obj/
# from where a test used to be must not be linked instead of the source's new place).
define unit_rule
$(BUILD)/test/$(basename $(notdir $(1))): $(BUILD)/obj/$(1:.c=.o) $(if $(TOOL_LIB_SRCS),$(TOOL_LIB)) \
		$(if $(DAEMON_LIB_SRCS),$(DAEMON_LIB)) $(LIB)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(PKG_LIBS) $$(DAEMON_PKG_LIBS) -lcmocka -lm
endef
$(foreach s,$(UNIT_SRCS),$(eval $(call unit_rule,$(s))))

# Fuzz targets, one harness per parser of outside bytes (test/fuzz/fuzz-*.c, corpus in
# test/fuzz/corpus/<name>/). The replay build (plain compiler, a main() that feeds every corpus
# file) runs in `make check`; the libFuzzer build needs clang: `make fuzz` compiles both libraries
# once with coverage + ASan + UBSan (aborting on any report) into build-fuzz/ and links each harness.
$(BUILD)/test/fuzz-%-replay: $(BUILD)/obj/test/fuzz/fuzz-%.o $(BUILD)/obj/test/fuzz/replay-main.o \
		$(if $(TOOL_LIB_SRCS),$(TOOL_LIB)) $(if $(DAEMON_LIB_SRCS),$(DAEMON_LIB)) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(DAEMON_PKG_LIBS) -lm

$(BUILD)/obj/test/fuzz/replay-main.o: test/fuzz/replay-main.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

FUZZ_DIR    := build-fuzz
FUZZ_CC     := clang
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=gnu17 -g -O1 -D_GNU_SOURCE -Isrc $(PKG_CFLAGS) $(DAEMON_PKG_CFLAGS) -MMD -MP $(FUZZ_SAN)
FUZZ_LIB    := $(FUZZ_DIR)/libweft.a
FUZZ_DLIB   := $(FUZZ_DIR)/libweftd.a
FUZZ_TLIB   := $(FUZZ_DIR)/libweft-tool.a
FUZZ_BIN    := $(FUZZ_SRCS:test/fuzz/%.c=$(FUZZ_DIR)/%)
fuzz: $(FUZZ_BIN)
$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(FUZZ_LIB): $(LIB_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)
	rm -f $@ && ar rcs $@ $^
$(FUZZ_DLIB): $(DAEMON_LIB_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)
	rm -f $@ && ar rcs $@ $^
$(FUZZ_TLIB): $(TOOL_LIB_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)
	rm -f $@ && ar rcs $@ $^
$(FUZZ_DIR)/fuzz-%: $(FUZZ_DIR)/obj/test/fuzz/fuzz-%.o $(if $(TOOL_LIB_SRCS),$(FUZZ_TLIB)) \
		$(if $(DAEMON_LIB_SRCS),$(FUZZ_DLIB)) $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) $(DAEMON_PKG_LIBS) -lm
# Keep the harness objects (make would delete them as intermediates and rebuild every time).
.SECONDARY: $(FUZZ_SRCS:test/fuzz/%.c=$(BUILD)/obj/test/fuzz/%.o) $(FUZZ_SRCS:test/fuzz/%.c=$(FUZZ_DIR)/obj/test/fuzz/%.o)

# The README's test command. Installs what is missing (a no-op when all is present), builds, runs
# every suite, including the sanitizer pass.
check:
	./tools/install-deps.sh
	$(MAKE) all
	./tools/run-tests

# The README's first command: install what is missing, build, run the 3-node cluster demo.
demo:
	./tools/install-deps.sh
	$(MAKE) all
	./tools/demo $(DEMO_ARGS)

# The DaemonSet image, built here with no registry and no base image: deploy/image-rootfs.sh
# stages the stripped binaries and exactly the libraries they load, podman builds
# deploy/Containerfile (FROM scratch) on it and saves an OCI archive (for `ctr images import`,
# `podman load`, or a push). PODMAN may carry storage options (test/runtime/test-image.sh does).
PODMAN  ?= podman
IMAGE   ?= localhost/weft:latest
image: $(PLUGINS) $(PROGRAMS)
	deploy/image-rootfs.sh $(BUILD) $(BUILD)/image
	$(PODMAN) build --quiet -f deploy/Containerfile -t $(IMAGE) $(BUILD)/image
	rm -f $(BUILD)/image/weft-image.tar
	$(PODMAN) save --quiet --format oci-archive -o $(BUILD)/image/weft-image.tar $(IMAGE)
	@echo "image $(IMAGE): $$(du -m --apparent-size $(BUILD)/image/weft-image.tar | cut -f1) MB archive $(BUILD)/image/weft-image.tar"

clean:
	rm -rf build build-san build-fuzz

.PHONY: all check clean demo fuzz image FORCE
FORCE:
-include $(shell find $(BUILD)/obj $(if $(filter fuzz $(FUZZ_DIR)/%,$(MAKECMDGOALS)),$(FUZZ_DIR)/obj) -name '*.d' 2>/dev/null)
