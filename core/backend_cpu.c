/* core/backend_cpu.c -- the CPU back end (core/backend.h): kernels compiled
 * for the host by LLVM (jit.c, cached), launched on the thread pool
 * (runtime_cpu.c), matrix products by OpenBLAS (blas.c).
 *
 * Launch kinds map to the pool's splits: a map may be split anywhere; an
 * accumulating map by columns only (each task runs every outer index in
 * order, so no two threads fold into one element); a map-scan by whole
 * rows (the accumulator runs along the row); reductions as runtime_cpu.c
 * partitions them (rows, or NumPy's pairwise recursion of a long row).
 */
#include "backend.h"
#include "objload.h"
#include "jit.h"
#include "guard.h"
#include "jit_nvptx.h"
#include "runtime_cpu.h"
#include "runtime_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void gp_ptx_dump(const GpProgram *p)
{
    if (!gp_config.dump_ptx || gp_guard_in_handler())
        return;
    char name[32], path[4096];
    snprintf(name, sizeof name, "gp_%016llx", (unsigned long long)gp_program_hash(p));
    snprintf(path, sizeof path, "%s/%s.ptx", gp_config.dump_ptx, name);
    if (access(path, F_OK) == 0)
        return;
    char *ptx = gp_ptx_compile(p, "sm_80", name);
    if (!ptx)
        snprintf(path, sizeof path, "%s/%s.err", gp_config.dump_ptx, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(ptx ? ptx : gp_last_error(), f);
        fclose(f);
    }
    free(ptx);
    snprintf(path, sizeof path, "%s/gp_pairs.ptx", gp_config.dump_ptx);
    if (p->kind == GP_KIND_REDUCE && p->pairwise && access(path, F_OK) != 0 && (f = fopen(path, "w")) != NULL) {
        fputs(gp_pairs_ptx, f);
        fclose(f);
    }
}

static void *cpu_compile(const GpProgram *p)
{
    gp_ptx_dump(p);
    return gp_jit_kernel(p);
}

static int cpu_prefetch(const GpProgram *p) { return gp_jit_kernel_prefetch(p, GP_TARGET_CPU); }

/* Below this many bytes moved a launch runs on the calling thread: waking
 * the pool costs more than the second thread gains.  Measured on 2 cores
 * (GRUMPY_THREADS=1 vs 2, a Python loop of `c = a + b`, `(a*b).sum()`,
 * `(a*b + 2.0)*a - b`): one thread was faster for every statement up to
 * 3 MiB moved (1 MiB operands) and for most up to 12 MiB; two threads from
 * 24 MiB for all of them. */
#define SERIAL_BYTES ((int64_t)8 << 20)

/* ... unless its arithmetic alone takes longer than this on one core: a
 * kernel of transcendentals is bound by its instructions, not by memory,
 * and two threads nearly halve it.  Measured on 2 cores, 2026-11-26
 * (GRUMPY_THREADS=1 vs 2, `np.sin(x) * 2` of float64): 131072 points
 * 185 vs 223 us, 262144 points 343 vs 289 us, 524288 points 658 vs 496 us;
 * a float-to-uint8 cast of 1M float32 was no faster on two threads. */
#define SERIAL_COMPUTE_NS 300000.0

/* A map point's arithmetic on one core, in ns: the program's instructions
 * by weight (vectorized loops, the same measurements: sin 1.25 per point,
 * a float-to-integer cast with its range checks 0.25, pow about 5; the
 * others rough: division and sqrt 0.3, floor division and remainders 1,
 * the rest 0.05). */
static double point_ns(const GpProgram *p)
{
    double ns = 0.0;
    for (int k = 0; k < p->ninstr; k++) {
        const GpInstr *ins = &p->instr[k];
        GpOp op = (GpOp)ins->op;
        if (op == GP_OP_LEAF || op == GP_OP_CONST)
            continue;
        if (op == GP_OP_CAST)
            ns += gp_dtype_is_float((GpDType)ins->in_dtype) && !gp_dtype_is_float((GpDType)ins->dtype) ? 0.25 : 0.05;
        else if (op == GP_OP_POWER)
            ns += !gp_dtype_is_float((GpDType)ins->dtype)                                       ? 0.3
                  : ins->exponent == GP_EXPONENT_FRACTION && ins->dtype == GP_FLOAT32           ? 2.5 /* exp, log */
                  : ins->exponent <= GP_EXPONENT_OTHER || ins->exponent >= GP_EXPONENT_FRACTION ? 5.0 /* pow */
                                                                                                : 0.3;
        else if (op == GP_OP_SQRT || op == GP_OP_TRUE_DIVIDE || op == GP_OP_RECIPROCAL)
            ns += 0.3;
        else if (op == GP_OP_FLOOR_DIVIDE || op == GP_OP_REMAINDER || op == GP_OP_FMOD)
            ns += 1.0;
        else if (op >= GP_OP_CBRT && op <= GP_OP_HYPOT)
            ns += 1.25;
        else
            ns += 0.05;
    }
    return ns;
}

