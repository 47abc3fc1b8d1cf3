/* core/gp.h -- the base layer: types shared by every stage of grumpy's core
 * and the utilities of base.c.
 *
 * The core (this directory) is plain C11 with no Python.h: it records array
 * operations as a DAG (dag.c), splits it into fused subgraphs (plan.c, the
 * paper's Algorithm 1), lowers each subgraph to LLVM IR (codegen.c), compiles
 * it (jit.c), and runs it on every core (runtime_cpu.c) over page-guarded
 * buffers (guard.c).  Units: sizes and counts in elements, strides and
 * offsets in bytes, times in nanoseconds unless a name says otherwise.
 */
#ifndef GP_GP_H
#define GP_GP_H

#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#define GP_MAXDIMS 32     /* arrays with more dims are not captured */
#define GP_MAXOPERANDS 48 /* leaves + outputs of one fused kernel */
#define GP_MAXCONSTS 128  /* scalar constants of one fused kernel */
#define GP_MAXINSTR 256   /* nodes in one fused kernel */

#define GP_API __attribute__((visibility("default")))

/* Element types grumpy computes in; everything else falls back to NumPy. */
typedef enum {
    GP_BOOL,
    GP_INT8,
    GP_INT16,
    GP_INT32,
    GP_INT64,
    GP_UINT8,
    GP_UINT16,
    GP_UINT32,
    GP_UINT64,
    GP_FLOAT32,
    GP_FLOAT64,
    GP_NDTYPES
} GpDType;

typedef enum { GP_KIND_LEAF, GP_KIND_MAP, GP_KIND_REDUCE, GP_KIND_LIBRARY, GP_KIND_SCAN } GpKind;

typedef enum {
#define GP_OP(name, nin, kind, npname, meaning) GP_OP_##name,
#include "ops.def"
#undef GP_OP
    GP_NOPS
} GpOp;

/* Status codes of core functions; detail goes to gp_last_error(). */
/* GP_EDEFER: not an error -- the planner left a kernel's first launch to
 * NumPy (gp_config.first_numpy_ns).  GP_EFLAGS: a back end's launch of
 * GP_FLAGS_UNDONE use (backend.h) raised IEEE flags and left its outputs'
 * memory as it was: NumPy computes them, with its warnings. */
typedef enum { GP_OK = 0, GP_ENOMEM, GP_EUNSUPPORTED, GP_EJIT, GP_ELIMIT, GP_EDEFER, GP_EFLAGS } GpStatus;

GP_API extern const int gp_op_nin[GP_NOPS];
GP_API extern const GpKind gp_op_kind[GP_NOPS];
GP_API extern const char *const gp_op_name[GP_NOPS]; /* e.g. "ADD" */
extern const char *const gp_op_numpy_name[GP_NOPS];  /* e.g. "add" */

/* Bytes per element of a dtype. */
GP_API size_t gp_dtype_size(GpDType t);
static inline int gp_dtype_is_float(GpDType t) { return t == GP_FLOAT32 || t == GP_FLOAT64; }
static inline int gp_dtype_is_signed(GpDType t) { return t >= GP_INT8 && t <= GP_INT64; }
static inline int gp_dtype_is_unsigned(GpDType t) { return t >= GP_UINT8 && t <= GP_UINT64; }

/* A scalar value as raw bits of its dtype, zero-extended to 64 bits. */
typedef union {
    int64_t i;
    uint64_t u;
    double f;
    float f32;
    uint8_t b;
} GpScalar;

/* Thread-local detail of the last core failure (static string or buffer). */
GP_API const char *gp_last_error(void);
GP_API void gp_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* IEEE exception categories as NumPy's error state names them (np.errstate
 * divide / over / under / invalid); a mask of them.  A node records the
 * categories whose mode was "warn" when it was recorded. */
enum { GP_FPE_DIVIDE = 1, GP_FPE_OVERFLOW = 2, GP_FPE_UNDERFLOW = 4, GP_FPE_INVALID = 8 };
/* The GP_FPE_* bits of fetestexcept()'s FE_* bits (C99 <fenv.h>). */
GP_API unsigned gp_fpe_of_fenv(int fe);

/* Monotonic clock in nanoseconds. */
GP_API int64_t gp_now_ns(void);

