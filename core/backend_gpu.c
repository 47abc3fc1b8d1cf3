/* core/backend_gpu.c -- the GPU back end (core/backend.h,
 * GRUMPY_BACKEND=gpu): the planner's programs compiled for the device by
 * the same code generator (codegen_nvptx.c, PTX through jit_nvptx.c) and
 * run by runtime_gpu.c's device (CUDA, or the emulated device of tests,
 * GRUMPY_GPU_EMULATE=1).
 *
 * One launch, every kind:
 *   1. each operand gets a device address: a buffer's device copy when it
 *      has one (residency, below), else its bytes (the extent its shape
 *      and strides reach) copied to a temporary device block; an
 *      accumulating launch's output is set to the identity first, on the
 *      host, as the CPU back end does;
 *   2. the packed arguments (codegen.h) with device addresses, and for a
 *      map-reduce the leaves of each row, go to the device; the kernel runs
 *      (one thread per point, row, column or (row, leaf): codegen_nvptx.c).
 *      The arguments' copy (from page-locked memory) and the kernel are
 *      queued on the device's stream; the flags word's download (4.) is
 *      the one wait of a launch, and a map, scan or accumulating launch
 *      whose flags no error state watches (l->fp_use) has none: it
 *      returns with its kernel queued (the device's one stream orders it
 *      before every later copy, kernel and free);
 *   3. outputs in temporary blocks come back into the planner's staged
 *      host memory; a map-reduce's partials are combined in a fixed
 *      order: NumPy's pairwise tree for a float sum (leaves as NumPy's
 *      pairwise_sum recursion cuts the row), in index order otherwise, so
 *      results are the CPU back end's, bit for bit, and never vary run to
 *      run (no floating-point atomics).  A float sum of many leaves has
 *      the lower levels of its tree added on the device (gp_pairs_ptx:
 *      one thread per subtree of at most CHUNK_POINTS points, its
 *      additions in the tree's order) and only the subtrees' sums come
 *      back; other partials come back whole and are combined on the host;
 *   4. the kernel's IEEE flags word comes back (take_fp_flags): the wait
 *      for the kernel.  A launch whose flags would undo it
 *      (GP_FLAGS_UNDONE) first saves the bytes each output overwrites in
 *      a device copy (save_extent) and, when any flag is set, puts them
 *      back (fresh copies are dropped): GP_EFLAGS, the buffers as they
 *      were.  A queued
 *      kernel writes its flags into a word of their own, never read.
 *
 * Residency (guard.h's states; the planner passes each operand's buffer,
 * backend.h l->buf):
 *   - an output written into a guarded buffer stays on the device: the
 *     buffer becomes GP_ON_DEVICE with a device copy of all its bytes (the
 *     stage's contents uploaded first when the kernel does not write every
 *     byte or reads the old values), and the host copy is made when the
 *     host touches it (the guard's fault, gp_buffer_to_host -> to_host);
 *   - an input in a guarded buffer valid on the host is uploaded whole,
 *     once: GP_ON_BOTH, host pages read-only, and a host write drops the
 *     device copy (the guard's fault, gp_buffer_drop_device);
 *   - other memory (small arrays, memory NumPy did not get from grumpy)
 *     is copied in (and out) at each launch.
 * Device blocks are kept for reuse (a cache by size: cuMemFree waits for
 * the device).  A matrix product that is one GEMM runs on the device
 * (cuBLAS), its operands and result resident as a kernel's; other
 * products run on the host (OpenBLAS).
 */
#include "backend.h"
#include "guard.h"
#include "jit.h"
#include "jit_nvptx.h"
#include "runtime_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PW_BLOCK 128         /* NumPy's PW_BLOCKSIZE: a pairwise leaf */
#define ORDER_FREE_LEAF 4096 /* points per leaf of an order-free reduction */
/* A pairwise sum of at least CHUNK_MIN_LEAVES leaves a row adds its
 * subtrees of at most CHUNK_POINTS points on the device (at most 64
 * leaves: a leaf of a split row has 64 points or more).  Black-Scholes'
 * 10M-point means on an H100: the host's combine of 131072 partials a
 * mean was 20% of a pricing's samples. */
#define CHUNK_POINTS 4096
#define CHUNK_MIN_LEAVES 256

static const GpDevice *dev;
static unsigned fp_flags;
/* The kernels' IEEE flags words (device memory): a waited launch's (zero
 * between launches), and the one queued launches write (never read: no
 * error state watches their flags, backend.h GP_FLAGS_IGNORED). */
static GpDevPtr flags_word;
#define FLAGS_WORDS 2

static GpDevPtr flags_at(int fp_use)
{
    return flags_word + (GpDevPtr)(fp_use == GP_FLAGS_IGNORED ? sizeof(unsigned) : 0);
}

static int automatic;           /* GRUMPY_DEVICE=auto: per-launch placement (backend.h) */
static int emulate_dev;         /* open the emulated device */
static int open_failed;         /* automatic: the device would not open; every launch runs on the CPU */
static int64_t product_host_ns; /* automatic: time large products took on the host (their warm-up) */

int gp_backend_gpu_open(int emulate, int automatic_placement)
{
    automatic = automatic_placement;
    emulate_dev = emulate;
    if (automatic)
        return 0; /* opened by the first launch placed on it: cuInit costs a short script's run time */
    dev = gp_device_open(emulate);
    return dev ? 0 : -1;
}

/* Whether the device is open (opening it now, once). */
static int device_ready(void)
{
    if (!dev && !open_failed) {
        dev = gp_device_open(emulate_dev);
        open_failed = !dev;
    }
    return dev != NULL;
}

int gp_backend_gpu_driver_loads(void) { return gp_gpu_driver_loads(); }

const char *gp_backend_gpu_device(void) { return dev ? dev->name : NULL; }

/* ---- kernels, cached by program ------------------------------------------ */

/* A program's entry: the device's kernel, compiled at the program's first
 * launch on the device (with automatic placement a program may only ever
 * run on the CPU, and a PTX compile costs tens of milliseconds). */
typedef struct Kernel {
    struct Kernel *next;
    void *k;               /* the device's kernel, or NULL */
    int failed;            /* its compile failed (gp_last_error said why) */
    int64_t host_ns;       /* automatic placement: time its launches took on the CPU back end */
    int64_t host_launches; /* and how many there were */
    size_t n;
    unsigned char key[];
} Kernel;

static Kernel *kernels[256];

static void *device_kernel(Kernel *e, const GpProgram *p)
{
    if (e->k || e->failed)
        return e->k;
    char name[32];
    snprintf(name, sizeof name, "gp_d_%016llx", (unsigned long long)gp_program_hash(p));
    int64_t t0 = gp_now_ns();
    void *k = NULL;
    if (dev->wants_ptx) {
        int64_t from_disk = gp_stats.ptx_disk_hits;
        char *ptx = gp_ptx_compile(p, dev->arch, name);
        if (ptx)
            k = dev->load(ptx, name);
        free(ptx);
        if (k && gp_stats.ptx_disk_hits == from_disk)
            gp_stats.kernels_compiled++;
    } else {
        void *fn = gp_jit_kernel_for(p, GP_TARGET_HOST_GRID);
        k = fn ? dev->load(fn, name) : NULL;
    }
    gp_stats.compile_ns += gp_now_ns() - t0;
    if (!k)
        gp_stats.jit_failures++;
    e->k = k;
    e->failed = !k;
    return k;
}

