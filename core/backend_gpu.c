/* core/backend_gpu.c -- the GPU back end (core/backend.h,
 * GRUMPY_BACKEND=gpu): the planner's programs compiled for the device by
 * the same code generator (codegen_nvptx.c, PTX through jit_nvptx.c) and
 * run by runtime_gpu.c's device (CUDA, or the emulated device of tests,
 * GRUMPY_GPU_EMULATE=1).
 *
 * One launch, every kind:
 *   1. each operand's bytes (the extent its shape and strides reach) are
 *      copied to device memory; an accumulating launch's output is set to
 *      the identity first, on the host, as the CPU back end does;
 *   2. the packed arguments (codegen.h) with device addresses, and for a
 *      map-reduce the leaves of each row, go to the device; the kernel runs
 *      (one thread per point, row, column or (row, leaf): codegen_nvptx.c);
 *   3. map outputs come back into the planner's staged host memory; a
 *      map-reduce's partials come back and are combined on the host in a
 *      fixed order: NumPy's pairwise tree for a float sum (leaves as
 *      NumPy's pairwise_sum recursion cuts the row), in index order
 *      otherwise, so results are the CPU back end's, bit for bit, and never
 *      vary run to run (no floating-point atomics);
 *   4. the kernel's IEEE flags word comes back (take_fp_flags).
 * This first version copies in and out at each launch; results are not
 * yet left on the device (the residency states of guard.h are the next
 * step), and matrix products run on the host (OpenBLAS).
 */
#include "backend.h"
#include "jit.h"
#include "jit_nvptx.h"
#include "runtime_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PW_BLOCK 128         /* NumPy's PW_BLOCKSIZE: a pairwise leaf */
#define ORDER_FREE_LEAF 4096 /* points per leaf of an order-free reduction */

static const GpDevice *dev;
static unsigned fp_flags;

int gp_backend_gpu_open(int emulate)
{
    dev = gp_device_open(emulate);
    return dev ? 0 : -1;
}

const char *gp_backend_gpu_device(void) { return dev ? dev->name : NULL; }

/* ---- kernels, cached by program ------------------------------------------ */

typedef struct Kernel {
    struct Kernel *next;
    void *k;
    size_t n;
    unsigned char key[];
} Kernel;

static Kernel *kernels[256];

static void *gpu_compile(const GpProgram *p)
{
    size_t n = gp_program_key_size(p);
    uint64_t h = gp_program_hash(p);
    for (Kernel *e = kernels[h % 256]; e; e = e->next)
        if (e->n == n && !memcmp(e->key, p, n)) {
            gp_stats.cache_hits++;
            return e->k;
        }
    if (gp_config.force_jit_failure) {
        gp_set_error("JIT failure forced by GRUMPY_DEBUG_JIT_FAIL");
        return NULL;
    }
    char name[32];
    snprintf(name, sizeof name, "gp_d_%016llx", (unsigned long long)h);
    int64_t t0 = gp_now_ns();
    void *k = NULL;
    if (dev->wants_ptx) {
        char *ptx = gp_ptx_compile(p, dev->arch, name);
        if (ptx)
            k = dev->load(ptx, name);
        free(ptx);
        if (k)
            gp_stats.kernels_compiled++;
    } else {
        void *fn = gp_jit_kernel_for(p, GP_TARGET_HOST_GRID);
        k = fn ? dev->load(fn, name) : NULL;
    }
    gp_stats.compile_ns += gp_now_ns() - t0;
    Kernel *e = k ? malloc(sizeof *e + n) : NULL;
    if (e) {
        e->k = k;
        e->n = n;
        memcpy(e->key, p, n);
        e->next = kernels[h % 256];
        kernels[h % 256] = e;
    }
    if (!k)
        gp_stats.jit_failures++;
    return k;
}

/* ---- one launch ------------------------------------------------------------ */

typedef struct {
    GpDevPtr mem[GP_MAXOPERANDS + 4]; /* device allocations, freed at the end */
    int nmem;
} Launch;