/* Counters the tests and grumpy.stats() read.  Updated under the core lock. */
typedef struct {
    int64_t nodes_recorded;         /* map/reduce nodes appended to the DAG */
    int64_t kernels_compiled;       /* LLVM compilations */
    int64_t kernels_launched;       /* fused kernel executions */
    int64_t cache_hits;             /* compilations avoided by the in-memory kernel cache */
    int64_t disk_cache_hits;        /* kernels loaded from the on-disk cache */
    int64_t disk_objects_loaded;    /*   of which without LLVM (objload.c) */
    int64_t ptx_disk_hits;          /* GPU kernels' PTX read from the on-disk cache (not compiled) */
    int64_t jit_failures;           /* compilations that failed (then NumPy ran) */
    int64_t plan_failures;          /* materializations handed to the NumPy evaluator */
    int64_t first_numpy;            /* launches left to NumPy while their kernel compiled in the background */
    int64_t compiles_in_background; /* kernels compiled on the background thread (jit_load.c) */
    int64_t nodes_fused;            /* map nodes computed inside a kernel */
    int64_t extra_outputs;          /* intermediates written as extra kernel outputs */
    int64_t guard_faults;           /* page faults resolved by the guard */
    int64_t guard_faults_inline;    /* of those, resolved on the faulting thread, in its signal handler
                                    (not by the resolver thread: guard.c) */
    int64_t guard_scratch_pages;    /* pages of zeros mapped for accesses just outside a buffer (guard.c
                                       map_scratch) */
    int64_t flushes;                /* whole-DAG flushes (writes to read buffers) */
    int64_t fpe_replays;            /* kernels whose IEEE flags were replayed with NumPy for its warnings */
    int64_t fpe_unreported;         /* kernels whose warnings could not be given: in-place ones run for a
                                       fault or whose memory could not be copied apart (plan.c) */
    int64_t fpe_to_numpy;           /* in-place kernels whose flags needed the memory they overwrite:
                                       not committed, NumPy computed their outputs (plan.c) */
    int64_t loop_evaluations;       /* nodes computed with NumPy's inner loops without the GIL (a failed compile
                                    on the guard's resolver thread: hooks/eval_loops.c) */
    int64_t compile_ns;             /* time in codegen + optimisation + JIT */
    int64_t run_ns;                 /* time in kernel execution */
    int64_t bytes_moved;            /* bytes read from leaves + written to outputs */
    int64_t gemm_calls;             /* BLAS calls by kind */
    int64_t gemv_calls;
    int64_t dot_calls;
    int64_t blas_operand_copies;  /* operands copied because BLAS could not take their layout */
    int64_t live_nodes;           /* nodes allocated and not freed (leak tests) */
    int64_t live_buffers;         /* guarded buffers mapped and not unmapped */
    int64_t live_buffer_bytes;    /* their mapped bytes */
    int64_t checks;               /* GRUMPY_CHECK: kernels compared with NumPy's evaluator */
    int64_t check_mismatches;     /*   of which differed beyond the contract (NumPy's values kept) */
    int64_t check_skipped;        /*   sampled but not checkable (in-place writes, fault handler) */
    int64_t check_unspecified;    /*   differed where an out-of-range float-to-int cast fed it (no NumPy value) */
    int64_t fail_points;          /* failable steps taken (GRUMPY_DEBUG_FAIL counts these) */
    int64_t protects;             /* mprotect calls on guarded buffers */
    int64_t maps;                 /* fresh mappings (mmap) for guarded buffers and stages */
    int64_t maps_reused;          /* freed mappings reused instead (populated pages: no faults) */
    int64_t serial_launches;      /* kernels run on the calling thread alone (too small for the pool) */
    int64_t stage_copy_bytes;     /* bytes of old contents copied into the stages of in-place writes */
    int64_t kernel_splits;        /* subgraphs too large for one kernel, computed as several */
    int64_t views_materialized;   /* pending producers computed rather than recomputed per view: at a
                                     second view (plan.c VIEW_RECOMPUTE_MAX), at any view of a
                                     transcendental (plan.c op_is_transcendental) */
    int64_t host_to_device;       /* buffers copied to a device (GPU back end) */
    int64_t device_to_host;       /* device copies brought to the host (a host touch of a device result) */
    int64_t gpu_kernels_launched; /* kernels run on the GPU back end's device */
    int64_t gpu_kernels_queued;   /* of those, launches that did not wait for their kernel (no flags
                                     watched: backend.h GpLaunch.fp_use; their time is not in gpu_kernel_ns) */
    int64_t gpu_gemm_calls;       /* matrix products run on that device (cuBLAS) */
    int64_t bytes_h2d;            /* bytes copied host -> device */
    int64_t bytes_d2h;            /* bytes copied device -> host */
    int64_t gpu_kernel_ns;        /* GPU back end: kernels' run time, launch to completion */
    int64_t gpu_copy_ns;          /* GPU back end: time in copies between host and device */
    int64_t lock_reentries;       /* gp_lock by a thread that held the core lock (a bug: 0 in the tests) */
    int64_t lock_unheld;          /* calls that expect the core lock, made without it (a bug: 0 in the
                                     tests; GP_EXPECT_LOCKED) */
} GpStats;