/* The entry of program p (a Kernel); NULL with gp_last_error() set when
 * its device kernel cannot be made (placement on the device only). */
static void *gpu_compile(const GpProgram *p)
{
    size_t n = gp_program_key_size(p);
    uint64_t h = gp_program_hash(p);
    for (Kernel *e = kernels[h % 256]; e; e = e->next)
        if (e->n == n && !memcmp(e->key, p, n)) {
            gp_stats.cache_hits++;
            return automatic || e->k ? e : NULL;
        }
    if (gp_jit_fail_forced(p)) {
        gp_set_error("JIT failure forced by GRUMPY_DEBUG_JIT_FAIL");
        return NULL;
    }
    Kernel *e = calloc(1, sizeof *e + n);
    if (!e) {
        gp_set_error("out of memory");
        return NULL;
    }
    e->n = n;
    memcpy(e->key, p, n);
    e->next = kernels[h % 256];
    kernels[h % 256] = e;
    gp_ptx_dump(p);
    return automatic || device_kernel(e, p) ? e : NULL;
}

/* ---- device memory ------------------------------------------------------ */

/* Freed blocks kept for the next allocation of the same size: programs
 * allocate the same few sizes every iteration, and cuMemFree waits for the
 * device. */
#define POOL_BLOCKS 32
#define POOL_BYTES ((size_t)4 << 30)

static struct {
    GpDevPtr p;
    size_t n;
} pool[POOL_BLOCKS];
static int npool;
static size_t pool_bytes;

static void pool_drain(void)
{
    while (npool > 0)
        dev->release(pool[--npool].p);
    pool_bytes = 0;
}

/* A device block of n bytes (contents undefined when reused); 0 or -1. */
static int dmem_alloc(size_t n, GpDevPtr *d)
{
    for (int i = npool - 1; i >= 0; i--)
        if (pool[i].n == n) {
            *d = pool[i].p;
            pool_bytes -= n;
            pool[i] = pool[--npool];
            return 0;
        }
    if (dev->alloc(n, d) == 0)
        return 0;
    pool_drain(); /* out of device memory: give the cache back, once */
    return dev->alloc(n, d);
}

static void dmem_free(GpDevPtr d, size_t n)
{
    if (npool < POOL_BLOCKS && pool_bytes + n <= POOL_BYTES) {
        pool[npool].p = d;
        pool[npool++].n = n;
        pool_bytes += n;
    } else {
        dev->release(d);
    }
}

/* ---- timed device calls (grumpy.stats: gpu_copy_seconds, gpu_kernel_seconds) */

static int upload(GpDevPtr d, const void *h, size_t n)
{
    int64_t t0 = gp_now_ns();
    int r = dev->upload(d, h, n);
    gp_stats.gpu_copy_ns += gp_now_ns() - t0;
    return r;
}

static int download(void *h, GpDevPtr d, size_t n)
{
    int64_t t0 = gp_now_ns();
    int r = dev->download(h, d, n);
    gp_stats.gpu_copy_ns += gp_now_ns() - t0;
    return r;
}

static void args_ring_empty(void);

/* Waits for everything queued: downloads the waited launches' flags word
 * into *word, and zeroes it where set.  0 or -1. */
static int wait_flags(unsigned *word)
{
    unsigned zero = 0;
    if (dev->download(word, flags_word, sizeof *word) != 0)
        return -1;
    args_ring_empty();                                              /* (every queued copy is done) */
    return *word ? dev->upload(flags_word, &zero, sizeof zero) : 0; /* (timed as the kernel's) */
}

/* Runs kernel k; with wait, waits for it: the download of the flags words
 * (wait_flags, into *word) is the wait, so the kernel's time is the
 * launch's and the wait's.  Without, returns with the kernel queued
 * (gp_stats.gpu_kernels_queued). */
static int run_kernel(void *k, void **params, int nparams, int64_t nthreads, unsigned *word, int wait)
{
    int64_t t0 = gp_now_ns();
    int r = dev->launch(k, params, nparams, nthreads);
    if (r == 0) {
        gp_stats.gpu_kernels_launched++;
        if (wait)
            r = wait_flags(word);
        else
            gp_stats.gpu_kernels_queued++;
    }
    gp_stats.gpu_kernel_ns += gp_now_ns() - t0;
    return r;
}

/* ---- device copies of guarded buffers (guard.h GpDeviceCopyOps) ---------- */

static int copy_to_host(GpBuffer *b, char *dst)
{
    if (download(dst, (GpDevPtr)(uintptr_t)b->device, b->nbytes) != 0)
        return -1;
    gp_stats.bytes_d2h += (int64_t)b->nbytes;
    return 0;
}

static void copy_release(GpBuffer *b) { dmem_free((GpDevPtr)(uintptr_t)b->device, b->nbytes); }

static const GpDeviceCopyOps copy_ops = {copy_to_host, copy_release};

/* b's device copy, when this back end made it (0: none). */
static GpDevPtr device_copy(const GpBuffer *b)
{
    return b && b->device && b->dev_ops == &copy_ops ? (GpDevPtr)(uintptr_t)b->device : 0;
}

/* An input in guarded buffer b (valid on the host, no pending writer):
 * uploaded whole, once, and kept while the host does not write it
 * (GP_ON_BOTH); *dc its device copy, or 0 when b cannot be kept (other
 * memory: the caller copies the operand in).  0, or -1 (no device
 * memory, a failed copy). */
static int keep_input(GpBuffer *b, GpDevPtr *dc)
{
    *dc = 0;
    if (b->producer || !(b->prot & PROT_READ))
        return 0;
    GpDevPtr d;
    if (dmem_alloc(b->nbytes, &d) != 0)
        return -1;
    if (upload(d, b->data, b->nbytes) != 0) {
        dmem_free(d, b->nbytes);
        return -1;
    }
    gp_stats.host_to_device++;
    gp_stats.bytes_h2d += (int64_t)b->nbytes;
    if (gp_buffer_set_device(b, (void *)(uintptr_t)d, &copy_ops, 1) == 0)
        *dc = d; /* else released by it */
    return 0;
}

/* ---- one launch ------------------------------------------------------------ */

typedef struct {
    GpDevPtr mem[GP_MAXOPERANDS + 4]; /* temporary device blocks, freed at the end */
    size_t size[GP_MAXOPERANDS + 4];
    int nmem;
    GpBuffer *resident[GP_MAXOPERANDS]; /* outputs left on the device, per slot */
    GpDevPtr fresh[GP_MAXOPERANDS];     /* their device copies made by this launch */
    /* GP_FLAGS_UNDONE: the bytes an output overwrites in its buffer's
     * device copy, saved (a block of saved_n[k] bytes from saved_at[k]);
     * undo_lost: one could not be saved (no device memory), so the launch
     * cannot be undone and its flags go unreported, as before */
    GpDevPtr saved[GP_MAXOPERANDS], saved_at[GP_MAXOPERANDS];
    size_t saved_n[GP_MAXOPERANDS];
    int undo_lost;
} Launch;

