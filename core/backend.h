/* core/backend.h -- the back-end interface: everything the planner asks of
 * the machine that runs its kernels.
 *
 * The planner (plan.c) turns a DAG into a GpProgram (the fused subgraph,
 * target-independent) and a GpKernelArgs (operand pointers, strides, the
 * iteration space); a back end compiles the program and launches it.  One
 * launch path in plan.c serves every kernel kind through this table.
 *
 * Implementations:
 *   gp_backend_cpu    LLVM JIT for the host (jit.c, codegen.c), the thread
 *                     pool (runtime_cpu.c), OpenBLAS (blas.c)
 *   gp_backend_gpu    the same programs as CUDA kernels (codegen_nvptx.c,
 *                     jit_nvptx.c, runtime_gpu.c), GRUMPY_BACKEND=gpu
 *   NumPy's           hooks/backend_numpy.c: interprets the program with
 *                     NumPy's ufuncs (GRUMPY_BACKEND=numpy), the proof that
 *                     the seam carries everything a back end needs
 *
 * Threads: every entry is called with the core lock held.  A back end that
 * needs the GIL takes it in the lock order of dag.c (GIL before core lock:
 * it lets go of the core lock while it waits).
 */
#ifndef GP_BACKEND_H
#define GP_BACKEND_H

#include "blas.h"
#include "codegen.h"

/* What a launch computes from a compiled program over args' iteration
 * space (args->nd dims, innermost last). */
typedef enum {
    GP_LAUNCH_MAP,        /* map: every output element written once */
    GP_LAUNCH_ACCUMULATE, /* map whose REDUCE-kind instruction folds each value into its output
                             element (strides 0 on reduced dims); the back end starts those
                             elements at the reduction's identity */
    GP_LAUNCH_SCAN,       /* map-scan: the innermost dim is scanned, in order */
    GP_LAUNCH_REDUCE,     /* map-reduce: the root instruction reduced over the innermost dim,
                             one result per outer index into out */
    GP_LAUNCH_ARGREDUCE   /* the same, the index (int64) of the first minimum / maximum */
} GpLaunchKind;

typedef struct {
    GpLaunchKind kind;
    GpOp op;        /* REDUCE, ARGREDUCE, ACCUMULATE: the reduction */
    GpDType dtype;  /* REDUCE, ACCUMULATE: the result's; ARGREDUCE: the reduced values' */
    int order_free; /* REDUCE: partial results may be combined in any order */
    char *out;      /* REDUCE, ARGREDUCE: C-contiguous results, one per outer index */
    int64_t bytes;  /* bytes the kernel reads and writes (the planner's estimate) */
    /* Filled for a back end with `resident` set: per operand slot, the
     * guarded buffer (guard.h) the slot's memory lies in, or NULL (other
     * memory), and where that buffer's first byte is as this launch sees
     * it: its data, or the stage an output is written into (plan.c).  The
     * slot's byte offset in its buffer is args->data[k] - base[k]. */
    struct GpBuffer *buf[GP_MAXOPERANDS];
    char *base[GP_MAXOPERANDS];
    /* What the planner does with the launch's IEEE flags (plan.c
     * flags_use): GP_FLAGS_REPORTED, NumPy's warnings from them
     * (report_fpe), so take_fp_flags must have them when launch returns;
     * GP_FLAGS_UNREPORTED, only counted (gp_stats.fpe_unreported: a kernel
     * run for a fault); GP_FLAGS_IGNORED, no node's error state watches
     * them; GP_FLAGS_UNDONE (an in-place kernel of a resident back end,
     * whose warnings need the values it overwrites): a launch that raised
     * any flag leaves every output's memory, host and device, as it was
     * and returns GP_EFLAGS (NumPy then computes the outputs, with its
     * warnings).  For IGNORED a back end may return before the kernel has
     * run (backend_gpu.c queues it). */
    int fp_use;
} GpLaunch;

enum { GP_FLAGS_REPORTED = 0, GP_FLAGS_UNREPORTED, GP_FLAGS_IGNORED, GP_FLAGS_UNDONE };