GP_API extern GpStats gp_stats;

/* What one compile call did (jit.h's gp_jit_kernel_counted), counted apart
 * from gp_stats so that a compile on the background thread (jit_load.c)
 * adds its counts under the core lock, on the thread that takes its
 * kernel. */
typedef struct {
    int64_t cache_hits, disk_cache_hits, kernels_compiled, jit_failures;
    int64_t compile_ns; /* ns in key, disk cache, codegen, optimisation and JIT */
} GpJitCounts;
/* Adds *c to gp_stats (the extension's, which the code generator's
 * library binds to).  Core lock held. */
GP_API void gp_jit_counts_add(const GpJitCounts *c);

/* Fault injection, for tests (GRUMPY_DEBUG_FAIL=N): the N-th failable
 * step of the run, counted from 1 over every kind -- a buffer's mmap,
 * mprotect or mremap, a kernel compile, a disk-cache read, a kernel
 * thread's start -- fails as the call would when out of memory.  0 (the
 * default): nothing fails.  gp_stats.fail_points counts the steps, so a
 * test runs once with 0 to learn how many N to walk. */
GP_API extern int64_t gp_fail_at;
/* pthread_create(t, attr, fn, NULL) of a thread with every asynchronous
 * signal blocked (they stay the calling threads'), the synchronous fault
 * signals (SEGV, BUS, FPE, ILL) open: the guard's handler must see a
 * fault on guarded memory in any thread.  0, or pthread_create's error. */
GP_API int gp_thread_create_quiet(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *));
/* Counts one failable step; 1 when it must fail. */
GP_API int gp_fail_now(void);
/* This thread's steps are neither counted nor failed (the background
 * compile thread: its steps come at times no test can repeat). */
GP_API void gp_fail_points_off(void);

/* The core lock (base.c: the lock order): plan.h's entry points take it;
 * not recursive. */
GP_API void gp_lock(void);
GP_API void gp_unlock(void);
/* Releases this thread's hold on the core lock, if any (before waiting for
 * the GIL, so that a thread holding the GIL and waiting for the core lock
 * cannot deadlock with it); returns what to give gp_lock_reacquire. */
int gp_lock_release_all(void);
/* At the top of a function that expects the core lock held: a call without
 * it is counted in gp_stats.lock_unheld (the pytest suite fails on any;
 * the single-threaded C unit tests call the DAG without it). */
#define GP_EXPECT_LOCKED() ((void)(gp_lock_held() || __atomic_add_fetch(&gp_stats.lock_unheld, 1, __ATOMIC_RELAXED)))
/* 1 when this thread holds the core lock, else 0; async-signal-safe. */
int gp_lock_held(void);
void gp_lock_reacquire(int depth);

/* Configuration read by the core; set by the hooks from GRUMPY_* variables
 * before the first compile. */