/* A new device block *d holding the n bytes at device address src (a
 * block of the cache by size, dmem_free to give back).  0 or -1. */
static int device_duplicate(GpDevPtr src, size_t n, GpDevPtr *d)
{
    if (dmem_alloc(n, d) != 0)
        return -1;
    int64_t t0 = gp_now_ns();
    int rc = dev->copy(*d, src, n);
    gp_stats.gpu_copy_ns += gp_now_ns() - t0;
    if (rc != 0)
        dmem_free(*d, n);
    return rc != 0 ? -1 : 0;
}

/* GP_FLAGS_UNDONE: saves slot k's n bytes at device address at (what the
 * kernel will overwrite in place) into L->saved[k].  0 or -1. */
static int save_extent(Launch *L, int k, GpDevPtr at, size_t n)
{
    GpDevPtr s;
    if (n == 0)
        return 0;
    if (device_duplicate(at, n, &s) != 0)
        return -1;
    L->saved[k] = s;
    L->saved_at[k] = at;
    L->saved_n[k] = n;
    return 0;
}

/* Puts back what save_extent saved (a launch undone).  0 or -1. */
static int restore_extents(Launch *L, int nslots)
{
    int rc = 0;
    for (int k = nslots - 1; k >= 0; k--)
        if (L->saved[k] && dev->copy(L->saved_at[k], L->saved[k], L->saved_n[k]) != 0)
            rc = -1;
    return rc;
}