static int device_alloc(Launch *L, size_t n, GpDevPtr *d)
{
    if (dev->alloc(n, d) != 0)
        return -1;
    L->mem[L->nmem++] = *d;
    return 0;
}

/* Byte extent [*lo, *hi) of operand k relative to its data pointer. */
static void extent(const GpKernelArgs *a, int k, size_t elsize, int64_t *lo, int64_t *hi)
{
    *lo = 0;
    *hi = (int64_t)elsize;
    for (int d = 0; d < a->nd; d++) {
        int64_t span = (a->shape[d] - 1) * a->strides[k][d];
        if (span < 0)
            *lo += span;
        else
            *hi += span;
    }
}

static int is_output(const GpProgram *p, int slot, size_t *elsize)
{
    int out = 0;
    for (int i = 0; i < p->ninstr; i++) {
        const GpInstr *ins = &p->instr[i];
        if (ins->slot != slot || ins->op == GP_OP_CONST)
            continue;
        *elsize = gp_dtype_size((GpDType)ins->dtype);
        out |= ins->op != GP_OP_LEAF;
    }
    return out;
}

/* NumPy's pairwise_sum recursion over n points from j0: its leaves, in
 * order, as (start, length) pairs appended at leaves[*n]. */
static void pairwise_leaves(int64_t j0, int64_t n, int64_t *leaves, int64_t *count)
{
    if (n <= PW_BLOCK) {
        leaves[2 * *count] = j0;
        leaves[2 * *count + 1] = n;
        ++*count;
        return;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    pairwise_leaves(j0, n2, leaves, count);
    pairwise_leaves(j0 + n2, n - n2, leaves, count);
}

/* The pairwise tree over the partials of one row, as pairwise_leaves cut
 * it; *next is the next leaf's partial. */
static GpScalar pairwise_combine(GpDType t, int64_t n, const GpScalar *partial, int64_t *next)
{
    if (n <= PW_BLOCK)
        return partial[(*next)++];
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    GpScalar x = pairwise_combine(t, n2, partial, next);
    GpScalar y = pairwise_combine(t, n - n2, partial, next);
    gp_reduce_combine(GP_OP_SUM, t, &x, y);
    return x;
}

/* Combines the (outer x nleaves) partials into l->out. */
static void combine(const GpProgram *p, const GpLaunch *l, int64_t outer, int64_t inner, int64_t nleaves,
                    const void *partials)
{
    size_t e = gp_dtype_size(l->dtype);
    for (int64_t o = 0; o < outer; o++) {
        if (l->kind == GP_LAUNCH_ARGREDUCE) {
            const GpArgResult *r = (const GpArgResult *)partials + o * nleaves;
            GpArgResult best = r[0];
            for (int64_t q = 1; q < nleaves; q++)
                if (r[q].index >= 0 && gp_arg_better(l->op, l->dtype, r[q].value, best.value))
                    best = r[q];
            ((int64_t *)l->out)[o] = best.index;
            continue;
        }
        const GpScalar *r = (const GpScalar *)partials + o * nleaves;
        GpScalar v, acc = gp_reduce_identity(l->op, l->dtype);
        if (p->pairwise) {
            int64_t next = 0;
            v = pairwise_combine(l->dtype, inner, r, &next);
            gp_reduce_combine(l->op, l->dtype, &acc, v);
        } else {
            for (int64_t q = 0; q < nleaves; q++)
                gp_reduce_combine(l->op, l->dtype, &acc, r[q]);
        }
        memcpy(l->out + o * (int64_t)e, &acc, e);
    }
}

/* Leaves of a row of `inner` points: NumPy's pairwise cut, chunks of an
 * order-free reduction, or the whole row.  New array of 2*count int64. */
static int64_t *row_leaves(const GpProgram *p, const GpLaunch *l, int64_t inner, int64_t *count)
{
    int64_t cap = p->pairwise ? 2 * (inner / PW_BLOCK + 2) : l->order_free ? inner / ORDER_FREE_LEAF + 2 : 1;
    int64_t *leaves = malloc((size_t)(2 * cap) * sizeof *leaves);
    *count = 0;
    if (!leaves)
        return NULL;
    if (p->pairwise) {
        pairwise_leaves(0, inner, leaves, count);
    } else if (l->order_free && l->kind != GP_LAUNCH_ARGREDUCE) {
        for (int64_t j = 0; j < inner; j += ORDER_FREE_LEAF, ++*count) {
            leaves[2 * *count] = j;
            leaves[2 * *count + 1] = inner - j < ORDER_FREE_LEAF ? inner - j : ORDER_FREE_LEAF;
        }
    } else {
        leaves[0] = 0;
        leaves[1] = inner;
        *count = 1;
    }
    return leaves;
}

static GpStatus run_reduce(void *k, const GpProgram *p, const GpLaunch *l, Launch *L, GpDevPtr da, GpDevPtr flags,
                           int64_t outer, int64_t inner)
{
    int64_t nleaves;
    int64_t *leaves = row_leaves(p, l, inner, &nleaves);
    size_t psize = l->kind == GP_LAUNCH_ARGREDUCE ? sizeof(GpArgResult) : sizeof(GpScalar);
    size_t pbytes = (size_t)(outer * nleaves) * psize;
    void *partials = leaves ? malloc(pbytes ? pbytes : 1) : NULL;
    GpDevPtr dleaves = 0, dpartial = 0;
    GpStatus st = GP_ENOMEM;
    if (partials && device_alloc(L, (size_t)(2 * nleaves) * sizeof *leaves, &dleaves) == 0 &&
        device_alloc(L, pbytes, &dpartial) == 0 &&
        dev->upload(dleaves, leaves, (size_t)(2 * nleaves) * sizeof *leaves) == 0) {
        void *params[6] = {&da, &dleaves, &nleaves, &outer, &dpartial, &flags};
        if (dev->launch(k, params, 6, outer * nleaves) == 0 && dev->download(partials, dpartial, pbytes) == 0) {
            gp_stats.gpu_kernels_launched++;
            gp_stats.bytes_d2h += (int64_t)pbytes;
            combine(p, l, outer, inner, nleaves, partials);
            st = GP_OK;
        }
    }
    free(partials);
    free(leaves);
    return st;
}

/* Copies the operands to the device; dargs gets the packed arguments with
 * device addresses.  0 or -1. */
static int operands_in(const GpProgram *p, GpKernelArgs *args, Launch *L, int64_t *lo, int64_t *hi, GpDevPtr *dbase)
{
    GpKernelArgs d = *args;
    for (int k = 0; k < p->noperands; k++) {
        size_t e = 1;
        is_output(p, k, &e);
        extent(args, k, e, &lo[k], &hi[k]);
        if (device_alloc(L, (size_t)(hi[k] - lo[k]), &dbase[k]) != 0 ||
            dev->upload(dbase[k], args->data[k] + lo[k], (size_t)(hi[k] - lo[k])) != 0)
            return -1;
        gp_stats.host_to_device++;
        gp_stats.bytes_h2d += hi[k] - lo[k];
        d.data[k] = (char *)(uintptr_t)(dbase[k] - (GpDevPtr)lo[k]);
    }
    *args = d;
    return 0;
}

/* Whether every operand's first element and strides are multiples of its
 * element size: a GPU loads elements naturally aligned, and a misaligned
 * load (a packed structured array's field) is a sticky error that ends the
 * CUDA context for the process.  Such launches are refused (NumPy
 * computes them). */
static int aligned(const GpProgram *p, const GpKernelArgs *a)
{
    for (int k = 0; k < p->noperands; k++) {
        size_t e = 1;
        is_output(p, k, &e);
        if ((uintptr_t)a->data[k] % e)
            return 0;
        for (int d = 0; d < a->nd; d++)
            if (a->strides[k][d] % (int64_t)e)
                return 0;
    }
    return 1;
}

static GpStatus gpu_launch(void *k, const GpProgram *p, GpKernelArgs *args, const GpLaunch *l)
{
    int64_t outer = 1, inner = args->shape[args->nd - 1];
    for (int d = 0; d < args->nd - 1; d++)
        outer *= args->shape[d];
    if (l->kind == GP_LAUNCH_ACCUMULATE && gp_kernel_args_fill_identity(p, args, l->op, l->dtype) != GP_OK)
        return GP_EUNSUPPORTED;
    if (outer * inner == 0) {
        if (l->kind == GP_LAUNCH_REDUCE) /* empty rows: the identity, as the CPU back end gives */
            for (int64_t o = 0; o < outer; o++) {
                GpScalar id = gp_reduce_identity(l->op, l->dtype);
                memcpy(l->out + o * (int64_t)gp_dtype_size(l->dtype), &id, gp_dtype_size(l->dtype));
            }
        return GP_OK;
    }
    if (!aligned(p, args)) {
        gp_set_error("GPU back end: an operand is not aligned to its element size");
        return GP_EUNSUPPORTED;
    }
    Launch L = {.nmem = 0};
    int64_t lo[GP_MAXOPERANDS], hi[GP_MAXOPERANDS];
    GpDevPtr dbase[GP_MAXOPERANDS], da = 0, flags = 0;
    GpKernelArgs dargs = *args;
    size_t slots = gp_kernel_args_slots(p, args->nd);
    int64_t *packed = malloc(slots * sizeof *packed);
    GpStatus st = GP_ENOMEM;
    if (!packed || operands_in(p, &dargs, &L, lo, hi, dbase) != 0 || device_alloc(&L, 4, &flags) != 0)
        goto out;
    gp_kernel_args_pack(p, &dargs, packed);
    if (device_alloc(&L, slots * sizeof *packed, &da) != 0 || dev->upload(da, packed, slots * sizeof *packed) != 0)
        goto out;
    if (l->kind == GP_LAUNCH_REDUCE || l->kind == GP_LAUNCH_ARGREDUCE) {
        if ((st = run_reduce(k, p, l, &L, da, flags, outer, inner)) != GP_OK)
            goto out;
    } else {
        void *params[4] = {&da, &outer, &inner, &flags};
        int64_t threads = l->kind == GP_LAUNCH_MAP ? outer * inner : l->kind == GP_LAUNCH_SCAN ? outer : inner;
        if (dev->launch(k, params, 4, threads) != 0)
            goto out;
        gp_stats.gpu_kernels_launched++;
    }
    st = GP_OK;
    for (int s = 0; s < p->noperands && st == GP_OK; s++) {
        size_t e;
        if (!is_output(p, s, &e))
            continue;
        if (dev->download(args->data[s] + lo[s], dbase[s], (size_t)(hi[s] - lo[s])) != 0)
            st = GP_ENOMEM;
        gp_stats.bytes_d2h += hi[s] - lo[s];
    }
    unsigned word = 0;
    if (st == GP_OK && dev->download(&word, flags, 4) == 0)
        fp_flags |= word;
out:
    if (st != GP_OK && !gp_last_error()[0])
        gp_set_error("GPU launch failed");
    for (int i = 0; i < L.nmem; i++)
        dev->release(L.mem[i]);
    free(packed);
    return st;
}

static unsigned gpu_take_fp_flags(void)
{
    unsigned f = fp_flags;
    fp_flags = 0;
    return f;
}

static void gpu_prepare(void) { (void)gp_jit_load(); /* a failure is the first compile's */ }

const GpBackend gp_backend_gpu = {
    "gpu", gp_op_supports, gpu_compile, gpu_launch, gpu_take_fp_flags, gp_blas_matmul, gpu_prepare,
};