typedef struct {
    int force_jit_failure;  /* GRUMPY_DEBUG_JIT_FAIL: 1 every compile fails, N >= 2 about one in N
                               (gp_jit_fail_forced) */
    int dump_ir;            /* GRUMPY_DUMP_IR=1: print optimized IR to stderr */
    int debug_plan;         /* GRUMPY_DEBUG_PLAN=1: print each kernel's plan to stderr */
    int debug_eval_loops;   /* GRUMPY_DEBUG_EVAL_LOOPS=1: what NumPy computes after a failed compile is
                              computed with its inner loops without the GIL everywhere, as on the guard's
                              resolver thread (tests of hooks/eval_loops.c) */
    int debug_corrupt;      /* GRUMPY_DEBUG_CORRUPT=1: every map kernel's first output element is made
                              wrong (tests of the shadow check and the fuzzer) */
    int host_code_only;     /* 1 when this process emits no PTX (no GPU back end, no GRUMPY_PTX_DIR):
                              the host JIT may then set LLVM's process-wide code generation options
                              for the host alone (jit.c); before the first compile */
    const char *dump_ptx;   /* GRUMPY_PTX_DIR=dir: the CPU back end also writes the PTX of every
                              program it compiles to dir (backend_cpu.c), or NULL */
    int64_t lone_max_bytes; /* a map computed by a kernel of its own with a result below this many
                               bytes is counted against its call site (gp_sites); 0: never */
    int explain;            /* python -m grumpy.explain: the planner notes every kernel it runs
                               (explain.h); 0 (the default): nothing is kept */
    int shadow_check;       /* GRUMPY_CHECK > 0: the planner calls the hooks' check_begin / check_end
                               (plan.h, GpHostCallbacks) around every kernel */
    int64_t gpu_min_bytes;  /* GRUMPY_GPU_MIN_BYTES: GRUMPY_DEVICE=auto runs a kernel on the GPU when
                               the device holds an operand or it moves at least this many bytes
                               (and is promoted: backend_gpu.c) */
    int64_t gpu_warmup_ns;  /* GRUMPY_GPU_WARMUP_MS: the host time a kernel's launches (or large
                               products) take before GRUMPY_DEVICE=auto moves them to the GPU */
    int quiet_compares;     /* 1 once a kernel's float compare raised "invalid" on a NaN where NumPy
                               gave no warning (hooks/sites.c gp_site_replay_end): kernels compiled
                               after it compare quietly (GpProgram.quiet); atomic */
    int64_t first_numpy_ns; /* a launch whose kernel is neither in memory nor in the disk cache,
                               and whose work NumPy would do in less than this many ns, is NumPy's
                               while the kernel compiles in the background (plan.c); 0: never */
} GpConfig;
GP_API extern GpConfig gp_config;

/* Evidence per call site for the adaptive rule of hooks/sites.c ("do no
 * harm"): the hooks give a recorded node a site index (GpNode.site, 0 for
 * none) and the planner counts, at each launch, whether the node was
 * computed alone -- one map instruction, a fresh result below
 * gp_config.lone_max_bytes: no fusion gained, the costs of a lazy result
 * paid -- or inside a larger kernel.  Indexes 1 .. GP_MAX_SITES-1.  Read
 * and written under the core lock. */
#define GP_MAX_SITES 16384
typedef struct {
    int64_t lone;  /* launches that computed this site's node alone */
    int64_t fused; /* launches that computed it with other operations */
} GpSiteCounts;
GP_API extern GpSiteCounts gp_sites[GP_MAX_SITES];

/* Reduction rules (base.c), shared by code generation and the runtimes. */
static inline int gp_op_is_arg(GpOp op) { return op == GP_OP_ARGMIN || op == GP_OP_ARGMAX; }
/* Whether op over operands of dtype in compares floats (a comparison, an
 * extremum, clip, sign, a min/max/arg reduction): x86 signals "invalid"
 * for it on a quiet NaN unless it is compiled quietly (GpProgram.quiet). */
static inline int gp_op_compares_floats(GpOp op, GpDType in)
{
    return gp_dtype_is_float(in) && ((op >= GP_OP_EQUAL && op <= GP_OP_GREATER_EQUAL) || op == GP_OP_MAXIMUM ||
                                     op == GP_OP_MINIMUM || op == GP_OP_FMAX || op == GP_OP_FMIN || op == GP_OP_CLIP ||
                                     op == GP_OP_SIGN || op == GP_OP_MIN || op == GP_OP_MAX || gp_op_is_arg(op));
}
/* Identity of a reduction in dtype t. */
GP_API GpScalar gp_reduce_identity(GpOp op, GpDType t);
/* The reduction a scan op folds with (CUMSUM -> SUM, CUMPROD -> PROD). */
static inline GpOp gp_scan_reduce_op(GpOp op) { return op == GP_OP_CUMPROD ? GP_OP_PROD : GP_OP_SUM; }
/* acc := acc (op) v for two values of dtype t (partials of threads). */
void gp_reduce_combine(GpOp op, GpDType t, GpScalar *acc, GpScalar v);

/* Whether arg-reduction value v (at a later index) replaces the best so
 * far, cur (both of dtype t): NumPy's rules (the first extreme value; the
 * first NaN wins). */
int gp_arg_better(GpOp op, GpDType t, GpScalar v, GpScalar cur);

/* Registers the core lock's fork handlers (once; gp_core_init calls it). */
void gp_lock_init_fork(void);

#endif
