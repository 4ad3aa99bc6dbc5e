# scout build. `make help` lists targets and switches.
#
# Layout conventions (no need to edit this file to add code; docs/architecture.md):
#   <layer>/**/*.cc (LAYERS below)       -> one static archive per layer build/lib/libscout-<layer>.a
#       (except files under a bin/ folder and plugin/abi/exports.cc)
#   test/sim/*.cc                        -> build/lib/libscout-sim.a (the emulated NCCL job)
#   <part>/bin/<name>.cc                 -> tool build/bin/<name>
#   test/sim/bin/scout-sim.cc            -> build/bin/scout-sim (links the emulator; not installed)
#   plugin/abi/{exports,net_exports}.cc + plugin, common -> build/lib/libnccl-profiler-scout.so
#   test/netdelegate/*.cc               -> build/lib/libnccl-net-scouttest{,-min}.so (test delegate)
#   plugin/gpu/*.cu                      -> one fatbin embedded in the plugin (needs nvcc)
#   test/**/*_test.cc                    -> test binary build/test/<name>  (GoogleTest)
#   test/bench/*_bench.cc                -> benchmark binary build/bench/<name>

SHELL := /bin/bash
BUILD ?= build
PREFIX ?= /usr/local
CXX ?= g++
# ccache, when installed, in front of the compiler (objects are path-independent, see TREE_PATHS).
# CCACHE_NOHASHDIR: ccache leaves the working directory out of its hash (by default it hashes it
# whenever debug info is on), so a clone in another folder (CI) hits the entries of this one; the
# only cost is that such objects' debug info names the first folder as compilation directory.
CCACHE ?= $(shell command -v ccache 2>/dev/null)
CCACHE_RUN := $(if $(CCACHE),CCACHE_NOHASHDIR=1 $(CCACHE))
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(CUDA_HOME)/bin/nvcc
# Parallel compiles of `make test` (default: the number of CPUs).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

VERSION := $(shell git describe --always --dirty --tags 2>/dev/null || echo unknown)

# ---------------------------------------------------------------- flags
CPPFLAGS := -Iinclude -I.
# The source and build paths reach only test/support/tmpdir.cc (tests find fixtures and built
# programs through it), so every other object is the same in any checkout (ccache can share it).
TREE_PATHS := -DSCOUT_SOURCE_DIR='"$(CURDIR)"' -DSCOUT_BUILD_DIR='"$(abspath $(BUILD))"'
$(BUILD)/obj/test/support/tmpdir.o: CPPFLAGS += $(TREE_PATHS)
CXXFLAGS := -std=c++20 -fPIC -fvisibility=hidden -fvisibility-inlines-hidden \
            -Wall -Wextra -Wno-unused-parameter -Werror -pthread -ffunction-sections -fdata-sections
LDFLAGS := -pthread
# Optimization and debug info. What ships (the plugin, the tools, their layer archives) and the
# benchmarks: -O2 with line tables (-g1: backtraces and profiles name file and line; full -g
# costs a quarter more compile time). Test code (test/ except test/bench): -Og, which compiles
# in half the time of -O2 and is fast enough for the emulated jobs. DEBUG=1: -O0 -g3 for both.
OPT := -O2 -g1
TEST_OPT := -Og -g1
ifeq ($(DEBUG),1)
  OPT := -O0 -g3
  TEST_OPT := -O0 -g3
endif
$(BUILD)/obj/test/%.o: OPT := $(TEST_OPT)
$(BUILD)/obj/test/bench/%.o: OPT := $(OPT)
SAN :=
ifeq ($(ASAN),1)
  SAN += -fsanitize=address -fno-omit-frame-pointer
endif
ifeq ($(UBSAN),1)
  SAN += -fsanitize=undefined -fno-sanitize-recover=undefined
endif
ifeq ($(TSAN),1)
  SAN += -fsanitize=thread
endif
CXXFLAGS += $(SAN)
LDFLAGS += $(SAN)