static int device_alloc(Launch *L, size_t n, GpDevPtr *d)
{
    if (dmem_alloc(n, d) != 0)
        return -1;
    L->mem[L->nmem] = *d;
    L->size[L->nmem++] = n;
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

/* The bytes a gather reads from operand k when k is a gather's table (the
 * 0-d leaf at the table's first element, whose shape reaches one
 * element): the table's length (the gather's third input, a constant)
 * times its element size; else 0. */
static int64_t gather_table_bytes(const GpProgram *p, const GpKernelArgs *a, int k)
{
    for (int i = 0; i < p->ninstr; i++) {
        const GpInstr *g = &p->instr[i];
        if (g->op != GP_OP_GATHER)
            continue;
        const GpInstr *t = &p->instr[g->in[0]], *len = &p->instr[g->in[2]];
        if (t->op == GP_OP_LEAF && t->slot == k && len->op == GP_OP_CONST && len->slot >= 0)
            return a->consts[len->slot].i * (int64_t)gp_dtype_size((GpDType)t->dtype);
    }
    return 0;
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

/* Whether output slot k's buffer is also read through another slot. */
static int read_elsewhere(const GpProgram *p, const GpLaunch *l, int k)
{
    size_t e;
    for (int j = 0; j < p->noperands; j++)
        if (j != k && l->buf[j] == l->buf[k] && !is_output(p, j, &e))
            return 1;
    return 0;
}

/* Whether slot is an accumulating launch's folded output (a REDUCE-kind
 * instruction's): its elements start at the identity, filled into the
 * host stage, so it is copied in and out, never kept on the device. */
static int is_accumulated(const GpProgram *p, const GpLaunch *l, int slot)
{
    if (l->kind != GP_LAUNCH_ACCUMULATE)
        return 0;
    for (int i = 0; i < p->ninstr; i++)
        if (p->instr[i].slot == slot && gp_op_kind[p->instr[i].op] == GP_KIND_REDUCE)
            return 1;
    return 0;
}

/* Whether slot is read by a leaf (an in-place output reads its old values). */
static int is_read(const GpProgram *p, int slot)
{
    for (int i = 0; i < p->ninstr; i++)
        if (p->instr[i].slot == slot && p->instr[i].op == GP_OP_LEAF)
            return 1;
    return 0;
}

/* Whether slot k's elements are every element of its buffer: its extent
 * is all nbytes and the points it is written at are that many elements. */
static int covers_buffer(const GpKernelArgs *a, int k, size_t elsize, int64_t off, int64_t lo, int64_t hi,
                         size_t nbytes)
{
    int64_t count = 1;
    for (int d = 0; d < a->nd; d++)
        if (a->strides[k][d] != 0)
            count *= a->shape[d];
    return off + lo == 0 && off + hi == (int64_t)nbytes && count * (int64_t)elsize == (int64_t)nbytes;
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

/* The additions of NumPy's pairwise tree over the leaves of a row of n
 * points, as pairwise_leaves cuts them, in the order the recursion makes
 * them: pair (a, b) adds leaf b's subtree sum into leaf a's slot (a
 * subtree's sum is kept at its first leaf).  For the device the tree is
 * cut (CHUNK_POINTS) into chunks, subtrees whose additions a device thread
 * makes in the tree's order (gp_pairs_ptx), as (first pair, pairs, first
 * leaf) triples; their pairs (leaf indices of the row); and the additions
 * above them, with chunk indices for leaf indices (each such pair adds
 * subtrees made of whole chunks, kept at their first chunk's slot). */
typedef struct {
    int64_t nchunks, ncpairs, ntop;
    int64_t *chunks, *cpairs, *top, *chunk_of_leaf;
} Chunks;

/* The schedule of n points; inside 1: every pair into c->cpairs (the whole
 * tree, or one chunk's); inside 0: subtrees of at most CHUNK_POINTS points
 * made chunks, the pairs above them into c->top.  *next is the next leaf;
 * returns the subtree's first leaf. */
static int64_t chunk_schedule(int64_t n, int inside, int64_t *next, Chunks *c)
{
    if (!inside && n <= CHUNK_POINTS) {
        int64_t k = c->nchunks++, first = *next;
        c->chunks[3 * k] = c->ncpairs;
        c->chunks[3 * k + 2] = first;
        (void)chunk_schedule(n, 1, next, c);
        c->chunks[3 * k + 1] = c->ncpairs - c->chunks[3 * k];
        c->chunk_of_leaf[first] = k;
        return first;
    }
    if (n <= PW_BLOCK)
        return (*next)++;
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    int64_t a = chunk_schedule(n2, inside, next, c);
    int64_t b = chunk_schedule(n - n2, inside, next, c);
    int64_t *pairs = inside ? c->cpairs + 2 * c->ncpairs++ : c->top + 2 * c->ntop++;
    pairs[0] = a;
    pairs[1] = b;
    return a;
}

/* The whole tree's additions into pairs (room for one pair per leaf);
 * their count. */
static int64_t pairwise_schedule(int64_t n, int64_t *pairs)
{
    Chunks c = {0, 0, 0, NULL, pairs, NULL, NULL};
    int64_t next = 0;
    (void)chunk_schedule(n, 1, &next, &c);
    return c.ncpairs;
}

/* Leaves of rows of `inner` points (row_leaves) with the device's copy,
 * and for a pairwise sum the host's schedule of their additions; for one
 * of CHUNK_MIN_LEAVES leaves or more, its chunks too (dchunks: the chunk
 * triples then their pairs, on the device; top: the additions above them,
 * on the host). */
typedef struct {
    int64_t inner, count, npairs;
    int mode;
    GpDevPtr d;
    int64_t *pairs;
    int64_t nchunks, ntop;
    GpDevPtr dchunks;
    size_t dchunks_bytes;
    int64_t *top;
} Leaves;

/* r[a] += r[b] for each pair (a, b) of pairs[0..npairs), in order: float64
 * or float32 values in GpScalar slots.  IEEE addition is commutative, so
 * slot a + slot b is NumPy's left + right. */
static void add_pairs(GpScalar *r, const int64_t *pairs, int64_t npairs, GpDType t)
{
    if (t == GP_FLOAT64)
        for (int64_t k = 0; k < npairs; k++)
            r[pairs[2 * k]].f += r[pairs[2 * k + 1]].f;
    else
        for (int64_t k = 0; k < npairs; k++)
            r[pairs[2 * k]].f32 += r[pairs[2 * k + 1]].f32;
}

/* Combines the (outer x nslots) partials into l->out, a pairwise sum's by
 * the additions pairs[0..npairs) (slot indices), made in place.  A float
 * sum or product that is not finite raises the IEEE flags as a kernel's
 * float instruction does (codegen_nvptx.c): the partials' additions here
 * (or on the device, gp_pairs_ptx) may overflow where every leaf's sum did
 * not, and NumPy warns for that; the planner's replay gives NumPy's
 * warnings (none when the inputs held the infinity). */
static void combine(const GpProgram *p, const GpLaunch *l, int64_t outer, int64_t nslots, const int64_t *pairs,
                    int64_t npairs, void *partials)
{
    size_t e = gp_dtype_size(l->dtype);
    for (int64_t o = 0; o < outer; o++) {
        if (l->kind == GP_LAUNCH_ARGREDUCE) {
            const GpArgResult *r = (const GpArgResult *)partials + o * nslots;
            GpArgResult best = r[0];
            for (int64_t q = 1; q < nslots; q++)
                if (r[q].index >= 0 && gp_arg_better(l->op, l->dtype, r[q].value, best.value))
                    best = r[q];
            ((int64_t *)l->out)[o] = best.index;
            continue;
        }
        GpScalar *r = (GpScalar *)partials + o * nslots;
        GpScalar acc = gp_reduce_identity(l->op, l->dtype);
        if (p->pairwise) { /* a float sum (plan.c sets pairwise for no other) */
            add_pairs(r, pairs, npairs, l->dtype);
            gp_reduce_combine(l->op, l->dtype, &acc, r[0]);
        } else {
            for (int64_t q = 0; q < nslots; q++)
                gp_reduce_combine(l->op, l->dtype, &acc, r[q]);
        }
        memcpy(l->out + o * (int64_t)e, &acc, e);
        int adds = l->op == GP_OP_SUM || l->op == GP_OP_PROD; /* (min and max raise nothing) */
        if (adds && ((l->dtype == GP_FLOAT64 && !isfinite(acc.f)) || (l->dtype == GP_FLOAT32 && !isfinite(acc.f32))))
            fp_flags |= GP_FPE_DIVIDE | GP_FPE_OVERFLOW | GP_FPE_INVALID;
    }
}

/* The emulated device's gp_pairs_f64 / gp_pairs_f32 (runtime_gpu.h: a
 * host function of the kernel's parameters): the same additions as the
 * PTX, thread after thread. */
static void host_pairs(GpDType t, void *partial, const int64_t *chunks, const int64_t *pairs, int64_t nleaves,
                       int64_t nchunks, int64_t total, void *out)
{
    for (int64_t i = 0; i < total; i++) {
        GpScalar *r = (GpScalar *)partial + i / nchunks * nleaves;
        const int64_t *c = chunks + 3 * (i % nchunks);
        add_pairs(r, pairs + 2 * c[0], c[1], t);
        ((GpScalar *)out)[i] = r[c[2]];
    }
}

static void host_pairs_f64(void *partial, void *chunks, void *pairs, int64_t nleaves, int64_t nchunks, int64_t total,
                           void *out)
{
    host_pairs(GP_FLOAT64, partial, chunks, pairs, nleaves, nchunks, total, out);
}

static void host_pairs_f32(void *partial, void *chunks, void *pairs, int64_t nleaves, int64_t nchunks, int64_t total,
                           void *out)
{
    host_pairs(GP_FLOAT32, partial, chunks, pairs, nleaves, nchunks, total, out);
}

/* The device's kernel adding the chunks of a pairwise sum of dtype t
 * (gp_pairs_ptx's entry, or the emulated device's host function), loaded
 * once; NULL with gp_last_error() set. */
static void *pairs_kernel(GpDType t)
{
    static void *k[2];
    static int failed[2];
    int i = t == GP_FLOAT32;
    if (!k[i] && !failed[i]) {
        const char *name = i ? "gp_pairs_f32" : "gp_pairs_f64";
        k[i] = dev->wants_ptx ? dev->load(gp_pairs_ptx, name)
                              : dev->load(i ? (const void *)host_pairs_f32 : (const void *)host_pairs_f64, name);
        failed[i] = !k[i];
    }
    return k[i];
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

/* Page-locked host memory of at least n bytes, one buffer per use (kept,
 * grown as needed: a copy from pageable memory goes through the driver's
 * own staging at a fraction of the bus's speed, and only a copy from
 * page-locked memory can be queued), or NULL.  STAGE_PARTIALS is free
 * again when the launch that used it returns (it waits for the device);
 * STAGE_ARGS is args_staging's ring. */
enum { STAGE_PARTIALS, STAGE_ARGS, NSTAGES };

static void *host_staging(int use, size_t n)
{
    static void *buf[NSTAGES];
    static size_t cap[NSTAGES];
    if (n <= cap[use])
        return buf[use];
    if (buf[use])
        dev->host_free(buf[use]);
    cap[use] = n < ((size_t)64 << 10) ? (size_t)64 << 10 : n;
    if (!(buf[use] = dev->host_alloc(cap[use])))
        cap[use] = 0;
    return buf[use];
}

/* The packed arguments' page-locked staging (host_staging's STAGE_ARGS
 * used as a ring), since a launch that does not wait returns while its
 * arguments' queued copy still reads them.  Each wait empties it
 * (wait_flags: every copy queued before is done); a full ring waits for
 * the device first, so the staging grows only while nothing reads it.  At
 * least n bytes, or NULL. */
#define ARGS_RING ((size_t)256 << 10)

static size_t ring_pos, ring_cap;

static void args_ring_empty(void) { ring_pos = 0; }

static void *args_staging(size_t n)
{
    n = (n + 63) & ~(size_t)63;
    if (ring_pos + n > ring_cap) {
        unsigned w = 0;
        if (ring_pos > 0 && wait_flags(&w) != 0)
            return NULL;
        fp_flags |= w;
        ring_pos = 0;
        ring_cap = n < ARGS_RING ? ARGS_RING : n;
    }
    char *base = host_staging(STAGE_ARGS, ring_cap);
    if (!base) {
        ring_cap = 0;
        return NULL;
    }
    ring_pos += n;
    return base + ring_pos - n;
}

/* The leaves of rows of `inner` points, as row_leaves cuts them, on the
 * device and (a pairwise sum) with their additions' schedule and chunks:
 * the last few kept (a loop reduces rows of the same length every
 * iteration).  The cache's entry, or NULL. */
#define LEAF_CACHE 4

static Leaves leaf_cache[LEAF_CACHE];
static int leaf_next;

static void leaves_free(Leaves *lv)
{
    if (lv->d)
        dmem_free(lv->d, (size_t)(2 * lv->count) * sizeof(int64_t));
    if (lv->dchunks)
        dmem_free(lv->dchunks, lv->dchunks_bytes);
    free(lv->pairs);
    free(lv->top);
    memset(lv, 0, sizeof *lv);
}

/* lv's chunks (Chunks) for a row of lv->inner points, on the device; 0, or
 * -1 leaving lv without (its partials are then combined on the host). */
static int leaves_chunk(Leaves *lv)
{
    Chunks c = {0, 0, 0, NULL, NULL, NULL, NULL};
    int64_t n = lv->count, next = 0;
    c.chunks = malloc((size_t)(3 * n) * sizeof(int64_t));
    c.cpairs = malloc((size_t)(2 * n) * sizeof(int64_t));
    c.top = malloc((size_t)(2 * n) * sizeof(int64_t));
    c.chunk_of_leaf = malloc((size_t)n * sizeof(int64_t));
    int rc = -1;
    if (c.chunks && c.cpairs && c.top && c.chunk_of_leaf) {
        (void)chunk_schedule(lv->inner, 0, &next, &c);
        for (int64_t k = 0; k < 2 * c.ntop; k++)
            c.top[k] = c.chunk_of_leaf[c.top[k]]; /* (first leaves of chunks) */
        /* the chunk triples, then their pairs, in one block (every leaf is
         * in a chunk, so ncpairs = n - nchunks: 3 nchunks + 2 ncpairs =
         * nchunks + 2n fits the 3n the triples have room for) */
        size_t bytes = (size_t)(3 * c.nchunks + 2 * c.ncpairs) * sizeof(int64_t);
        int fits = next == n && 3 * c.nchunks + 2 * c.ncpairs <= 3 * n;
        if (fits)
            memmove(c.chunks + 3 * c.nchunks, c.cpairs, (size_t)(2 * c.ncpairs) * sizeof(int64_t));
        if (fits && dmem_alloc(bytes, &lv->dchunks) == 0) {
            if (upload(lv->dchunks, c.chunks, bytes) == 0) {
                lv->dchunks_bytes = bytes;
                lv->nchunks = c.nchunks;
                lv->ntop = c.ntop;
                lv->top = c.top;
                c.top = NULL;
                rc = 0;
            } else {
                dmem_free(lv->dchunks, bytes);
                lv->dchunks = 0;
            }
        }
    }
    free(c.chunks);
    free(c.cpairs);
    free(c.top);
    free(c.chunk_of_leaf);
    return rc;
}

static const Leaves *device_leaves(const GpProgram *p, const GpLaunch *l, int64_t inner)
{
    int mode = p->pairwise ? 1 : l->order_free && l->kind != GP_LAUNCH_ARGREDUCE ? 2 : 3;
    for (int i = 0; i < LEAF_CACHE; i++)
        if (leaf_cache[i].d && leaf_cache[i].inner == inner && leaf_cache[i].mode == mode)
            return &leaf_cache[i];
    Leaves lv;
    memset(&lv, 0, sizeof lv);
    lv.inner = inner;
    lv.mode = mode;
    int64_t *leaves = row_leaves(p, l, inner, &lv.count);
    size_t n = (size_t)(2 * lv.count) * sizeof *leaves;
    const Leaves *found = NULL;
    if (leaves && p->pairwise) {
        if ((lv.pairs = malloc(n)) != NULL)
            lv.npairs = pairwise_schedule(inner, lv.pairs);
        if (lv.pairs && lv.count >= CHUNK_MIN_LEAVES)
            (void)leaves_chunk(&lv); /* without: the partials come back whole */
    }
    if (leaves && (lv.pairs || !p->pairwise) && dmem_alloc(n, &lv.d) == 0) {
        if (upload(lv.d, leaves, n) == 0) {
            Leaves *slot = &leaf_cache[leaf_next++ % LEAF_CACHE];
            leaves_free(slot);
            *slot = lv;
            memset(&lv, 0, sizeof lv);
            found = slot;
        } else {
            dmem_free(lv.d, n);
            lv.d = 0;
        }
    }
    leaves_free(&lv);
    free(leaves);
    return found;
}

/* Adds the chunks of the (outer x nleaves) partials at dpartial on the
 * device (gp_pairs_ptx) and brings their sums back into partials, outer x
 * lv->nchunks slots: 0; -1 when nothing ran (the partials are as the
 * reduction left them); -2 when the kernel ran but its sums did not come
 * back (the partials are spent). */
static int device_chunks(const GpProgram *p, const Leaves *lv, Launch *L, GpDevPtr dpartial, int64_t outer,
                         void *partials)
{
    GpDType t = (GpDType)p->instr[p->root].dtype;
    void *k = pairs_kernel(t);
    int64_t nleaves = lv->count, nchunks = lv->nchunks, total = outer * nchunks;
    GpDevPtr dchunks = lv->dchunks, dpairs = lv->dchunks + (GpDevPtr)(3 * nchunks) * sizeof(int64_t), dout = 0;
    size_t bytes = (size_t)total * sizeof(GpScalar);
    if (!k || device_alloc(L, bytes, &dout) != 0)
        return -1;
    void *params[7] = {&dpartial, &dchunks, &dpairs, &nleaves, &nchunks, &total, &dout};
    int64_t t0 = gp_now_ns();
    int r = dev->launch(k, params, 7, total);
    if (r == 0)
        gp_stats.gpu_kernels_launched++;
    gp_stats.gpu_kernel_ns += gp_now_ns() - t0;
    if (r != 0)
        return -1;
    if (download(partials, dout, bytes) != 0)
        return -2;
    gp_stats.bytes_d2h += (int64_t)bytes;
    return 0;
}

static GpStatus run_reduce(void *k, const GpProgram *p, const GpLaunch *l, Launch *L, GpDevPtr da, unsigned *word,
                           int64_t outer, int64_t inner)
{
    const Leaves *lv = device_leaves(p, l, inner);
    if (!lv)
        return GP_ENOMEM;
    int64_t nleaves = lv->count;
    GpDevPtr dleaves = lv->d, dpartial = 0;
    size_t psize = l->kind == GP_LAUNCH_ARGREDUCE ? sizeof(GpArgResult) : sizeof(GpScalar);
    size_t pbytes = (size_t)(outer * nleaves) * psize;
    void *partials = host_staging(STAGE_PARTIALS, pbytes);
    GpStatus st = GP_ENOMEM;
    if (partials && device_alloc(L, pbytes, &dpartial) == 0) {
        void *params[6] = {&da, &dleaves, &nleaves, &outer, &dpartial, &flags_word};
        int64_t per_leaf = gp_codegen_leaf_threads(p, dev->wants_ptx ? GP_TARGET_NVPTX : GP_TARGET_HOST_GRID);
        if (run_kernel(k, params, 6, outer * nleaves * per_leaf, word, 1) == 0) {
            int chunked = lv->dchunks ? device_chunks(p, lv, L, dpartial, outer, partials) : -1;
            if (chunked == 0) {
                combine(p, l, outer, lv->nchunks, lv->top, lv->ntop, partials);
                st = GP_OK;
            } else if (chunked == -1 && download(partials, dpartial, pbytes) == 0) {
                gp_stats.bytes_d2h += (int64_t)pbytes;
                combine(p, l, outer, nleaves, lv->pairs, lv->npairs, partials);
                st = GP_OK;
            }
        }
    }
    return st;
}

/* Gives every operand a device address (the file's comment, step 1 and
 * residency); args gets the packed arguments' device addresses.  dbase[k]
 * is slot k's temporary block (0: a device copy, nothing to bring back).
 * 0 or -1. */
static int operands_in(const GpProgram *p, const GpLaunch *l, GpKernelArgs *args, Launch *L, int64_t *lo, int64_t *hi,
                       GpDevPtr *dbase)
{
    GpKernelArgs d = *args;
    for (int k = 0; k < p->noperands; k++) {
        size_t e = 1;
        int out = is_output(p, k, &e);
        extent(args, k, e, &lo[k], &hi[k]);
        int64_t table = gather_table_bytes(p, args, k); /* (the whole table, not its first element) */
        if (table > hi[k])
            hi[k] = table;
        dbase[k] = 0;
        GpBuffer *b = l->buf[k];
        int64_t off = b ? args->data[k] - l->base[k] : 0;
        int inside = b && b->mapped && off + lo[k] >= 0 && off + hi[k] <= (int64_t)b->nbytes;
        GpDevPtr dc = inside ? device_copy(b) : 0;
        for (int j = 0; j < k && out && inside; j++)
            if (L->resident[j] == b) {
                dc = L->fresh[j] ? L->fresh[j] : dc; /* another output in the same buffer: one device copy */
                break;
            }
        if (dc && out && dc == device_copy(b)) {
            if (read_elsewhere(p, l, k)) {
                /* the device's stage: the kernel reads b's old values
                 * through other views while it writes this one (x[1:] =
                 * x[:-1] + ...), so it writes a copy, which becomes b's
                 * device copy */
                if (device_duplicate(dc, b->nbytes, &dc) != 0)
                    return -1;
                L->fresh[k] = dc;
            } else if (l->fp_use == GP_FLAGS_UNDONE &&
                       save_extent(L, k, dc + (GpDevPtr)(off + lo[k]), (size_t)(hi[k] - lo[k])) != 0) {
                L->undo_lost = 1; /* (written in place all the same) */
            }
        }
        if (!dc && inside && b->where == GP_ON_HOST && !is_accumulated(p, l, k)) {
            if (out) {
                /* a new device copy; the stage's bytes first unless all are written */
                if (dmem_alloc(b->nbytes, &dc) != 0)
                    return -1;
                if (is_read(p, k) || !covers_buffer(args, k, e, off, lo[k], hi[k], b->nbytes)) {
                    if (upload(dc, l->base[k], b->nbytes) != 0) {
                        dmem_free(dc, b->nbytes);
                        return -1;
                    }
                    gp_stats.host_to_device++;
                    gp_stats.bytes_h2d += (int64_t)b->nbytes;
                }
                L->fresh[k] = dc;
            } else if (keep_input(b, &dc) != 0) {
                return -1;
            }
        }
        if (dc) {
            if (out)
                L->resident[k] = b;
            d.data[k] = (char *)(uintptr_t)(dc + (GpDevPtr)off);
            continue;
        }
        if (device_alloc(L, (size_t)(hi[k] - lo[k]), &dbase[k]) != 0 ||
            upload(dbase[k], args->data[k] + lo[k], (size_t)(hi[k] - lo[k])) != 0)
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

/* Automatic placement (GRUMPY_DEVICE=auto; backend.h).  Measured on an
 * H100 with 16 host cores (session of 2026-11-26, tools/programs): opening
 * the device took ~0.3 s and the driver's JIT of each new kernel 0.1-0.2
 * s; a launch costs ~40 us of synchronous driver calls; kernels of few
 * threads (a scan's rows, a reduction of one leaf per row) ran 20-60x
 * slower than on the host (rolling_stats: 2.1 s of kernels, 0.09 s on the
 * host).  Placing every kernel of 8 MiB or more on the device made that
 * program set 0.61x NumPy (1.13x on the host).  So a kernel runs on the
 * device when
 *   - it has at least GPU_MIN_THREADS threads, or the device holds
 *     operands that would take longer to copy back (at
 *     GPU_BUS_BYTES_PER_NS) than its threads take to walk their points
 *     one after another (GPU_SERIAL_NS each: an MLP's bias gradient, 2048
 *     column sums of 8192 rows, stays where its 64 MB operand is; under the
 *     rule of threads alone the H100 copied 1.8 GB back in 30 MLP steps),
 *     and
 *   - the device holds one of its operands, or it moves at least
 *     gp_config.gpu_min_bytes and has been promoted: its launches on the
 *     host took gp_config.gpu_warmup_ns in all (the device's start-up and
 *     its JIT are paid back only by a kernel that runs again and again),
 *     each at least twice what the device would take (GPU_LAUNCH_NS plus
 *     its bytes at GPU_MEMORY_BYTES_PER_NS);
 * else on the host, after any operand the device holds is copied back
 * (never an output: the planner has given up its host stage). */
#define GPU_MIN_THREADS 16384
#define GPU_SERIAL_NS 100       /* rolling_stats' scans: 2.1 s for 6 kernels walking ~4M points each */
#define GPU_BUS_BYTES_PER_NS 10 /* 10 GB/s */
#define GPU_LAUNCH_NS 50000
#define GPU_MEMORY_BYTES_PER_NS 1000 /* 1 TB/s */

/* The device threads a launch of p over args would run (codegen_nvptx.c:
 * one per point, row, column or (row, leaf) times the leaf's threads). */
static int64_t launch_threads(const GpProgram *p, const GpLaunch *l, const GpKernelArgs *args)
{
    int64_t outer = 1, inner = args->shape[args->nd - 1];
    for (int d = 0; d < args->nd - 1; d++)
        outer *= args->shape[d];
    switch (l->kind) {
    case GP_LAUNCH_MAP: return outer * inner;
    case GP_LAUNCH_SCAN: return outer;
    case GP_LAUNCH_ACCUMULATE: return inner;
    default: {
        int64_t leaves = p->pairwise                                       ? inner / PW_BLOCK + 1
                         : l->order_free && l->kind != GP_LAUNCH_ARGREDUCE ? inner / ORDER_FREE_LEAF + 1
                                                                           : 1;
        return outer * leaves * gp_codegen_leaf_threads(p, GP_TARGET_NVPTX); /* the emulated device too: its model */
    }
    }
}

/* Whether this launch runs on the CPU back end (the rule above); *to_host
 * is set when operands the device holds must be copied back first. */
static int placed_on_cpu(const Kernel *e, const GpProgram *p, const GpLaunch *l, const GpKernelArgs *args, int *to_host)
{
    *to_host = 0;
    if (!automatic)
        return 0;
    int held = 0, out_held = 0;
    int64_t held_bytes = 0, points = 1, threads = launch_threads(p, l, args);
    for (int k = 0; k < p->noperands; k++) {
        size_t sz;
        if (device_copy(l->buf[k])) {
            held = 1;
            if (l->buf[k]->where == GP_ON_DEVICE) /* else the host's copy is as good */
                held_bytes += (int64_t)l->buf[k]->nbytes;
            out_held |= is_output(p, k, &sz);
        }
    }
    for (int d = 0; d < args->nd; d++)
        points *= args->shape[d];
    if (!out_held && threads < GPU_MIN_THREADS &&
        points / (threads > 0 ? threads : 1) * GPU_SERIAL_NS >= held_bytes / GPU_BUS_BYTES_PER_NS) {
        *to_host = held;
        return 1;
    }
    if (held)
        return 0;
    if (l->bytes < gp_config.gpu_min_bytes)
        return 1;
    if (gp_config.gpu_warmup_ns == 0)
        return 0;
    int64_t device_ns = GPU_LAUNCH_NS + l->bytes / GPU_MEMORY_BYTES_PER_NS;
    return !(e->host_ns >= gp_config.gpu_warmup_ns && e->host_launches > 0 &&
             e->host_ns / e->host_launches >= 2 * device_ns);
}

/* The launch on the CPU back end (placed_on_cpu), timed for the kernel's
 * warm-up; operands only the device holds are copied back first when
 * to_host. */
static GpStatus launch_on_host(Kernel *ke, const GpProgram *p, GpKernelArgs *args, const GpLaunch *l, int to_host)
{
    for (int k = 0; k < p->noperands && to_host; k++)
        if (l->buf[k] && l->buf[k]->where == GP_ON_DEVICE && gp_buffer_to_host(l->buf[k]) != 0)
            return GP_ENOMEM;
    void *ck = gp_backend_cpu.compile(p);
    int64_t t0 = gp_now_ns();
    GpStatus st = ck ? gp_backend_cpu.launch(ck, p, args, l) : GP_EJIT;
    ke->host_ns += gp_now_ns() - t0;
    ke->host_launches++;
    return st;
}

/* Whether an accumulating launch's folded output cannot be computed here:
 * its buffer is held by the device, or shared with another output (which
 * the device would keep): its identity fill is the host stage's. */
static int accumulate_refused(const GpProgram *p, const GpLaunch *l)
{
    for (int s = 0; l->kind == GP_LAUNCH_ACCUMULATE && s < p->noperands; s++) {
        if (!is_accumulated(p, l, s))
            continue;
        size_t e;
        int shared = 0;
        for (int j = 0; j < p->noperands; j++)
            shared |= j != s && l->buf[j] && l->buf[j] == l->buf[s] && is_output(p, j, &e);
        if (device_copy(l->buf[s]) || shared)
            return 1;
    }
    return 0;
}

/* A launch undone (GP_FLAGS_UNDONE, flags raised): the bytes its outputs
 * overwrote in place put back (restore_extents); fresh device copies are
 * dropped by launch_free and host outputs never downloaded, so every
 * buffer is as it was.  GP_EFLAGS, or GP_ENOMEM when the bytes could not
 * be put back (a buffer whose host copy is valid then loses its device
 * copy). */
static GpStatus undo(Launch *L, int nslots)
{
    if (restore_extents(L, nslots) != 0) {
        for (int s = 0; s < nslots; s++)
            if (L->saved[s] && L->resident[s] && L->resident[s]->where == GP_ON_BOTH)
                gp_buffer_drop_device(L->resident[s]);
        gp_set_error("GPU back end: an undone in-place kernel's outputs could not be restored");
        return GP_ENOMEM;
    }
    gp_set_error("GPU back end: an in-place kernel raised IEEE flags whose warnings need the values it overwrote");
    return GP_EFLAGS;
}

/* After the kernel: outputs in temporary blocks (dbase) downloaded into
 * the host stages, outputs left on the device marked so (their buffers
 * take the fresh copies).  GP_OK or GP_ENOMEM. */
static GpStatus outputs_out(const GpProgram *p, GpKernelArgs *args, Launch *L, const int64_t *lo, const int64_t *hi,
                            const GpDevPtr *dbase)
{
    for (int s = 0; s < p->noperands; s++) {
        size_t e;
        if (!is_output(p, s, &e) || !dbase[s])
            continue;
        if (download(args->data[s] + lo[s], dbase[s], (size_t)(hi[s] - lo[s])) != 0)
            return GP_ENOMEM;
        gp_stats.bytes_d2h += hi[s] - lo[s];
    }
    for (int s = 0; s < p->noperands; s++)
        if (L->resident[s]) {
            if (L->fresh[s])
                gp_buffer_mark_device(L->resident[s], (void *)(uintptr_t)L->fresh[s], &copy_ops);
            else
                gp_buffer_mark_device(L->resident[s], L->resident[s]->device, &copy_ops);
            L->fresh[s] = 0;
        }
    return GP_OK;
}

/* A launch's device blocks given back: fresh copies no buffer took,
 * temporaries, saved bytes. */
static void launch_free(Launch *L, int nslots)
{
    for (int s = 0; s < nslots; s++)
        if (L->fresh[s])
            dmem_free(L->fresh[s], L->resident[s]->nbytes);
    for (int i = 0; i < L->nmem; i++)
        dmem_free(L->mem[i], L->size[i]);
    for (int s = 0; s < nslots; s++)
        if (L->saved[s])
            dmem_free(L->saved[s], L->saved_n[s]);
}

static GpStatus gpu_launch(void *entry, const GpProgram *p, GpKernelArgs *args, const GpLaunch *l)
{
    Kernel *ke = entry;
    int to_host;
    if (placed_on_cpu(ke, p, l, args, &to_host) || !device_ready())
        return launch_on_host(ke, p, args, l, to_host);
    void *k = device_kernel(ke, p);
    if (!k)
        return GP_EJIT;
    if (accumulate_refused(p, l)) { /* NumPy computes it (from the host copy) */
        gp_set_error("GPU back end: an accumulating launch into a buffer the device holds");
        return GP_EUNSUPPORTED;
    }
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
    Launch L;
    memset(&L, 0, sizeof L);
    int64_t lo[GP_MAXOPERANDS], hi[GP_MAXOPERANDS];
    GpDevPtr dbase[GP_MAXOPERANDS], da = 0;
    GpKernelArgs dargs = *args;
    size_t slots = gp_kernel_args_slots(p, args->nd);
    int64_t *packed = NULL;
    unsigned word = 0;
    int queued = 0; /* the arguments' copy is queued: wait before the staging is reused */
    GpStatus st = GP_ENOMEM;
    if ((!flags_word && dev->alloc(FLAGS_WORDS * sizeof(unsigned), &flags_word) != 0) ||
        operands_in(p, l, &dargs, &L, lo, hi, dbase) != 0 || !(packed = args_staging(slots * sizeof *packed)))
        goto out;
    gp_kernel_args_pack(p, &dargs, packed);
    if (device_alloc(&L, slots * sizeof *packed, &da) != 0 ||
        (queued = dev->upload_queued(da, packed, slots * sizeof *packed) == 0) == 0)
        goto out;
    if (l->kind == GP_LAUNCH_REDUCE || l->kind == GP_LAUNCH_ARGREDUCE) {
        if ((st = run_reduce(k, p, l, &L, da, &word, outer, inner)) != GP_OK)
            goto out;
    } else {
        GpDevPtr fw = flags_at(l->fp_use);
        void *params[4] = {&da, &outer, &inner, &fw};
        int64_t threads = l->kind == GP_LAUNCH_MAP ? outer * inner : l->kind == GP_LAUNCH_SCAN ? outer : inner;
        if (run_kernel(k, params, 4, threads, &word, l->fp_use != GP_FLAGS_IGNORED) != 0)
            goto out;
    }
    if ((word || fp_flags) && l->fp_use == GP_FLAGS_UNDONE && !L.undo_lost) {
        /* (fp_flags: a reduction's combine, since the planner took them
         * before the launch) */
        fp_flags = 0;
        st = undo(&L, p->noperands);
        goto out;
    }
    st = outputs_out(p, args, &L, lo, hi, dbase);
    fp_flags |= word;
out:
    if (st != GP_OK && st != GP_EFLAGS && queued) {
        /* a wait (none may have happened since the copy was queued); a
         * kernel that ran leaves no flags to the next launch (NumPy
         * computes this one, with its own warnings) */
        unsigned w = 0;
        (void)wait_flags(&w);
    }
    if (st != GP_OK && !gp_last_error()[0])
        gp_set_error("GPU launch failed");
    launch_free(&L, p->noperands);
    return st;
}

/* ---- matrix products -------------------------------------------------------- */

/* The device address of n bytes at host address p (a product's operand):
 * its buffer's device copy, the buffer uploaded and kept (keep_input), or
 * a temporary block of L with the bytes copied in.  0 or -1. */
static int operand_address(const char *p, int64_t n, Launch *L, GpDevPtr *d)
{
    GpBuffer *b = gp_buffer_lookup(p);
    int64_t off = b ? p - b->data : 0;
    GpDevPtr dc = 0;
    if (b && b->mapped && off >= 0 && off + n <= (int64_t)b->nbytes) {
        dc = device_copy(b);
        if (!dc && b->where == GP_ON_HOST && keep_input(b, &dc) != 0)
            return -1;
    }
    if (dc) {
        *d = dc + (GpDevPtr)off;
        return 0;
    }
    if (device_alloc(L, (size_t)n, d) != 0 || upload(*d, p, (size_t)n) != 0)
        return -1;
    gp_stats.host_to_device++;
    gp_stats.bytes_h2d += n;
    return 0;
}

/* out := a @ b.  One GEMM (blas.h gp_blas_as_gemm) runs on the device
 * (cuBLAS) when placement is not automatic, or the device holds an
 * operand, or it moves at least gp_config.gpu_min_bytes and such products
 * have taken gp_config.gpu_warmup_ns on the host; its result
 * stays there as out_buf's device copy (GP_ON_DEVICE) when out is all of
 * out_buf, else comes back into out.  Anything else (several GEMMs, a
 * vector dot, syrk, no cuBLAS) is OpenBLAS's on the host, which first
 * copies an operand only the device holds to the host. */
static GpStatus gpu_matmul(GpDType t, GpBlasOperand a, GpBlasOperand b, char *out, GpBuffer *out_buf)
{
    GpGemm g;
    if (!gp_blas_as_gemm(t, a, b, &g))
        return gp_blas_matmul(t, a, b, out);
    int64_t e = (int64_t)gp_dtype_size(t), na = gp_gemm_extent(t, &g, 0), nb = gp_gemm_extent(t, &g, 1),
            nc = g.M * g.N * e;
    if (automatic && !device_copy(gp_buffer_lookup(g.a)) && !device_copy(gp_buffer_lookup(g.b))) {
        /* as a kernel is promoted (placed_on_cpu): large products run on the
         * device once the host has spent gpu_warmup_ns on them */
        int large = na + nb + nc >= gp_config.gpu_min_bytes;
        if (!large || product_host_ns < gp_config.gpu_warmup_ns) {
            int64_t t0 = gp_now_ns();
            GpStatus st = gp_blas_matmul(t, a, b, out);
            product_host_ns += large ? gp_now_ns() - t0 : 0;
            return st;
        }
    }
    /* no device; an operand not aligned to its element (the device's fault
     * would be sticky: the context is lost for the process); no cuBLAS or
     * dims beyond it: the host's, before anything is copied */
    if (!device_ready() || (uintptr_t)g.a % (uintptr_t)e || (uintptr_t)g.b % (uintptr_t)e ||
        dev->gemm(t, &g, 0, 0, 0) != GP_OK)
        return gp_blas_matmul(t, a, b, out);
    Launch L;
    memset(&L, 0, sizeof L);
    GpDevPtr da, db, dc = 0;
    int keep = out_buf && out_buf->mapped && (int64_t)out_buf->nbytes == nc;
    GpStatus st = GP_ENOMEM;
    if (operand_address(g.a, na, &L, &da) != 0 || operand_address(g.b, nb, &L, &db) != 0 ||
        (keep ? dmem_alloc((size_t)nc, &dc) : device_alloc(&L, (size_t)nc, &dc)) != 0)
        goto host; /* out of device memory: nothing is marked yet */
    int64_t t0 = gp_now_ns();
    st = dev->gemm(t, &g, da, db, dc);
    gp_stats.gpu_kernel_ns += gp_now_ns() - t0;
    if (st != GP_OK) {
        if (keep)
            dmem_free(dc, (size_t)nc);
        goto host;
    }
    gp_stats.gpu_gemm_calls++;
    if (keep) {
        gp_buffer_mark_device(out_buf, (void *)(uintptr_t)dc, &copy_ops);
        goto out;
    }
    gp_stats.bytes_d2h += nc;
    if (download(out, dc, (size_t)nc) == 0) {
        st = GP_OK;
        goto out;
    }
host: /* a device failure: the host computes it */
    st = gp_blas_matmul(t, a, b, out);
out:
    if (st != GP_OK && !gp_last_error()[0])
        gp_set_error("GPU back end: a product failed");
    for (int i = 0; i < L.nmem; i++)
        dmem_free(L.mem[i], L.size[i]);
    return st;
}

static unsigned gpu_take_fp_flags(void)
{
    unsigned f = fp_flags | (automatic ? gp_backend_cpu.take_fp_flags() : 0);
    fp_flags = 0;
    return f;
}

/* As the CPU back end's (it runs the kernels placed on the host); the code
 * generator loads at the first kernel, object or PTX, the disk cache does
 * not hold. */
static void gpu_prepare(void) { gp_backend_cpu.prepare(); }

/* Not gathers (x[idx]): a kernel's table is a 0-d operand whose device copy
 * would be one element unless its buffer has a whole device copy, which
 * nothing here has been run to show on a device yet; NumPy gathers. */
static int gpu_supports(GpOp op, GpDType t) { return gp_op_supports(op, t); }

const GpBackend gp_backend_gpu = {
    "gpu", gpu_supports, gpu_compile, gpu_launch, gpu_take_fp_flags, gpu_matmul, gpu_prepare, 1, NULL, 0,
};