typedef struct {
    const char *name; /* GRUMPY_BACKEND's value for it */
    /* 1 when op can be computed with results of dtype t */
    int (*supports)(GpOp op, GpDType t);
    /* A kernel for program p (owned by the back end, valid for the process),
     * or NULL with gp_last_error() set. */
    void *(*compile)(const GpProgram *p);
    /* Runs kernel k of program p.  GP_OK, or GP_ENOMEM (outputs then
     * undefined: the planner drops them). */
    GpStatus (*launch)(void *k, const GpProgram *p, GpKernelArgs *args, const GpLaunch *l);
    /* The IEEE exceptions (GP_FPE_*) raised by launches since the last call. */
    unsigned (*take_fp_flags)(void);
    /* out := a @ b (GP_FLOAT32 / GP_FLOAT64; out C-contiguous), blas.h's
     * statuses.  out_buf: the guarded buffer out is the stage of (all its
     * bytes), or NULL; a back end with `resident` set may leave the product
     * in its memory instead (out_buf GP_ON_DEVICE: the planner then commits
     * it inaccessible on the host). */
    GpStatus (*matmul)(GpDType t, GpBlasOperand a, GpBlasOperand b, char *out, struct GpBuffer *out_buf);
    /* Optional: makes compile and launch callable from the guard's fault
     * resolver (both back ends start the pool's threads, open the math
     * libraries and digest grumpy's libraries for the disk cache's key).
     * Called once, in ordinary context, before the first buffer can
     * fault. */
    void (*prepare)(void);
    /* 1: the back end keeps buffers in its own memory (guard.h's
     * residency states): launch reads l->buf and l->base, and may leave an
     * output buffer GP_ON_DEVICE (the planner then commits it inaccessible
     * on the host) */
    int resident;
    /* Optional: starts p's kernel without waiting for it.  1: compile(p)
     * would run no compiler (its kernel is in memory, or in the disk cache
     * and loaded now); 0: it is being compiled in the background (queued
     * now or earlier), and a launch that is cheap for NumPy is left to
     * NumPy meanwhile (gp_config.first_numpy_ns, plan.c); -1: compile(p)
     * will compile it on the calling thread.  NULL: compile() always does. */
    int (*prefetch)(const GpProgram *p);
    /* 1: take_fp_flags's flags are the IEEE flags each operation raises,
     * as NumPy's loops raise them (the CPU's kernels: no fast-math; NumPy's
     * own loops), so an in-place kernel of one operation may turn them
     * into NumPy's warnings without a replay (plan.c report_fpe).  0: they
     * only say a replay is needed (NVPTX raises divide, overflow and
     * invalid together for any non-finite result of finite inputs, and any
     * NaN of inputs none of which is NaN). */
    int exact_fp_flags;
} GpBackend;

GP_API extern const GpBackend gp_backend_cpu;
GP_API extern const GpBackend gp_backend_gpu;

/* Opens the GPU back end's device (backend_gpu.c): CUDA's, or with
 * emulate the emulated device of runtime_gpu.h.  automatic
 * (GRUMPY_DEVICE=auto): a launch none of whose operands the device holds
 * and that moves fewer than gp_config.gpu_min_bytes runs on the CPU back
 * end instead (its transfers and the launch would cost more than the CPU
 * takes), and the device is opened by the first launch placed on it (a
 * device that will not open leaves every launch to the CPU back end);
 * else every launch runs on the device.  0, or -1 with
 * gp_last_error() saying why (no driver, no device).  Once, before
 * gp_backend_set(&gp_backend_gpu).  gp_backend_gpu_device: the device's
 * name ("cuda", "emulated"), NULL before it is open. */
GP_API int gp_backend_gpu_open(int emulate, int automatic);
/* Whether a CUDA driver (libcuda.so.1) can be loaded: dlopen only, no
 * driver call (GRUMPY_DEVICE=auto asks before opening a device). */
GP_API int gp_backend_gpu_driver_loads(void);
GP_API const char *gp_backend_gpu_device(void);

/* The back end in use (gp_backend_cpu until set).  Set once, at enable(),
 * before anything is recorded. */
GP_API const GpBackend *gp_backend(void);
GP_API void gp_backend_set(const GpBackend *b);

/* GRUMPY_PTX_DIR=dir (gp_config.dump_ptx): the PTX of program p for sm_80,
 * written once per program as dir/gp_<hash>.ptx (or .err with the reason
 * it could not be made), so that every program a run plans exercises the
 * GPU code generator, wherever it runs (tests assemble the files with
 * ptxas for sm_80 and sm_90).  Both back ends' compile call it (it is
 * defined in backend_cpu.c); nothing is written from a fault handler or
 * without the variable.  Core lock held. */
void gp_ptx_dump(const GpProgram *p);

#endif