# System libraries (Debian packages, see scripts/install-deps.sh).
GLOO_LIBS := -lgloo -lhiredis
TOOL_LIBS := -lsqlite3 $(GLOO_LIBS) -lfmt -lxxhash -lcrypto -ldl -lrt
TEST_LIBS := -lgmock -lgtest_main -lgtest
BENCH_LIBS := -lbenchmark

# ---------------------------------------------------------------- sources
# Layers, lowest first (docs/architecture.md). Each folder is one static archive
# build/lib/libscout-<folder>.a, and every program links them highest first, so a reference
# against the direction does not link; scripts/check-layers.py checks the include graph.
LAYERS := common plugin observer/model observer/ingest observer/detect observer/net replay \
          observer/pipeline observer/replay observer/cluster observer/store observer/ckpt observer/export observer/cli
layer_lib = $(BUILD)/lib/libscout-$(subst /,-,$(1)).a
# Sources of a layer: its .cc files, except programs (bin/) and folders that are layers of their
# own (observer/*). plugin/abi/exports.cc and net_exports.cc are the plugin's ABI boundary (the
# profiler and net tables), linked only into the .so.
EXPORTS_CC := plugin/abi/exports.cc plugin/abi/net_exports.cc
layer_cc = $(filter-out $(EXPORTS_CC),$(shell find $(1) -name '*.cc' -not -path '*/bin/*' 2>/dev/null | sort))
LAYER_LIBS := $(foreach l,$(LAYERS),$(call layer_lib,$(l)))
# Link order: highest layer first.
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
LINK_LIBS := $(call reverse,$(LAYER_LIBS))

BIN_CC := $(shell find plugin observer replay -path '*/bin/*.cc' 2>/dev/null | sort)
SIM_BIN_CC := $(shell find test/sim/bin -name '*.cc' 2>/dev/null | sort)
SIM_CC := $(shell find test/sim -maxdepth 1 -name '*.cc' -not -name '*_test.cc' 2>/dev/null | sort)
TEST_CC := $(shell find test -name '*_test.cc' -not -path 'test/fixtures/*' -not -path 'test/netdelegate/*' -not -path 'test/profdelegate/*' 2>/dev/null | sort)
BENCH_CC := $(shell find test/bench -name '*_bench.cc' 2>/dev/null | sort)
TEST_SUPPORT_CC := $(shell find test/support -name '*.cc' 2>/dev/null | sort)
CU_SRCS := $(shell find plugin/gpu -name '*.cu' 2>/dev/null | sort)

obj = $(patsubst %.cc,$(BUILD)/obj/%.o,$(1))
SIM_OBJ := $(call obj,$(SIM_CC))
SUPPORT_OBJ := $(call obj,$(TEST_SUPPORT_CC))
EXPORTS_OBJ := $(call obj,$(EXPORTS_CC))

SIM_LIB := $(BUILD)/lib/libscout-sim.a
SUPPORT_LIB := $(BUILD)/lib/libscout-testsupport.a
PLUGIN := $(BUILD)/lib/libnccl-profiler-scout.so
# The test delegate net plugin (test/netdelegate/): full (v12 + v11, every optional slot) and min
# (v11 only, optional slots NULL). Built with the tests and benchmarks, never installed.
TESTNET_CC := test/netdelegate/scouttest_net.cc
TESTNET := $(BUILD)/lib/libnccl-net-scouttest.so $(BUILD)/lib/libnccl-net-scouttest-min.so
# Test profiler plugins scout forwards to (SCOUT_PROFILER_DELEGATE; test/profdelegate/): an
# Inspector-like one (v5 only, and v4+v5+v6) and a no-op one for plugin_cost_bench. Never installed.
PROFDELEGATE_CC := test/profdelegate/inspectish.cc
PROFDELEGATE := $(BUILD)/lib/libnccl-profiler-inspectish.so $(BUILD)/lib/libnccl-profiler-inspectish-all.so \
                $(BUILD)/lib/libnccl-profiler-noop.so
