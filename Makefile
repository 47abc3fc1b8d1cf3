# grumpy -- build, set-up and test.
#
#   make demo   install what is missing, build, run a NumPy program under
#               grumpy and the A/B harness on it (the main job)
#   make test   install what is missing, build, run the C unit tests and pytest
#   make asan   the same tests with AddressSanitizer + UBSan
#
# Set-up is idempotent: Debian packages (when root and missing; graphviz's
# dot draws grumpy.explain's DAG pictures), a .venv at the repository root
# with NumPy 2.x, pytest, hypothesis, numexpr, numba, graphviz (the Python
# package), and grumpy.pth in the venv's site-packages (GRUMPY=1 enables capture).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
LLVM_CONFIG ?= llvm-config-19
BUILD := build

# build_flags.txt: the flags setup.py uses too
flag = $(shell sed -n 's/^$(1) *= *//p' build_flags.txt)
WARN := $(call flag,warn) $(if $(WERROR),-Werror)
OPT ?= -O2 -g
CFLAGS = $(OPT) $(call flag,std) $(WARN) $(SANITIZE) -MMD -MP
LLVM_CFLAGS = $(shell $(LLVM_CONFIG) --cflags)
LIBS = $(call flag,libs)
LLVM_LIBS = $(shell $(LLVM_CONFIG) --ldflags) $(call flag,jit_libs) $(LIBS) -Wl,-rpath,$(shell $(LLVM_CONFIG) --libdir)
BLAS_CFLAGS := $(call flag,includes)
PY_INC = $(shell $(VPY) -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null)
NP_INC = $(shell $(VPY) -c "import numpy; print(numpy.get_include())" 2>/dev/null)
EXT_SUFFIX = $(shell $(VPY) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)