static GpStatus launch_kind(void *k, const GpProgram *p, GpKernelArgs *args, const int64_t *packed, const GpLaunch *l);

/* Packed arguments (codegen.h) live on the stack up to this many slots. */
#define PACKED_SLOTS 512

static GpStatus cpu_launch(void *k, const GpProgram *p, GpKernelArgs *args, const GpLaunch *l)
{
    int64_t small[PACKED_SLOTS];
    size_t slots = gp_kernel_args_slots(p, args->nd);
    int64_t *packed = slots <= PACKED_SLOTS ? small : malloc(slots * sizeof *packed);
    if (!packed)
        return GP_ENOMEM;
    gp_kernel_args_pack(p, args, packed);
    double points = 1.0;
    for (int64_t d = 0; d < args->nd; d++)
        points *= (double)args->shape[d];
    /* (on 2 threads, while the background thread compiles, the calling
     * thread alone: the pool's second thread would share its core) */
    int serial = (l->bytes < SERIAL_BYTES && points * point_ns(p) < SERIAL_COMPUTE_NS) ||
                 (gp_pool_threads() <= 2 && gp_jit_compiling());
    if (serial) {
        gp_pool_set_serial(1);
        gp_stats.serial_launches++;
    }
    GpStatus st = launch_kind(k, p, args, packed, l);
    if (serial)
        gp_pool_set_serial(0);
    if (packed != small)
        free(packed);
    return st;
}

static GpStatus launch_kind(void *k, const GpProgram *p, GpKernelArgs *args, const int64_t *packed, const GpLaunch *l)
{
    switch (l->kind) {
    case GP_LAUNCH_MAP: gp_run_map((GpMapKernel)k, packed, GP_SPLIT_ANY); return GP_OK;
    case GP_LAUNCH_SCAN: gp_run_map((GpMapKernel)k, packed, GP_SPLIT_ROWS); return GP_OK;
    case GP_LAUNCH_ACCUMULATE: {
        if (gp_kernel_args_fill_identity(p, args, l->op, l->dtype) != GP_OK)
            return GP_EUNSUPPORTED;
        gp_run_map((GpMapKernel)k, packed, GP_SPLIT_COLUMNS);
        return GP_OK;
    }
    case GP_LAUNCH_REDUCE:
        return gp_run_reduce((GpReduceKernel)k, packed, l->op, l->dtype, p->pairwise, l->order_free, l->out) == 0
                   ? GP_OK
                   : GP_ENOMEM;
    case GP_LAUNCH_ARGREDUCE:
        gp_run_argreduce((GpReduceKernel)k, packed, l->op, l->dtype, (int64_t *)l->out);
        return GP_OK;
    }
    return GP_EUNSUPPORTED;
}

/* The code generator's library (LLVM: ~20 ms of CPU and ~47 MiB) is not
 * loaded here: a kernel missing from the disk cache loads it, in whichever
 * context that miss is (gp_jit_load), so a run whose kernels are all
 * cached never maps it; a fault's compile loads it on the resolver's
 * thread. */
static void cpu_prepare(void)
{
    gp_pool_start();
    gp_objload_prepare();
}

static GpStatus cpu_matmul(GpDType t, GpBlasOperand a, GpBlasOperand b, char *out, GpBuffer *out_buf)
{
    (void)out_buf; /* the product is written into out */
    /* while the background thread compiles, OpenBLAS leaves it a core:
     * its threads' static shares would wait for the one sharing a core */
    int n = gp_pool_threads(), fewer = n > 1 && gp_jit_compiling();
    if (fewer)
        gp_blas_set_threads(n - 1);
    GpStatus st = gp_blas_matmul(t, a, b, out);
    if (fewer)
        gp_blas_set_threads(n);
    return st;
}

const GpBackend gp_backend_cpu = {
    "cpu", gp_op_supports, cpu_compile, cpu_launch, gp_pool_take_fp_flags, cpu_matmul, cpu_prepare, 0, cpu_prefetch, 1,
};