# A stand-in libcublasLt.so.13 (its logger entry points) for the GEMM capture tests (test/fakelibs/).
FAKE_CUBLASLT := $(BUILD)/lib/fake-cublaslt/libcublasLt.so.13
# Tools (installed) and the emulated job scout-sim (a test and drill program: build tree only).
BINS := $(foreach f,$(BIN_CC),$(BUILD)/bin/$(basename $(notdir $(f))))
SIM_BINS := $(foreach f,$(SIM_BIN_CC),$(BUILD)/bin/$(basename $(notdir $(f))))
TESTS := $(foreach f,$(TEST_CC),$(BUILD)/test/$(basename $(notdir $(f))))
BENCHES := $(foreach f,$(BENCH_CC),$(BUILD)/bench/$(basename $(notdir $(f))))
# Public headers: the formats (record, fingerprint, configuration registry, NCCL ABI).
PUBLIC_HEADERS := $(wildcard include/scout/*.h) include/scout/config_vars.def

HAVE_NVCC := $(shell test -x $(NVCC) && echo 1)
FATBIN := $(BUILD)/obj/gen/fp_kernel.fatbin
# ptxas's registers, spills and barriers per architecture for that fatbin (test/gpu/fp_kernel_resources_test.sh).
FATBIN_RES := $(BUILD)/obj/gen/fp_kernel.resources.txt
# sm_80 (A100), sm_90 (H100/H200), sm_100 (B200) machine code and compute_100 PTX for newer GPUs.
NVCC_GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
                -gencode arch=compute_100,code=sm_100 -gencode arch=compute_100,code=compute_100
NVCC_FLAGS := -std=c++17 -O3 -Iinclude -I. $(NVCC_GENCODE)

.PHONY: fuzz fuzzers all test update-golden bench bench-smoke install install-headers clean help tests benches check-exports check-layers check-headers format format-check
.DEFAULT_GOAL := all

all: $(PLUGIN) $(BINS) $(SIM_BINS)
# gpu-check's CPU-side test (test/gpu/gpu_check_cpu_test.sh) runs the fingerprint benchmark's
# --check and throughput modes, and test/observer/scale_bench_peer_test.sh the scaling benchmark's
# failure path, so those two benchmark programs are built with the tests.
tests: all $(TESTS) $(BUILD)/bench/fingerprint_bench $(BUILD)/bench/scale_bench $(TESTNET) $(FAKE_CUBLASLT) $(PROFDELEGATE)
benches: all $(BENCHES) $(TESTNET) $(PROFDELEGATE)

# ---------------------------------------------------------------- rules
$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CCACHE_RUN) $(CXX) $(CPPFLAGS) $(CXXFLAGS) $(OPT) -MMD -MP -c $< -o $@

# Version string: regenerated only when `git describe` changes.
$(BUILD)/obj/gen/version.cc: FORCE
	@mkdir -p $(dir $@)
	@printf 'namespace scout { extern const char kVersion[] = "%s"; }\n' '$(VERSION)' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
$(BUILD)/obj/gen/version.o: $(BUILD)/obj/gen/version.cc
	$(CXX) $(CXXFLAGS) -c $< -o $@

# GPU fingerprint kernel: fatbin embedded in section .nv_fatbin (empty without nvcc).
ifeq ($(HAVE_NVCC),1)
$(FATBIN): $(CU_SRCS) $(shell find plugin/gpu include -name '*.h' 2>/dev/null)
	@mkdir -p $(dir $@)
	$(if $(CU_SRCS),$(NVCC) $(NVCC_FLAGS) --resource-usage -fatbin $(CU_SRCS) -o $@ > $(FATBIN_RES) 2>&1 \
	  || { cat $(FATBIN_RES); exit 1; },: > $@)
else
$(FATBIN):
	@mkdir -p $(dir $@)
	@echo "note: $(NVCC) not found: the plugin is built without its GPU kernel" >&2
	: > $@
	rm -f $(FATBIN_RES)
endif
$(BUILD)/obj/gen/fatbin_blob.o: $(FATBIN)
	@mkdir -p $(dir $@)
	printf '%s\n' '.section .nv_fatbin,"aR"' '.balign 16' '.globl scout_fatbin_begin' \
	  '.hidden scout_fatbin_begin' 'scout_fatbin_begin:' '.incbin "$(FATBIN)"' \
	  '.globl scout_fatbin_end' '.hidden scout_fatbin_end' 'scout_fatbin_end:' \
	  '.section .note.GNU-stack,"",@progbits' > $(BUILD)/obj/gen/fatbin_blob.s
	$(CXX) -c $(BUILD)/obj/gen/fatbin_blob.s -o $@

# One archive per layer (see LAYERS).
define layer_rule
$(call layer_lib,$(1)): $(call obj,$(call layer_cc,$(1))) $(if $(filter common,$(1)),$(BUILD)/obj/gen/version.o) $(if $(filter plugin,$(1)),$(BUILD)/obj/gen/fatbin_blob.o)
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	ar rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rule,$(l))))

$(SIM_LIB): $(SIM_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(SUPPORT_LIB): $(SUPPORT_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

# The plugin: only the plugin tables are exported (plugin/abi/exports.map); no runtime
# dependency beyond libc, libstdc++, libgcc, libm (docs/plugin.md).
$(PLUGIN): $(EXPORTS_OBJ) $(call layer_lib,plugin) $(call layer_lib,common) plugin/abi/exports.map
	@mkdir -p $(dir $@)
	$(CXX) -shared -o $@ $(EXPORTS_OBJ) $(call layer_lib,plugin) $(call layer_lib,common) $(LDFLAGS) \
	  -Wl,--version-script=plugin/abi/exports.map -Wl,--no-undefined -Wl,--gc-sections \
	  -Wl,-u,scout_fatbin_begin \
	  -static-libgcc

$(BUILD)/lib/libnccl-net-scouttest.so: $(TESTNET_CC) $(PUBLIC_HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(TEST_OPT) -shared -o $@ $(TESTNET_CC) $(LDFLAGS)
$(BUILD)/lib/libnccl-net-scouttest-min.so: $(TESTNET_CC) $(PUBLIC_HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(TEST_OPT) -DSCOUTTEST_MIN -shared -o $@ $(TESTNET_CC) $(LDFLAGS)

$(BUILD)/lib/libnccl-profiler-inspectish.so: $(PROFDELEGATE_CC) $(PUBLIC_HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(TEST_OPT) -shared -o $@ $(PROFDELEGATE_CC) $(LDFLAGS)
$(BUILD)/lib/libnccl-profiler-inspectish-all.so: $(PROFDELEGATE_CC) $(PUBLIC_HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(TEST_OPT) -DPD_ALL_VERSIONS -shared -o $@ $(PROFDELEGATE_CC) $(LDFLAGS)
$(BUILD)/lib/libnccl-profiler-noop.so: $(PROFDELEGATE_CC) $(PUBLIC_HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(OPT) -DPD_NOOP -shared -o $@ $(PROFDELEGATE_CC) $(LDFLAGS)

$(FAKE_CUBLASLT): test/fakelibs/fake_cublaslt.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(TEST_OPT) -shared -Wl,-soname,libcublasLt.so.13 -o $@ $< $(LDFLAGS)

$(BINS): $(BUILD)/bin/%: $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(call obj,$(filter %/bin/$*.cc,$(BIN_CC))) $(LINK_LIBS) $(LDFLAGS) $(TOOL_LIBS)

$(SIM_BINS): $(BUILD)/bin/%: $(SIM_LIB) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(call obj,$(filter %/bin/$*.cc,$(SIM_BIN_CC))) $(SIM_LIB) $(LINK_LIBS) $(LDFLAGS) $(TOOL_LIBS) \
	  -Wl,--export-dynamic-symbol=cublasLtLogger*

$(BUILD)/test/%: $(SIM_LIB) $(SUPPORT_LIB) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(call obj,$(filter %/$*.cc,$(TEST_CC))) $(SUPPORT_LIB) $(SIM_LIB) $(LINK_LIBS) \
	  $(LDFLAGS) $(TEST_LIBS) $(TOOL_LIBS)

$(BUILD)/bench/%: $(SIM_LIB) $(SUPPORT_LIB) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(call obj,$(filter %/$*.cc,$(BENCH_CC))) $(SUPPORT_LIB) $(SIM_LIB) $(LINK_LIBS) \
	  $(LDFLAGS) $(BENCH_LIBS) $(TOOL_LIBS) -Wl,--export-dynamic-symbol=cublasLtLogger*

# Each executable also depends on its own object (second expansion keeps the pattern rules simple).
.SECONDEXPANSION:
$(BINS): $$(call obj,$$(filter %/bin/$$(notdir $$@).cc,$$(BIN_CC)))
$(SIM_BINS): $$(call obj,$$(filter %/bin/$$(notdir $$@).cc,$$(SIM_BIN_CC)))
$(TESTS): $$(call obj,$$(filter %/$$(notdir $$@).cc,$$(TEST_CC)))
$(BENCHES): $$(call obj,$$(filter %/$$(notdir $$@).cc,$$(BENCH_CC)))

# ---------------------------------------------------------------- fuzzing (clang libFuzzer)
# test/fuzz/<name>_fuzz.cc -> $(BUILD)/fuzz/<name>_fuzz, built with clang++ and
# -fsanitize=fuzzer,address,undefined from the sources it needs (FUZZ_SRCS_<name>, compiled
# again with clang for coverage and the sanitizers). Every target also links the layer archives
# (the g++ build's objects, not instrumented) for whatever its FUZZ_SRCS_<name> calls but does
# not define, so a target keeps linking when that code moves (build `all` first). `make fuzz`
# runs each target FUZZ_SECONDS on its committed seed corpus (test/fuzz/corpus/<name>) with a
# per-input time and memory limit (test/fuzz/run-fuzz.sh); any crash fails it.
FUZZ_CXX ?= clang++
FUZZ_SECONDS ?= 60
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CXXFLAGS := -std=c++20 -O1 -g -pthread $(FUZZ_SAN) -fsanitize=fuzzer-no-link -Iinclude -I. \
                 -DSCOUT_SOURCE_DIR='"$(CURDIR)"' -DSCOUT_BUILD_DIR='"$(abspath $(BUILD))"'
FUZZ_NAMES := $(patsubst test/fuzz/%_fuzz.cc,%,$(wildcard test/fuzz/*_fuzz.cc))
FUZZ_BINS := $(foreach n,$(FUZZ_NAMES),$(FUZZ_DIR)/$(n)_fuzz)
FUZZ_COMMON := common/config.cc common/utf8.cc common/paths.cc common/liveness.cc
FUZZ_SRCS_segment := common/segment_reader.cc $(FUZZ_COMMON)
FUZZ_SRCS_store := observer/store/sqlite.cc observer/store/schema.cc observer/store/reader.cc \
                   observer/export/snapshot.cc observer/export/json.cc observer/export/jsonl.cc \
                   observer/export/prometheus.cc observer/export/chrome_trace.cc \
                   observer/model/finding.cc common/names.cc $(FUZZ_COMMON)
FUZZ_SRCS_flags := observer/pipeline/command_line.cc observer/pipeline/options.cc observer/detect/equiv.cc \
                   observer/detect/finding_util.cc common/vote.cc observer/model/finding.cc \
                   observer/model/model.cc common/names.cc $(FUZZ_COMMON)
# The observers' wire messages: the leader's digest rounds against a hostile peer, and another
# node's drill-down message or the job's wait summary decoded, merged and judged.
FUZZ_NET_SRCS := observer/net/channel.cc observer/net/digest.cc observer/net/drill.cc observer/net/wait_summary.cc \
  observer/net/vote_summary.cc observer/net/rank_runs.cc
FUZZ_SRCS_digest := $(FUZZ_NET_SRCS) test/support/net_workload.cc
FUZZ_SRCS_drill := $(FUZZ_NET_SRCS) observer/cluster/core_judge.cc observer/cluster/job_waits.cc
# The CLI's argument and name handling (the subcommands it reaches come from the archives).
FUZZ_SRCS_cli := observer/cli/main.cc observer/cli/common.cc observer/cli/status.cc observer/cli/report.cc \
                 observer/cli/format.cc observer/cli/words.cc common/paths.cc common/utf8.cc
# The second adversarial trial's input surfaces: scout-replay's protocol, replay request files,
# checkpoint directories (markers, manifests) and certificates.
FUZZ_SRCS_replay_protocol := replay/server.cc replay/recipe.cc replay/contract.cc replay/backend.cc $(FUZZ_COMMON)
FUZZ_SRCS_replay_request := observer/replay/request.cc $(FUZZ_COMMON)
FUZZ_SRCS_ckpt_markers := observer/ckpt/markers.cc observer/ckpt/manifest.cc common/safe_file.cc $(FUZZ_COMMON)
FUZZ_SRCS_certificate := observer/ckpt/certificate.cc observer/ckpt/manifest.cc observer/ckpt/states.cc \
                         observer/ckpt/cycle.cc common/safe_file.cc $(FUZZ_COMMON)
fuzz_obj = $(patsubst %.cc,$(FUZZ_DIR)/obj/%.o,$(1))

$(FUZZ_DIR)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -MMD -MP -c $< -o $@
$(FUZZ_DIR)/obj/gen/version.o: $(BUILD)/obj/gen/version.cc
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -c $< -o $@

define fuzz_rule
$(FUZZ_DIR)/$(1)_fuzz: $(call fuzz_obj,test/fuzz/$(1)_fuzz.cc $(FUZZ_SRCS_$(1))) $(FUZZ_DIR)/obj/gen/version.o $(LINK_LIBS)
	$(FUZZ_CXX) $(FUZZ_SAN) -fsanitize=fuzzer -pthread -o $$@ $$(filter %.o,$$^) $(LINK_LIBS) $(TOOL_LIBS)
endef
$(foreach n,$(FUZZ_NAMES),$(eval $(call fuzz_rule,$(n))))

fuzzers: $(FUZZ_BINS)

fuzz: fuzzers
	@test/fuzz/run-fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_NAMES)

# ---------------------------------------------------------------- sanitizer passes (CI)
# `make asan-test`: the tests SAN_TESTS_asan (the segment reader and writer, ingestion and its
# fuzz test; the store, wire messages, flags and CLI run under ASan+UBSan in the fuzz targets)
# built with ASAN=1 UBSAN=1 in build-asan and run; `make tsan-test`:
# the plugin's concurrency tests SAN_TESTS_tsan built with TSAN=1 in build-tsan (with the plugin
# .so they load) and run. Only the code under test (SAN_SRCS_<kind>), the tests themselves and,
# for TSan, the plugin are compiled again with the sanitizer; everything else is linked from the
# regular build's archives ($(SAN_BASE)/lib, not instrumented), so a pass compiles a few dozen
# files instead of the tree. Run after `make all tests` (CI: .ci/run).
SAN_BASE ?= build
empty :=
space := $(empty) $(empty)
SAN_TESTS_asan := segment_test ingest_test fuzz_test
SAN_SRCS_asan := common/segment_reader.cc common/segment_writer.cc common/utf8.cc common/paths.cc \
                 $(call layer_cc,observer/ingest)
SAN_TESTS_tsan := plugin_sequence_test plugin_bad_input_test
SAN_SRCS_tsan := $(call layer_cc,plugin) $(call layer_cc,common)
SAN_FLAGS_asan := ASAN=1 UBSAN=1
SAN_FLAGS_tsan := TSAN=1

.PHONY: asan-test tsan-test san-run
asan-test tsan-test: %-test:
	@$(MAKE) --no-print-directory BUILD=build-$* SAN_KIND=$* $(SAN_FLAGS_$*) san-run

ifneq ($(SAN_KIND),)
# TSan: -O1, cheaper to compile than -O2. ASan keeps the shipped -O2 (at -O1 GCC's -Wclobbered
# fires on library strings next to the ingestor's sigsetjmp).
OPT := $(if $(filter tsan,$(SAN_KIND)),-O1 -g1,$(OPT))
SAN_BINS := $(foreach t,$(SAN_TESTS_$(SAN_KIND)),$(BUILD)/test/$(t))
SAN_OBJS := $(call obj,$(SAN_SRCS_$(SAN_KIND)))
SAN_BASE_LIBS := $(patsubst $(BUILD)/%,$(SAN_BASE)/%,$(LINK_LIBS))
# TSan: the plugin the tests load, built from the instrumented objects.
SAN_PLUGIN := $(if $(filter tsan,$(SAN_KIND)),$(PLUGIN))
$(SAN_BINS): $(BUILD)/test/%: $(SAN_OBJS)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(call obj,$(filter %/$*.cc,$(TEST_CC))) $(SAN_OBJS) $(SAN_BASE)/lib/libscout-testsupport.a \
	  $(SAN_BASE)/lib/libscout-sim.a $(SAN_BASE_LIBS) $(LDFLAGS) $(TEST_LIBS) $(TOOL_LIBS)
san-run: $(SAN_BINS) $(SAN_PLUGIN)
	@scripts/run-tests.sh $(BUILD) '^($(subst $(space),|,$(strip $(SAN_TESTS_$(SAN_KIND)))))$$'
endif

# ---------------------------------------------------------------- top-level targets
# `make test` compiles the tests JOBS at a time even when called without -j (the README's test
# command; compiling them is most of its time), then runs them.
test:
	@$(MAKE) --no-print-directory -j$(JOBS) tests
	@scripts/run-tests.sh $(BUILD)

# Golden files (test/support/golden.h) and the expected records of the recorded fixtures
# (test/plugin/fixture_replay_test.cc) are rewritten here and only here: the programs that compare
# against them run with SCOUT_UPDATE_GOLDEN=1 and SCOUT_FIXTURE_REGEN=1, each rewriting test
# reports SKIPPED ("rewrote ..."), and what changed under test/fixtures is listed for review.
# `make test` never rewrites (scripts/run-tests.sh removes both variables).
GOLDEN_TESTS = $(foreach f,$(shell grep -l 'expect_golden\|SCOUT_FIXTURE_REGEN' $(TEST_CC)),$(basename $(notdir $(f))))
update-golden:
	@$(MAKE) --no-print-directory -j$(JOBS) tests
	@for t in $(GOLDEN_TESTS); do \
	  echo "== $$t"; \
	  env -u GTEST_FILTER SCOUT_UPDATE_GOLDEN=1 SCOUT_FIXTURE_REGEN=1 $(BUILD)/test/$$t --gtest_color=no > $(BUILD)/update-golden-$$t.log 2>&1; \
	  rc=$$?; grep -E '^(rewrote|regenerated) |^\[  (PASSED  |SKIPPED |FAILED  )\] [0-9]+ tests?' $(BUILD)/update-golden-$$t.log; \
	  [ $$rc -eq 0 ] || { echo "$$t failed (log $(BUILD)/update-golden-$$t.log)"; exit 1; }; \
	done
	@echo "changed under test/fixtures (review with git diff before committing):"
	@git status --short test/fixtures

bench:
	@$(MAKE) --no-print-directory -j$(JOBS) benches
	@scripts/run-bench.sh $(BUILD)

# CI's bench smoke run: the scaling benchmark at 256 and 2,048 ranks (leader, one node, the
# others as fibers; about a minute with its build), failing on a wrong attribution, a missed
# target, a dead peer process (at once, with its exit status) or a node observer that grows with
# the job (test/bench/scale_bench.cc).
bench-smoke:
	@$(MAKE) --no-print-directory -j$(JOBS) $(BUILD)/bench/scale_bench
	@$(BUILD)/bench/scale_bench --smoke

# Tools, the plugin and the public headers (scout-sim, the emulated job, stays in the build tree).
install: $(PLUGIN) $(BINS) install-headers
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/share/doc/scout
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(PLUGIN) $(DESTDIR)$(PREFIX)/lib/
	install -m 0644 README.md LICENSE $(wildcard docs/*.md) $(DESTDIR)$(PREFIX)/share/doc/scout/

install-headers:
	install -d $(DESTDIR)$(PREFIX)/include/scout
	install -m 0644 $(PUBLIC_HEADERS) $(DESTDIR)$(PREFIX)/include/scout/

# The .so exports the plugin tables and nothing else.
check-exports: $(PLUGIN)
	bash test/plugin/plugin_symbols_test.sh $(BUILD)

# The folder-level include graph follows the allowed edges of docs/architecture.md (prints it;
# fails on an edge the table does not list, an include it cannot place, or a LAYERS order that
# does not link an allowed edge).
check-layers:
	python3 scripts/check-layers.py

# The shipped code (FORMAT_SRCS: every .h .cc .cu of the layers and programs; tests are free) in
# the layout of .clang-format. CLANG_FORMAT is pinned to one major version: two versions lay the
# same code out differently. `make format` rewrites the files; `make format-check` (CI) fails on
# the first file that differs and prints the lines.
CLANG_FORMAT ?= $(shell command -v clang-format-14 2>/dev/null || command -v clang-format 2>/dev/null)
FORMAT_SRCS = $(shell find include common plugin observer replay \( -name '*.h' -o -name '*.cc' -o -name '*.cu' \) | sort)
format:
	@test -n "$(CLANG_FORMAT)" || { echo "format: clang-format-14 not found (scripts/install-deps.sh)" >&2; exit 2; }
	$(CLANG_FORMAT) -i --style=file $(FORMAT_SRCS)

format-check:
	@test -n "$(CLANG_FORMAT)" || { echo "format-check: clang-format-14 not found (scripts/install-deps.sh)" >&2; exit 2; }
	@$(CLANG_FORMAT) --dry-run --Werror --style=file $(FORMAT_SRCS) && \
	  echo "format-check: $(words $(FORMAT_SRCS)) files in the layout of .clang-format"

# Every installed header compiles on its own in an empty translation unit.
check-headers:
	bash test/unit/headers_test.sh $(BUILD)

clean:
	rm -rf $(BUILD)

help:
	@echo "scout $(VERSION)"
	@echo "targets:"
	@echo "  all (default)   plugin $(PLUGIN) and tools in $(BUILD)/bin"
	@echo "  test            build and run every test (test/programs.txt; only test/skips.txt may skip)"
	@echo "  update-golden   rewrite the golden files and recorded-fixture expectations (review the diff)"
	@echo "  bench           build and run the benchmarks; prints ratios against same-run baselines"
	@echo "  bench-smoke     the scaling benchmark at 256 and 2,048 ranks, checked (CI runs it)"
	@echo "  install         install tools, plugin and headers into PREFIX (default /usr/local; DESTDIR honoured)"
	@echo "  check-exports   the plugin exports only its tables (nm -D)"
	@echo "  check-layers    the include graph follows the layers (docs/architecture.md)"
	@echo "  check-headers   every installed header compiles alone"
	@echo "  format          clang-format (.clang-format) the shipped code in place"
	@echo "  format-check    the shipped code is in the layout of .clang-format (CI)"
	@echo "  fuzz            libFuzzer targets (clang), FUZZ_SECONDS each (default 60) on test/fuzz/corpus"
	@echo "  asan-test       a subset of the tests (SAN_TESTS_asan) with ASan+UBSan in build-asan (after all tests)"
	@echo "  tsan-test       the plugin's concurrency tests (SAN_TESTS_tsan) with TSan in build-tsan (after all tests)"
	@echo "  clean           remove $(BUILD)"
	@echo "switches: DEBUG=1 (-O0 -g3)  ASAN=1  UBSAN=1  TSAN=1  BUILD=dir  NVCC=path  PREFIX=dir"

FORCE:

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
-include $(shell find $(FUZZ_DIR)/obj -name '*.d' 2>/dev/null)