CORE_SRC := $(wildcard core/*.c)
# the code generator and LLVM: a library of their own, loaded at the first
# compile (core/jit_load.c); the C tests link them in instead of jit_load
JIT_SRC := $(call flag,jit_sources)
HOOKS_SRC := $(wildcard hooks/*.c)
CORE_HDR := $(wildcard core/*.h) core/ops.def
EXT = grumpy/_grumpy$(EXT_SUFFIX)
EXT_JIT = grumpy/_grumpy_jit$(EXT_SUFFIX)

.PHONY: test-gpu wheel all deps venv build build-objects compile-commands demo test test-c format format-check test-py test-numpy-backend asan tsan bench compat compat-scipy fuzz clean clean-objs

all: build

# ---- set-up ------------------------------------------------------------
deps:
	@need=""; \
	command -v $(LLVM_CONFIG) >/dev/null || need="$$need llvm-19-dev"; \
	[ -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] || [ -e /usr/include/openblas/cblas.h ] || need="$$need libopenblas-dev"; \
	[ -e /usr/include/openssl/evp.h ] || need="$$need libssl-dev"; \
	command -v clang-format >/dev/null || need="$$need clang-format"; \
	command -v dot >/dev/null || need="$$need graphviz"; \
	$(PYTHON) -c "import venv, ensurepip" 2>/dev/null || need="$$need python3-venv"; \
	if [ -n "$$need" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$need"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need >/dev/null; \
	  else echo "missing Debian packages:$$need (run as root or install them)"; exit 1; fi; \
	fi

$(VENV)/.stamp: Makefile
	@[ -x $(VPY) ] || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q "numpy>=2.0,<3" pytest hypothesis numexpr numba joblib setuptools wheel ipython scipy matplotlib threadpoolctl graphviz
	@touch $@

$(VENV)/.pth-stamp: $(VENV)/.stamp interpose/grumpy.pth
	@site=$$($(VPY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); \
	{ echo "$(CURDIR)"; cat interpose/grumpy.pth; } > $$site/grumpy.pth
	@touch $@

venv: deps $(VENV)/.stamp $(VENV)/.pth-stamp

# ---- build -------------------------------------------------------------
$(BUILD)/core/%.o: core/%.c $(CORE_HDR) build_flags.txt
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LLVM_CFLAGS) $(BLAS_CFLAGS) -c $< -o $@

$(BUILD)/hooks/%.o: hooks/%.c $(wildcard hooks/*.h) $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(PY_INC) -I$(NP_INC) -Icore -c $< -o $@

CORE_OBJ = $(CORE_SRC:%.c=$(BUILD)/%.o)
JIT_OBJ = $(JIT_SRC:%.c=$(BUILD)/%.o)
EXT_CORE_OBJ = $(filter-out $(JIT_OBJ),$(CORE_OBJ))
TEST_CORE_OBJ = $(filter-out $(BUILD)/core/jit_load.o,$(CORE_OBJ))
HOOKS_OBJ = $(HOOKS_SRC:%.c=$(BUILD)/%.o)
# each object's header dependencies, as the compiler saw them (-MMD)
-include $(CORE_OBJ:.o=.d) $(HOOKS_OBJ:.o=.d)

$(EXT): $(EXT_CORE_OBJ) $(HOOKS_OBJ)
	$(CC) -shared $(SANITIZE) -o $@ $^ $(LIBS)

# -Bsymbolic: the library's calls to its own functions bind to them, not
# to the extension's forwarders of the same names (jit_load.c)
$(EXT_JIT): $(JIT_OBJ)
	$(CC) -shared $(SANITIZE) -Wl,-Bsymbolic -o $@ $^ $(LLVM_LIBS)

$(BUILD)/libgrumpy_preload.so: interpose/preload.c
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -shared -o $@ $< -ldl

$(BUILD)/test_core: tests/c/test_core.c $(TEST_CORE_OBJ)
	$(CC) $(CFLAGS) $(LLVM_CFLAGS) -Icore -o $@ $^ $(LLVM_LIBS)

# The venv must exist before the compiler flags that ask it are expanded,
# so the objects are built by a second make once set-up is done.
build: venv
	@$(MAKE) --no-print-directory build-objects
	@$(VPY) -m compileall -q grumpy  # the package's bytecode, as pip writes it at install (start-up)

build-objects: $(EXT) $(EXT_JIT) $(BUILD)/libgrumpy_preload.so $(BUILD)/test_core

# compile_commands.json for clangd / clang-tidy: the compiler lines of a
# dry run of the build, one entry per C file
compile-commands: venv
	@$(MAKE) --no-print-directory -B -n build-objects | $(VPY) -c 'import json, os, shlex, sys; \
	  rows = [l for l in sys.stdin if l.startswith("$(CC) ") and " -c " in l]; \
	  cmds = [{"directory": os.getcwd(), "command": l.strip(), "file": shlex.split(l)[shlex.split(l).index("-c") + 1]} for l in rows]; \
	  json.dump(cmds, open("compile_commands.json", "w"), indent=1); print(len(cmds), "entries in compile_commands.json")'

# ---- run ---------------------------------------------------------------
demo: build
	@echo "== tools/blackscholes.py under python -m grumpy.run (1M options) =="
	GRUMPY_STATS=1 $(VPY) -m grumpy.run tools/blackscholes.py 1000000 float64 3
	@echo "== A/B harness: plain NumPy vs grumpy, Black-Scholes 10M options =="
	$(VPY) -m grumpy.ab -n 5 --atol 2.3e-13 --peer numexpr:tools/blackscholes_numexpr.py -- tools/blackscholes.py 10000000 float64 5

test-c: build format-check
	$(BUILD)/test_core
	$(VPY) tools/core_deps.py $(BUILD)/core
	$(VPY) tools/func_lengths.py

# .clang-format (STYLE.md): `make format` applies it, `make test` checks it
FORMAT_SRC = $(wildcard core/*.c core/*.h hooks/*.c hooks/*.h tests/c/*.c)
format:
	clang-format -i $(FORMAT_SRC)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRC) && echo "format-check: $(words $(FORMAT_SRC)) files as .clang-format says"

test-py: build
	$(VPY) -m pytest -q -x tests $(PYTEST_ARGS)

test: test-c test-py

# the pytest suite on the second back end (core/backend.h): the planner's
# programs interpreted with NumPy's ufuncs; tests of the CPU back end's own
# work (marked cpu_backend) are skipped
test-numpy-backend: build
	GRUMPY_BACKEND=numpy $(VPY) -m pytest -q tests $(PYTEST_ARGS)

# On a machine with an NVIDIA GPU and its driver (no LLVM, no network
# needed): the test files under GRUMPY_DEVICE=gpu, the real-device tests,
# the priced part of Black-Scholes against NumPy (and CuPy where it
# imports), and the A/B harness with CuPy as a peer.  GPU_WHEEL=path: a
# wheel of `make wheel` for GPU_PYTHON's version, whose extension and
# bundled libraries are unpacked into this tree first (the tests run the
# tree's grumpy package).  GPU_JOBS: pytest-xdist workers where installed.
GPU_PYTHON ?= python3
GPU_JOBS ?= 8
GPU_TESTS := tests/test_differential.py tests/test_fusion.py tests/test_scans.py tests/test_lazy_views.py \
  tests/test_views_writes_indexing.py tests/test_coherence.py tests/test_errstate.py tests/test_gather.py
GPU_XDIST = $$($(GPU_PYTHON) -c "import xdist" 2>/dev/null && echo "-n $(GPU_JOBS)")
test-gpu:
	@if [ -n "$(GPU_WHEEL)" ]; then $(GPU_PYTHON) tools/unpack_wheel.py "$(GPU_WHEEL)" .; fi
	mkdir -p build
	GRUMPY_DEVICE=gpu $(GPU_PYTHON) -m pytest -q -p no:cacheprovider $(GPU_XDIST) $(GPU_TESTS) $(PYTEST_ARGS)
	$(GPU_PYTHON) -m pytest -q -p no:cacheprovider $(GPU_XDIST) tests/test_gpu_backend.py $(PYTEST_ARGS)
	cd tools && for t in float64 float32; do \
	  $(GPU_PYTHON) bench_priced.py numpy 10000000 $$t 3 && \
	  { ! $(GPU_PYTHON) -c "import cupy" 2>/dev/null || $(GPU_PYTHON) bench_priced.py cupy 10000000 $$t 10; } && \
	  GRUMPY_DEVICE=gpu PYTHONPATH=.. $(GPU_PYTHON) -m grumpy.run bench_priced.py grumpy 10000000 $$t 10 || exit 1; done
	GRUMPY_DEVICE=gpu $(GPU_PYTHON) -m grumpy.ab -n 3 --atol 2.3e-13 $$($(GPU_PYTHON) -c "import cupy" 2>/dev/null && echo --peer cupy:tools/blackscholes_cupy.py) tools/blackscholes.py 10000000 float64 5

ASAN_OPTIONS_RUN := detect_leaks=0:handle_segv=0:handle_sigbus=0:allow_user_segv_handler=1:allocator_may_return_null=1:log_path=$(CURDIR)/$(BUILD)/asan-logs/r
UBSAN_OPTIONS_RUN := print_stacktrace=1:log_path=$(CURDIR)/$(BUILD)/asan-logs/ub
asan:
	$(MAKE) clean-objs
	$(MAKE) build SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer" OPT="-O1 -g"
	rm -rf $(BUILD)/asan-logs && mkdir -p $(BUILD)/asan-logs
	ASAN_OPTIONS=$(ASAN_OPTIONS_RUN) UBSAN_OPTIONS=$(UBSAN_OPTIONS_RUN) $(BUILD)/test_core
	@# two of test_overhead's count what ASan's allocator changes: fresh
	@# mappings (heap layout) and NumPy's temporary elision (its stack check)
	LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) ASAN_OPTIONS=$(ASAN_OPTIONS_RUN) UBSAN_OPTIONS=$(UBSAN_OPTIONS_RUN) \
	  $(VPY) -m pytest -q -x tests/test_differential.py tests/test_fusion.py tests/test_scans.py \
	  tests/test_errstate.py tests/test_lazy_views.py tests/test_concat_fill.py tests/test_views_writes_indexing.py \
	  tests/test_faults.py tests/test_cache.py tests/test_fault_injection.py tests/test_adaptive.py \
	  tests/test_disabled.py tests/test_fallback_reasons.py tests/test_gpu_backend.py tests/test_roll.py \
	  tests/test_first_launch.py tests/test_overhead.py tests/test_gather.py tests/test_transparency.py \
	  -k "not shrinking_arrays_maps_little and not temporary_elision_survives"
	@# every process writes its reports under asan-logs (pytest captures a
	@# test's stderr, and child processes' is the tests'): any report fails
	@n=$$(cat $(BUILD)/asan-logs/* 2>/dev/null | grep -c -E "ERROR: AddressSanitizer|runtime error:"); \
	  echo "asan: $$n AddressSanitizer/UBSan reports ($(BUILD)/asan-logs)"; $(MAKE) clean-objs; test "$$n" = 0

# ThreadSanitizer: the C tests, and the tests that race threads against
# kernels (and test_faults.py: the guard's resolver thread), on a
# -fsanitize=thread build (CPython itself is not instrumented).  Every
# process writes its reports under build/tsan-logs (the tests' child
# processes too); the guard's handler gets SIGSEGV/SIGBUS first, as under
# ASan.  Left out: the np.cov test needs OpenBLAS's threads and the peak
# memory test measures TSan's; a fork of a threaded process is not
# supported by TSan (the child exits 66) and its allocator turns NumPy's
# MemoryError into an abort.
TSAN_OPTIONS_RUN := halt_on_error=0:report_signal_unsafe=0:second_deadlock_stack=1:handle_segv=0:handle_sigbus=0:allow_user_segv_handler=1:log_path=$(CURDIR)/$(BUILD)/tsan-logs/r:suppressions=$(CURDIR)/tools/tsan.supp
tsan:
	$(MAKE) clean-objs
	$(MAKE) build SANITIZE="-fsanitize=thread -fno-omit-frame-pointer" OPT="-O1 -g"
	rm -rf $(BUILD)/tsan-logs && mkdir -p $(BUILD)/tsan-logs
	TSAN_OPTIONS=$(TSAN_OPTIONS_RUN) $(BUILD)/test_core
	@# OpenBLAS is not instrumented: its threads' hand-offs read as races
	@# (in NumPy's own products too), so it runs on one thread here
	LD_PRELOAD=$$($(CC) -print-file-name=libtsan.so) TSAN_OPTIONS=$(TSAN_OPTIONS_RUN) GRUMPY_THREADS=3 OPENBLAS_NUM_THREADS=1 \
	  $(VPY) -m pytest -q -p no:cacheprovider \
	  -k "not cov_on_fresh and not peak_memory and not fork_while_another and not larger_than_memory and not child_after_fork and not fork_during" \
	  tests/test_no_wrong_answers.py tests/test_fusion.py tests/test_scans.py tests/test_faults.py tests/test_first_launch.py
	@n=$$(cat $(BUILD)/tsan-logs/* 2>/dev/null | grep -c "WARNING: ThreadSanitizer"); \
	  echo "tsan: $$n ThreadSanitizer reports ($(BUILD)/tsan-logs)"; $(MAKE) clean-objs; test "$$n" = 0

bench: build
	$(VPY) tools/bench.py

# NumPy's own test suites with and without capture, capturing arrays of
# every size (GRUMPY_MIN_BYTES=0: NumPy's small test arrays go through
# grumpy's capture, planning and kernels): counts, operations captured,
# kernels run, the ratio and every regression in build/compat/report.md.
# COMPAT_TESTS=numpy._core.tests.test_umath for one module.
COMPAT_TESTS ?= numpy._core.tests numpy.lib.tests numpy.linalg.tests
compat: build
	GRUMPY_MIN_BYTES=0 NPY_AVAILABLE_MEM=1GB $(VPY) tools/compat.py --tests $(COMPAT_TESTS) --out build/compat $(COMPAT_ARGS)

# Another project's tests: SciPy's ndimage, signal and stats suites, plain
# and under capture at the 64 KiB threshold and at every size.
SCIPY_TESTS ?= scipy.ndimage scipy.signal scipy.stats
compat-scipy: build
	$(VPY) -c "import scipy" 2>/dev/null || $(VPY) -m pip install -q scipy
	GRUMPY_MIN_BYTES=65536 $(VPY) tools/compat.py --tests $(SCIPY_TESTS) --out build/compat-scipy-64k $(COMPAT_ARGS)
	@# at every size buffers are page-exact: SciPy's tests marked fail_asan
	@# (its own out-of-bounds reads) fault there, and are left out of both runs
	GRUMPY_MIN_BYTES=0 $(VPY) tools/compat.py --tests $(SCIPY_TESTS) --out build/compat-scipy-all $(COMPAT_ARGS) -- -m "not fail_asan"

# Self-contained wheels for CPython 3.10-3.13 into dist/ (auditwheel-repaired:
# LLVM and the other non-system libraries inside), each installed into a
# fresh venv and run with LLVM hidden from the loader (tools/wheel.py)
WHEEL_PYTHONS ?= 3.10 3.11 3.12 3.13
wheel: venv
	$(VPY) tools/wheel.py --pythons $(WHEEL_PYTHONS) --out dist --check

# Random NumPy programs run under grumpy and plain NumPy, compared
# (tools/fuzz.py); a mismatch is shrunk and saved in tests/fuzz_regressions/.
# make fuzz SECONDS=600 SEED=1
fuzz: build
	GRUMPY_MIN_BYTES=65536 $(VPY) tools/fuzz.py --seconds $(or $(SECONDS),600) --seed $(or $(SEED),1) --device $(or $(DEVICE),cpu)

clean-objs:
	rm -rf $(BUILD)/core $(BUILD)/hooks $(EXT) $(EXT_JIT) $(BUILD)/libgrumpy_preload.so $(BUILD)/test_core

clean:
	rm -rf $(BUILD) grumpy/_grumpy*.so
