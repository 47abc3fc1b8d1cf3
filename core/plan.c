/* core/plan.c -- Algorithm 1 of the paper: from a root node to fused
 * kernels, and their execution.
 *
 * gp_node_materialize_locked(root):
 *   1. Prepare: walk the pending producers of root that can be fused (map
 *      nodes of the root's shape).  Inputs that end a subgraph are computed
 *      first, recursively, and become leaves: reductions (non-elementwise
 *      roots), pending nodes of another shape (broadcast operands, so they
 *      are not recomputed per broadcast copy), and, under a reduction, nodes
 *      that must keep their own output.
 *   2. Collect: a post-order walk numbers the subgraph's nodes as
 *      instructions; materialized nodes become leaf operands (their strides
 *      broadcast to the iteration space), constants become argument slots.
 *   3. Outputs: the root, and every fused node whose array is still alive or
 *      that a pending node outside the subgraph reads, is written by the same
 *      kernel (one pass, several outputs; DESIGN.md 5).  Sibling roots --
 *      other pending arrays of the same shape that share a node with the
 *      subgraph and need nothing computed first (Black-Scholes' call and
 *      put) -- join the same kernel.
 *   4. Layout: dims of size 1 are dropped and adjacent dims merged when every
 *      operand allows it; each operand's innermost stride gets a layout class
 *      (contiguous / broadcast / strided) that is part of the cache key.
 *   5. Compile (jit.c, cached), run (runtime_cpu.c), mark the outputs
 *      materialized, releasing their inputs.
 * A failure anywhere leaves the nodes pending and hands the root to the
 * hooks' NumPy evaluator (GpHostCallbacks.eval_with_gil), so the answer is still right.
 */
#include "plan.h"

#include "backend.h"
#include "blas.h"
#include "explain.h"
#include "guard.h"
#include "jit.h"
#include "runtime_cpu.h"

#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    GpProgram prog;
    GpKernelArgs args;
    GpNode *node[GP_MAXINSTR];       /* borrowed: node of each instruction */
    int internal_edges[GP_MAXINSTR]; /* edges from inside the subgraph */
    int saved_edges[GP_MAXINSTR];    /* add_siblings: internal_edges before a sibling */
    int root_in;                     /* instruction a reduction / scan root reads (its edge is
                                        not in internal_edges), or -1 */
    int nd;                          /* iteration space */
    int64_t shape[GP_MAXDIMS];
    int64_t strides[GP_MAXOPERANDS][GP_MAXDIMS];
    GpNode *outputs[GP_MAXOPERANDS];
    int noutputs;
    int64_t bytes;
    /* bytes the leaves' strided reads bring in beyond their elements
     * (strided_extra_bytes): with bytes, the launch's traffic */
    int64_t strided_extra;
    /* staging (guard.c): the buffers the kernel writes and where */
    GpBuffer *staged[GP_MAXOPERANDS];
    char *stage[GP_MAXOPERANDS];
    int nstaged;
    /* np.roll: wrapped leaves, read by map kernels only (wrap_ok) */
    int wrap_ok;
    const GpNode *wrapped[GP_MAXOPERANDS]; /* the wrapped leaf of each operand slot, or NULL */
    int perm[GP_MAXDIMS];                  /* plan dim d is the root's dim perm[d] */
    /* what the kernel fuses, added to gp_stats' nodes_fused and
     * extra_outputs when it has run (not when NumPy computed the launch
     * while the kernel compiled, nor when the plan failed) */
    int fused, extras;
    /* IEEE flags the launch took before committing its outputs
     * (numpy_for_flags), for report_fpe */
    unsigned fp_flags;
    int apart; /* outputs staged apart from their memory (stages_apart) */
    /* buffers whose in-place outputs write slots of their own, apart from
     * the leaves' (split_stored_slots): their old pages must be kept */
    const GpBuffer *split[GP_MAXOPERANDS];
    int nsplit;
    /* the outputs written in place over memory the kernel reads
     * (in_place_outputs), found once per launch */
    GpNode *stored[GP_MAXOPERANDS];
    int nstored;
    /* a leaf's memory is a buffer with a pending in-place writer
     * (read_inaccessible_leaves), and the private copies made of such
     * buffers for the launch (owned, freed after it) */
    int writer_leaves;
    char *copies[GP_MAXOPERANDS];
    int ncopies;
} Plan;

static uint64_t epoch;

static GpNode *pending_view(GpNode *n, int64_t offset, int nd, const int64_t *shape, const int64_t *strides,
                            int priced);

static GpHostCallbacks host; /* gp_core_init: the hooks' callbacks */

static int same_shape(const GpNode *n, int nd, const int64_t *shape)
{
    if (n->nd != nd)
        return 0;
    for (int d = 0; d < nd; d++)
        if (n->shape[d] != shape[d])
            return 0;
    return 1;
}

static int fusable(const GpNode *x, int nd, const int64_t *shape)
{
    /* (not one another thread's kernel stored and is completing: fused
     * here, an in-place one would be applied twice; gp_node_materialize_locked
     * waits for it) */
    return !x->materialized && !x->completing && gp_op_kind[x->op] == GP_KIND_MAP && same_shape(x, nd, shape);
}

/* Whether the map subgraph that would fuse into a kernel over `shape` at n
 * (fusable nodes, down to the first node that is not) reads an np.roll
 * leaf: 1, 0, or -1 when more than *budget paths would have to be walked
 * (a shared node is walked once per path to it). */
static int fused_reads_wrapped(const GpNode *n, int nd, const int64_t *shape, int *budget)
{
    if (--*budget < 0)
        return -1;
    if (gp_node_reads_wrapped(n))
        return 1;
    for (int i = 0; i < n->nin; i++) {
        int r = n->in[i] && fusable(n->in[i], nd, shape) ? fused_reads_wrapped(n->in[i], nd, shape, budget) : 0;
        if (r)
            return r;
    }
    return 0;
}

/* Step 1: compute, depth first, the pending inputs that end the subgraph. */
static GpStatus prepare(GpNode *n, int nd, const int64_t *shape, int wrap_ok, int *count)
{
    if (n->mark == epoch)
        return GP_OK;
    n->mark = epoch;
    if (!wrap_ok && gp_node_reads_wrapped(n))
        return gp_node_materialize_locked(n); /* a roll under a reduction or scan: its own map kernel */
    if (++*count > GP_MAXINSTR - 16) {
        /* too large for one kernel: this node becomes a leaf */
        return gp_node_materialize_locked(n);
    }
    for (int i = 0; i < n->nin; i++) {
        /* computing an input (an in-place write first computes the readers
         * of the old values) may compute n itself, which releases its
         * inputs: read each one afresh, stop when n is done */
        if (n->materialized)
            return GP_OK;
        GpNode *x = n->in[i];
        GpStatus st = GP_OK;
        if (x->materialized)
            continue;
        gp_node_incref(x);
        if (fusable(x, nd, shape))
            st = prepare(x, nd, shape, wrap_ok, count);
        else
            st = gp_node_materialize_locked(x);
        gp_node_decref(x);
        if (st != GP_OK)
            return st;
    }
    return GP_OK;
}

static void leaf_strides(const GpNode *x, int nd, const int64_t *shape, int64_t *out)
{
    int off = nd - x->nd;
    for (int d = 0; d < nd; d++) {
        int xd = d - off;
        out[d] = (xd < 0 || (x->shape[xd] == 1 && shape[d] != 1)) ? 0 : x->strides[xd];
    }
}

/* A cache line's bytes: the least a strided load brings in. */
#define LINE_BYTES 64

/* The bytes a leaf x read with iteration-space strides st (leaf_strides)
 * brings in beyond its elements' own: along the innermost dim it varies
 * in, each element costs min(|stride|, LINE_BYTES) bytes of memory
 * traffic, not its itemsize (a column of a C-ordered (m, 12) float64
 * array moves 12 times its bytes).  The serial/parallel choice and the
 * GPU's placement read the traffic (GpLaunch.bytes); stats' bytes_moved
 * counts elements. */
static int64_t strided_extra_bytes(const GpNode *x, int nd, const int64_t *shape, const int64_t *st)
{
    int64_t e = (int64_t)gp_dtype_size(x->dtype);
    for (int d = nd - 1; d >= 0; d--)
        if (shape[d] > 1 && st[d] != 0) {
            int64_t s = st[d] < 0 ? -st[d] : st[d];
            s = s < LINE_BYTES ? s : LINE_BYTES;
            return s > e ? gp_node_size(x) * (s - e) : 0;
        }
    return 0;
}

/* Step 2: returns the instruction index of n, or -1 when the program is full. */
/* An integer FLOOR_DIVIDE, REMAINDER or FMOD by a constant other than 0
 * and -1 (no flag to raise) divides by multiplying: its multiplier and
 * shifts take two constant slots (GpInstr.divisor, gp_divisor_magic). */
static void divisor_magic(Plan *pl, const GpNode *n, GpInstr *ins)
{
    GpProgram *p = &pl->prog;
    const GpNode *d = n->nin == 2 ? n->in[1] : NULL;
    if (!d || (n->op != GP_OP_FLOOR_DIVIDE && n->op != GP_OP_REMAINDER && n->op != GP_OP_FMOD) ||
        d->op != GP_OP_CONST || d->dtype != n->dtype || n->in[0]->dtype != n->dtype || d->dtype == GP_BOOL ||
        gp_dtype_is_float(d->dtype))
        return;
    int bits = (int)gp_dtype_size(d->dtype) * 8;
    uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1, v = d->value.u & mask;
    if (v == 0 || (gp_dtype_is_signed(d->dtype) && v == mask)) /* // 0 and MIN // -1 raise flags */
        return;
    if (p->nconsts + 2 > GP_MAXCONSTS)
        return; /* (no slots left: the division reads the divisor) */
    ins->divisor = (uint8_t)(p->nconsts + 1);
    gp_divisor_magic((GpDType)d->dtype, v, &pl->args.consts[p->nconsts].u, &pl->args.consts[p->nconsts + 1].u);
    p->nconsts += 2;
}

static int collect(Plan *pl, GpNode *n)
{
    GpProgram *p = &pl->prog;
    for (int i = 0; i < p->ninstr; i++)
        if (pl->node[i] == n)
            return i;
    int in[3] = {0, 0, 0};
    if (!n->materialized) {
        for (int i = 0; i < n->nin; i++) {
            in[i] = collect(pl, n->in[i]);
            if (in[i] < 0)
                return -1;
            pl->internal_edges[in[i]]++;
        }
    }
    if (p->ninstr >= GP_MAXINSTR) {
        gp_set_error("more than %d instructions", GP_MAXINSTR);
        return -1;
    }
    int k = p->ninstr++;
    GpInstr *ins = &p->instr[k];
    memset(ins, 0, sizeof *ins); /* every byte is the key's */
    pl->node[k] = n;
    n->set_mark = epoch;
    ins->op = (uint8_t)(n->materialized && n->op != GP_OP_CONST ? GP_OP_LEAF : n->op);
    ins->dtype = (uint8_t)n->dtype;
    ins->slot = -1;
    if (n->op == GP_OP_CONST) {
        if (p->nconsts >= GP_MAXCONSTS) {
            gp_set_error("more than %d constants", GP_MAXCONSTS);
            return -1;
        }
        ins->slot = p->nconsts;
        pl->args.consts[p->nconsts++] = n->value;
    } else if (n->materialized) {
        if (p->noperands >= GP_MAXOPERANDS) {
            gp_set_error("more than %d operands", GP_MAXOPERANDS);
            return -1;
        }
        if (n->wrap && !pl->wrap_ok) {
            gp_set_error("a rolled array read by a reduction or scan kernel");
            return -1;
        }
        pl->wrapped[p->noperands] = n->wrap ? n : NULL;
        ins->slot = p->noperands;
        pl->args.data[p->noperands] = n->data;
        pl->writer_leaves |= n->buf && n->buf->writer && !n->buf->writer->materialized;
        leaf_strides(n, pl->nd, pl->shape, pl->strides[p->noperands]);
        int64_t sz = gp_node_size(n);
        pl->bytes += sz * (int64_t)gp_dtype_size(n->dtype);
        pl->strided_extra += strided_extra_bytes(n, pl->nd, pl->shape, pl->strides[p->noperands]);
        p->noperands++;
    } else {
        ins->nin = (uint8_t)n->nin;
        ins->in_dtype = (uint8_t)n->in[0]->dtype;
        GpNode *b = n->op == GP_OP_POWER ? n->in[1] : NULL;
        if (b && b->op == GP_OP_CONST && gp_dtype_is_float(b->dtype))
            ins->exponent = (uint8_t)gp_exponent_class(b->dtype == GP_FLOAT32 ? b->value.f32 : b->value.f);
        else if (b && gp_node_size(b) == 1)
            ins->exponent = GP_EXPONENT_SCALAR;
        for (int i = 0; i < n->nin; i++)
            ins->in[i] = (int16_t)in[i];
        divisor_magic(pl, n, ins);
    }
    return k;
}

/* Step 4: drops size-1 dims and merges adjacent dims of [lo, hi) of the
 * plan's iteration space when every operand allows it; appends the result
 * to (shape, strides) at *nd.  A group that vanishes leaves one dim of 1.
 * keep: a dim kept (or merged into) even where its length is 1 (-1: none),
 * so that the collapsed inner dim has its strides whatever the lengths. */
static void collapse_group_keep(const Plan *pl, int lo, int hi, int nops, int64_t *shape,
                                int64_t (*strides)[GP_MAXDIMS], int *nd, int keep)
{
    int start = *nd;
    for (int d = lo; d < hi; d++) {
        if (pl->shape[d] == 1 && d != keep)
            continue;
        int m = *nd;
        if (m > start) {
            int ok = 1;
            for (int k = 0; k < nops && ok; k++)
                ok = strides[k][m - 1] == pl->strides[k][d] * pl->shape[d];
            if (ok) {
                shape[m - 1] *= pl->shape[d];
                for (int k = 0; k < nops; k++)
                    strides[k][m - 1] = pl->strides[k][d];
                continue;
            }
        }
        shape[m] = pl->shape[d];
        for (int k = 0; k < nops; k++)
            strides[k][m] = pl->strides[k][d];
        (*nd)++;
    }
    if (*nd == start) {
        shape[start] = 1;
        for (int k = 0; k < nops; k++)
            strides[k][start] = 0;
        (*nd)++;
    }
}

static void collapse_group(const Plan *pl, int lo, int hi, int nops, int64_t *shape, int64_t (*strides)[GP_MAXDIMS],
                           int *nd)
{
    collapse_group_keep(pl, lo, hi, nops, shape, strides, nd, -1);
}

static void set_layouts(Plan *pl)
{
    GpProgram *p = &pl->prog;
    int inner = (int)pl->args.nd - 1;
    for (int i = 0; i < p->ninstr; i++) {
        const GpInstr *ins = &p->instr[i];
        if (ins->slot < 0 || ins->op == GP_OP_CONST)
            continue;
        int64_t s = pl->args.strides[ins->slot][inner];
        p->layout[ins->slot] = (uint8_t)(s == 0                                    ? GP_LAYOUT_BCAST
                                         : s == (int64_t)gp_dtype_size(ins->dtype) ? GP_LAYOUT_CONTIG
                                                                                   : GP_LAYOUT_STRIDED);
    }
}

/* p moved to where the kernel writes its buffer, if that is staged. */
static char *staged_ptr(const Plan *pl, char *p)
{
    for (int i = 0; i < pl->nstaged; i++) {
        const GpBuffer *b = pl->staged[i];
        if (p >= b->data && p < b->data + (b->mapped ? b->mapped : b->nbytes))
            return pl->stage[i] + (p - b->data);
    }
    return p;
}

typedef struct {
    const GpBuffer *b;
    char *stage;
    int64_t per; /* bytes a task */
    int failed;
} StageCopy;

static void stage_copy_task(void *ctx, int64_t t)
{
    StageCopy *c = ctx;
    int64_t off = t * c->per, n = (int64_t)c->b->nbytes - off; /* not the mapping's slack */
    if (n > c->per)
        n = c->per;
    if (n > 0 && gp_buffer_read_old(c->b, (size_t)off, c->stage + off, (size_t)n) != 0)
        __atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
}

/* An in-place write's stage starts as a copy of the buffer's contents,
 * read on all threads (a kernel-side copy runs at about a third of
 * memcpy's speed).  0, or -1 (the stage is given back). */
static int copy_contents(GpBuffer *b, char *stage)
{
    int T = gp_pool_threads();
    StageCopy c = {b, stage, 0, 0};
    int64_t tasks = b->nbytes >= ((size_t)4 << 20) ? 2 * T : 1;
    c.per = ((int64_t)b->nbytes / tasks + 4095) / 4096 * 4096;
    gp_pool_run(stage_copy_task, &c, ((int64_t)b->nbytes + c.per - 1) / c.per);
    if (c.failed) {
        gp_buffer_unstage(b, stage);
        return -1;
    }
    gp_stats.stage_copy_bytes += (int64_t)b->nbytes;
    return 0;
}

/* Stages buffer b for the kernel's writes (guard.c: other threads keep
 * faulting on it until commit_outputs) and moves the kernel's pointers
 * into it.  GP_OK or GP_ENOMEM. */
/* gp_buffer_stage for a write computed from host memory: a buffer valid
 * only on the device is copied to the host first, and any device copy is
 * dropped (the back end makes a new one when it keeps its result).  0 or
 * -1. */
static int stage_for_write(GpBuffer *b, char **stage, int *copy, int apart)
{
    if (b->where == GP_ON_DEVICE && gp_buffer_to_host(b) != 0)
        return -1;
    gp_buffer_drop_device(b);
    /* (a buffer that cannot be staged apart is staged as any other: its
     * kernel's outputs then stand, pl->apart says) */
    if (apart && gp_buffer_stage_apart(b, stage, copy) == 0)
        return 0;
    return gp_buffer_stage(b, stage, copy);
}

/* Whether operand slot k is read by a leaf (leaf set) or written by the
 * kernel (a map output's slot, or an accumulating instruction's). */
static int slot_used(const Plan *pl, int k, int leaf)
{
    for (int i = 0; i < pl->prog.ninstr; i++) {
        const GpInstr *ins = &pl->prog.instr[i];
        if (ins->slot == k && ins->op != GP_OP_CONST && (ins->op == GP_OP_LEAF) == leaf)
            return 1;
    }
    return 0;
}

/* Whether output o writes every byte of its buffer: a C-ordered view of
 * all of it (a view written in place has no internal overlap: capture). */
static int writes_whole_buffer(const GpNode *o)
{
    const GpBuffer *b = o->buf;
    int64_t size = gp_dtype_size(o->dtype), expect = size;
    if (!o->out_view || o->out_data != b->data || gp_node_size(o) * size != (int64_t)b->nbytes)
        return 0;
    for (int d = o->nd - 1; d >= 0; d--) {
        if (o->shape[d] > 1 && o->out_strides[d] != expect)
            return 0;
        expect *= o->shape[d];
    }
    return 1;
}

/* Whether the stage of b, staged apart with its old pages kept (b->origin,
 * which the leaves read), must start as a copy of them: unless a plain
 * map kernel writes all of b through slots no leaf reads. */
static int stage_needs_old(const Plan *pl, const GpBuffer *b)
{
    if (!b->origin || pl->prog.kind != GP_KIND_MAP || pl->prog.accumulate)
        return 1;
    int whole = 0;
    for (int i = 0; i < pl->prog.ninstr; i++) {
        const GpInstr *ins = &pl->prog.instr[i];
        if (gp_op_kind[ins->op] == GP_KIND_SCAN)
            return 1;
        if (ins->slot < 0 || ins->op == GP_OP_LEAF || ins->op == GP_OP_CONST || pl->node[i]->buf != b)
            continue;
        if (slot_used(pl, ins->slot, 1))
            return 1;
        whole |= writes_whole_buffer(pl->node[i]);
    }
    return !whole;
}

/* Staged apart (pl->apart), an output written in place gets a slot of its
 * own, not the one of the leaf that reads the same elements (add_output):
 * the leaf then reads the buffer's old pages (b->origin) and the output
 * writes the stage, which needs no copy of them when the output writes
 * all of it (stage_needs_old).  Before the compile: another program. */
static void split_stored_slots(Plan *pl)
{
    for (int i = 0; i < pl->prog.ninstr; i++) {
        GpInstr *ins = &pl->prog.instr[i];
        int k = ins->slot;
        const GpBuffer *b = pl->node[i] ? pl->node[i]->buf : NULL;
        /* only a buffer whose pages can be moved out (guard.c stage_pages) */
        if (k < 0 || ins->op == GP_OP_LEAF || ins->op == GP_OP_CONST || !slot_used(pl, k, 1) || !b ||
            !gp_buffer_pages_movable(b) || pl->prog.noperands >= GP_MAXOPERANDS)
            continue;
        int seen = 0;
        for (int j = 0; j < pl->nsplit; j++)
            seen |= pl->split[j] == b;
        if (!seen)
            pl->split[pl->nsplit++] = b;
        int s = pl->prog.noperands++;
        pl->wrapped[s] = NULL;
        pl->args.data[s] = pl->args.data[k];
        memcpy(pl->args.strides[s], pl->args.strides[k], sizeof pl->args.strides[s]);
        memcpy(pl->strides[s], pl->strides[k], sizeof pl->strides[s]);
        pl->prog.layout[s] = pl->prog.layout[k];
        ins->slot = (int16_t)s;
    }
}

static GpStatus stage_buffer(Plan *pl, GpBuffer *b, int apart)
{
    for (int i = 0; i < pl->nstaged; i++)
        if (pl->staged[i] == b)
            return GP_OK;
    char *p;
    int copy;
    /* a back end that keeps results in its memory writes a buffer its
     * device holds there (backend.h: such a launch runs on the device):
     * the host stage's contents do not matter */
    int on_device = gp_backend()->resident && b->device;
    if (on_device)
        gp_buffer_mark_device(b, b->device, b->dev_ops); /* the host copy is abandoned (the stage's bytes) */
    if ((on_device ? gp_buffer_stage(b, &p, &copy) : stage_for_write(b, &p, &copy, apart)) != 0 ||
        (copy && !on_device && stage_needs_old(pl, b) && copy_contents(b, p) != 0)) {
        gp_set_error("no memory to stage an output");
        return GP_ENOMEM;
    }
    pl->staged[pl->nstaged] = b;
    pl->stage[pl->nstaged++] = p;
    for (int j = 0; j < pl->nsplit && !b->origin; j++)
        if (pl->split[j] == b) {
            /* its pages stayed (the move was refused): the kernel's leaf and
             * output slots would be one memory, which it takes for two */
            gp_set_error("an in-place output could not be staged apart from its memory");
            return GP_ENOMEM; /* (open_outputs gives the stages back) */
        }
    /* the outputs write the stage; the leaves read b's old pages where
     * they were kept apart (b->origin), else the stage's copy of them */
    for (int k = 0; k < pl->prog.noperands; k++)
        if (pl->args.data[k] >= b->data && pl->args.data[k] < b->data + (b->mapped ? b->mapped : b->nbytes))
            pl->args.data[k] = (b->origin && !slot_used(pl, k, 0) ? b->origin : p) + (pl->args.data[k] - b->data);
    return GP_OK;
}

static GpStatus commit_outputs(Plan *pl, int ok);

/* Leaves whose memory is still a buffer made inaccessible for a pending
 * in-place write that this kernel does not make (it is not staged): a
 * kernel split of an in-place chain (`p += pi[:, None] * c[k]` ten times,
 * scipy's KroghInterpolator._evaluate, at every size) computes the
 * chain's early writes apart, and they read the values the buffer held
 * before the chain.  The kernel would fault on them, and resolving that
 * fault computes the pending write, whose input this kernel is (a fault
 * in the fault: SIGSEGV).  Those leaves read a private copy of the
 * buffer's contents instead (gp_buffer_read_contents), freed after the
 * launch (free_leaf_copies).  A buffer whose values only a device holds
 * is not copied (its host pages are stale): the fault brings them over.
 * After open_outputs.  GP_OK or GP_ENOMEM. */
static int host_inaccessible(const GpBuffer *b)
{
    return b && b->mapped && b->prot == PROT_NONE && b->where != GP_ON_DEVICE;
}

static GpStatus read_inaccessible_leaves(Plan *pl)
{
    pl->ncopies = 0;
    if (!pl->writer_leaves)
        return GP_OK;
    GpBuffer *done[GP_MAXOPERANDS];
    for (int k = 0; k < pl->prog.noperands; k++) {
        if (!slot_used(pl, k, 1))
            continue;
        GpBuffer *b = gp_buffer_lookup(pl->args.data[k]);
        if (!host_inaccessible(b))
            continue;
        int seen = 0;
        for (int j = 0; j < pl->ncopies; j++)
            seen |= done[j] == b;
        if (seen)
            continue;
        char *copy = malloc(b->mapped);
        if (!copy || gp_buffer_read_contents(b, copy) != 0) {
            free(copy);
            gp_set_error("no memory for a copy of a leaf's inaccessible buffer");
            return GP_ENOMEM;
        }
        done[pl->ncopies] = b;
        pl->copies[pl->ncopies++] = copy;
        for (int j = 0; j < pl->prog.noperands; j++)
            if (pl->args.data[j] >= b->data && pl->args.data[j] < b->data + b->mapped && slot_used(pl, j, 1))
                pl->args.data[j] = copy + (pl->args.data[j] - b->data);
    }
    return GP_OK;
}

static void free_leaf_copies(Plan *pl)
{
    for (int j = 0; j < pl->ncopies; j++)
        free(pl->copies[j]);
    pl->ncopies = 0;
}

static int is_stored_buffer(const GpBuffer *b, GpNode *const *stored, int nstored);

/* Stages the output buffers for the kernel's writes (those written in
 * place apart from their memory when pl->apart). */
static GpStatus open_outputs(Plan *pl)
{
    for (int i = 0; i < pl->noutputs; i++) {
        GpBuffer *b = pl->outputs[i]->buf;
        GpStatus st = stage_buffer(pl, b, pl->apart && is_stored_buffer(b, pl->stored, pl->nstored));
        if (st != GP_OK) {
            commit_outputs(pl, 0);
            return st;
        }
    }
    return GP_OK;
}

/* The protection buffer b will have once this plan's outputs are marked
 * computed (gp_buffer_sync_prot's rule): none while another pending node
 * still writes it, read-only while pending nodes read it. */
static int users_in_plan(const Plan *pl, const GpNode *o)
{
    for (int k = 0; k < pl->prog.ninstr; k++)
        if (pl->node[k] == o)
            return pl->internal_edges[k] + (k == pl->root_in);
    return 0;
}

/* Users computed by this kernel are not readers: their edges go when it
 * completes (a temporary summed at once, (a*b).sum(), is left writable:
 * no mprotect of its populated pages now, none when it is freed). */
static int committed_prot(const Plan *pl, const GpBuffer *b)
{
    int readers = b->nreaders > 0, other_writer = b->producer != NULL;
    for (int i = 0; i < pl->noutputs; i++) {
        if (pl->outputs[i]->buf != b)
            continue;
        readers |= pl->outputs[i]->nusers > users_in_plan(pl, pl->outputs[i]);
        if (b->producer == pl->outputs[i])
            other_writer = 0;
    }
    return other_writer ? PROT_NONE : readers ? PROT_READ : PROT_READ | PROT_WRITE;
}

/* The protection n's buffer gets once n alone is computed into it (a
 * product, an evaluator's value): none while another pending node still
 * writes it, read-only while pending nodes read it or n. */
static int result_prot(const GpNode *n)
{
    const GpBuffer *b = n->buf;
    return b->producer != n ? PROT_NONE : b->nreaders > 0 || n->nusers > 0 ? PROT_READ : PROT_READ | PROT_WRITE;
}

/* Puts every staged buffer in place once the kernel is done (ok), or gives
 * the stages back (the buffers keep their old contents). */
/* GRUMPY_DEBUG_CORRUPT: a wrong first element, for tests that must see it */
static void corrupt_first_output(Plan *pl)
{
    GpNode *o = pl->outputs[0];
    if (!pl->noutputs || gp_node_size(o) == 0)
        return;
    char *p = staged_ptr(pl, o->out_view ? o->out_data : o->buf->data);
    switch (o->dtype) {
    case GP_FLOAT64: *(double *)p += 1.0; break;
    case GP_FLOAT32: *(float *)p += 1.0f; break;
    case GP_BOOL: *p ^= 1; break;
    default: *(unsigned char *)p += 1; break;
    }
}

static GpStatus commit_outputs(Plan *pl, int ok)
{
    GpStatus st = GP_OK;
    if (ok && gp_config.debug_corrupt)
        corrupt_first_output(pl);
    for (int i = 0; i < pl->nstaged; i++) {
        GpBuffer *b = pl->staged[i];
        if (!ok) {
            gp_buffer_unstage(b, pl->stage[i]);
        } else if (gp_buffer_commit(b, pl->stage[i], committed_prot(pl, b)) != 0) {
            gp_buffer_drop_device(b); /* a result the kernel left on the device is lost too */
            if (st == GP_OK) {
                gp_set_error("an output could not be put in place");
                st = GP_ENOMEM;
            }
        }
    }
    pl->nstaged = 0;
    return st;
}

static void print_plan(const Plan *pl)
{
    const GpProgram *p = &pl->prog;
    int scan = 0;
    for (int k = 0; k < p->ninstr; k++)
        scan |= gp_op_kind[p->instr[k].op] == GP_KIND_SCAN;
    fprintf(stderr, "grumpy plan: %s, %d instructions, %d operands, %d outputs, iteration",
            p->kind == GP_KIND_REDUCE ? "map-reduce"
            : scan                    ? "map-scan"
            : p->accumulate           ? "map-accumulate"
                                      : "map",
            p->ninstr, p->noperands, pl->noutputs);
    for (int d = 0; d < pl->args.nd; d++)
        fprintf(stderr, " %lld", (long long)pl->args.shape[d]);
    fprintf(stderr, "\n");
    for (int k = 0; k < p->ninstr; k++) {
        const GpInstr *ins = &p->instr[k];
        fprintf(stderr, "  %%%d = %s", k, gp_op_name[ins->op]);
        for (int i = 0; i < ins->nin; i++)
            fprintf(stderr, " %%%d", ins->in[i]);
        if (ins->slot >= 0)
            fprintf(stderr, "  [%s %d]", ins->op == GP_OP_CONST ? "const" : "operand", ins->slot);
        if (ins->op != GP_OP_LEAF && ins->op != GP_OP_CONST && ins->slot >= 0)
            fprintf(stderr, " users=%d internal=%d array=%d", pl->node[k]->nusers, pl->internal_edges[k],
                    pl->node[k]->buf && pl->node[k]->buf->owner == pl->node[k]);
        fprintf(stderr, "\n");
    }
}

/* Whether a kernel's IEEE flags for op on dtype t are exactly those
 * NumPy's loop raises on the same elements: one IEEE operation per
 * element (no fast-math, no libm), or the integer division's flags that
 * codegen raises as NumPy's loops do. */
static int flags_are_exact(GpOp op, GpDType t)
{
    switch (op) {
    case GP_OP_ADD:
    case GP_OP_SUBTRACT:
    case GP_OP_MULTIPLY:
    case GP_OP_TRUE_DIVIDE:
    case GP_OP_SQRT:
    case GP_OP_SQUARE:
    case GP_OP_RECIPROCAL: return gp_dtype_is_float(t);
    case GP_OP_FLOOR_DIVIDE:
    case GP_OP_REMAINDER: return gp_dtype_is_signed(t) || gp_dtype_is_unsigned(t);
    default: return 0;
    }
}

#define OPERAND_DEPTH 4

static int is_int_like(GpDType t) { return t == GP_BOOL || gp_dtype_is_signed(t) || gp_dtype_is_unsigned(t); }

/* Whether instruction k is an operand of a kernel's one operation: a leaf,
 * a constant, or what NumPy computes from those raising no IEEE flag: a
 * cast of one (a bool or an integer to a float: exact or merely inexact;
 * float32 to float64; a bool or an integer to an integer), as NumPy's loop
 * casts a Python int operand (np.var's division by its count) or a bool
 * one (`x %= mask`, fuzzer case 659002476); integer and bool arithmetic
 * other than division, comparisons and logic of such operands (`x %= (y >
 * 0)`).  depth bounds the search. */
static int is_operand(const GpProgram *p, int k, int depth)
{
    const GpInstr *ins = &p->instr[k];
    if (ins->op == GP_OP_LEAF || ins->op == GP_OP_CONST)
        return 1;
    if (depth <= 0)
        return 0;
    GpDType to = (GpDType)ins->dtype;
    if (ins->op == GP_OP_CAST) {
        GpDType from = (GpDType)p->instr[ins->in[0]].dtype;
        int ok = is_int_like(from) ? gp_dtype_is_float(to) || is_int_like(to) : from == GP_FLOAT32 && to == GP_FLOAT64;
        return ok && is_operand(p, ins->in[0], depth - 1);
    }
    switch (ins->op) {
    case GP_OP_ADD:
    case GP_OP_SUBTRACT:
    case GP_OP_MULTIPLY:
    case GP_OP_EQUAL:
    case GP_OP_NOT_EQUAL:
    case GP_OP_LESS:
    case GP_OP_LESS_EQUAL:
    case GP_OP_GREATER:
    case GP_OP_GREATER_EQUAL:
    case GP_OP_LOGICAL_AND:
    case GP_OP_LOGICAL_OR:
    case GP_OP_LOGICAL_XOR:
    case GP_OP_LOGICAL_NOT:
    case GP_OP_BITWISE_AND: break;
    default: return 0;
    }
    if (!is_int_like(to))
        return 0;
    for (int i = 0; i < ins->nin; i++)
        if (!is_int_like((GpDType)p->instr[ins->in[i]].dtype) || !is_operand(p, ins->in[i], depth - 1))
            return 0;
    return 1;
}

/* The one operation of a kernel of maps over operands (is_operand), when
 * its flags are exact (flags_are_exact) and its operands are of its own
 * dtype, or NULL. */
static GpNode *lone_exact_node(const Plan *pl, const GpNode *root)
{
    GpNode *lone = NULL;
    if (root || pl->prog.kind != GP_KIND_MAP)
        return NULL;
    for (int k = 0; k < pl->prog.ninstr; k++) {
        const GpInstr *ins = &pl->prog.instr[k];
        if (is_operand(&pl->prog, k, OPERAND_DEPTH))
            continue;
        GpNode *x = pl->node[k];
        if (lone || !x || x->materialized || !flags_are_exact(ins->op, x->dtype))
            return NULL;
        for (int i = 0; i < ins->nin; i++)
            if (!is_operand(&pl->prog, ins->in[i], OPERAND_DEPTH) || pl->prog.instr[ins->in[i]].dtype != ins->dtype)
                return NULL;
        lone = x;
    }
    return lone;
}

/* Whether a pending node reads memory that one of the stored outputs
 * overwrote: a leaf of a stored output's buffer, as a direct input. */
static int reads_overwritten(const GpNode *x, GpNode *const *stored, int nstored)
{
    for (int i = 0; i <= x->nin; i++) {
        const GpNode *in = i < x->nin ? x->in[i] : x->replay_in;
        for (int j = 0; in && in->materialized && j < nstored; j++)
            if (in->buf == stored[j]->buf)
                return 1;
    }
    return 0;
}

/* Whether the flags an in-place kernel raised could be stored node s's
 * own, whose warnings no replay can give (its inputs are overwritten). */
static int flags_are_its_own(const GpNode *s, unsigned flags) { return s->op != GP_OP_WHERE && (flags & s->errstate); }

/* Whether x is one of stored[0..nstored). */
static int is_stored_node(const GpNode *x, GpNode *const *stored, int nstored)
{
    for (int j = 0; j < nstored; j++)
        if (stored[j] == x)
            return 1;
    return 0;
}

/* Whether the nodes other than the stored ones may be replayed after an
 * in-place kernel: no output other than a stored one wrote a stored one's
 * buffer, and none of them reads the overwritten memory directly. */
static int replayable_without(const Plan *pl, GpNode *const *stored, int nstored, GpNode *const *nodes, int n)
{
    for (int i = 0; i < pl->noutputs; i++)
        for (int j = 0; j < nstored; j++)
            if (pl->outputs[i] != stored[j] && pl->outputs[i]->buf == stored[j]->buf)
                return 0;
    for (int i = 0; i < n; i++)
        if (!is_stored_node(nodes[i], stored, nstored) && reads_overwritten(nodes[i], stored, nstored))
            return 0;
    return 1;
}

/* An in-place kernel that overwrote memory it read (its outputs stored[]:
 * x /= y + z, NumPy's var computing its mean in place, nansum's copyto
 * with where=) is replayed without them: they are taken as computed (their
 * memory holds their values), the other nodes are replayed, so NumPy's
 * warnings come for those, when replayable_without says so.  Removes the
 * stored nodes from nodes[0..*n).  The stored nodes' own warnings cannot
 * be known (their inputs are gone): counted unreported when the flags
 * could be theirs (launch leaves such a kernel's outputs to NumPy where it
 * can: numpy_for_flags).  0 when the kernel cannot be replayed. */
static int replayable_around(const Plan *pl, unsigned flags, GpNode *const *stored, int nstored, GpNode **nodes, int *n)
{
    if (!replayable_without(pl, stored, nstored, nodes, *n))
        return 0;
    int kept = 0;
    for (int i = 0; i < *n; i++)
        if (!is_stored_node(nodes[i], stored, nstored))
            nodes[kept++] = nodes[i];
    *n = kept;
    for (int j = 0; j < nstored; j++)
        if (flags_are_its_own(stored[j], flags))
            gp_stats.fpe_unreported++;
    return 1;
}

/* The plan's outputs written in place over memory the kernel reads
 * (copyto, out=, x[...] = ... reading x) into stored[]; their count. */
static int in_place_outputs(const Plan *pl, GpNode **stored)
{
    int nstored = 0;
    for (int i = 0; i < pl->noutputs; i++) {
        GpNode *o = pl->outputs[i];
        int reads_own = 0;
        for (int k = 0; o->out_view && k < pl->prog.ninstr; k++) {
            GpNode *x = pl->node[k];
            reads_own |= x && x->materialized && x->buf == o->buf;
        }
        if (reads_own)
            stored[nstored++] = o;
    }
    return nstored;
}

/* The pending nodes the kernel computes (root last) into nodes[]; their
 * count. */
static int pending_nodes(const Plan *pl, GpNode *root, GpNode **nodes)
{
    int n = 0;
    for (int k = 0; k < pl->prog.ninstr; k++) {
        GpNode *x = pl->node[k];
        if (x && !x->materialized && x != root)
            nodes[n++] = x;
    }
    if (root && !root->materialized)
        nodes[n++] = root;
    return n;
}

static int may_warn(const GpNode *s);

/* The IEEE flags the error state of some node that may warn (may_warn)
 * watches (GP_FPE_*): a kernel's flags are NumPy's warnings only where
 * such a node is (a comparison, minimum or min reduction gives none in
 * NumPy; their kernels' compares are quiet too, codegen.c cg_fcmp_quiet,
 * but a signalling NaN still makes them raise). */
static unsigned watched(GpNode *const *nodes, int n)
{
    unsigned watch = 0;
    for (int i = 0; i < n; i++)
        if (may_warn(nodes[i]))
            watch |= nodes[i]->errstate;
    return watch;
}

/* Whether op may raise an IEEE flag NumPy warns of on float values (or a
 * float cast to another type): not the selections, sign and rounding
 * operations, comparisons and logic, whose kernels raise at most a
 * spurious invalid from a NaN compare (which costs a replay, no warning). */
static int may_raise(GpOp op, GpDType t, GpDType in)
{
    switch (op) {
    case GP_OP_WHERE:
    case GP_OP_MAXIMUM:
    case GP_OP_MINIMUM:
    case GP_OP_FMAX:
    case GP_OP_FMIN:
    case GP_OP_MIN: /* reductions: NumPy's never warn */
    case GP_OP_MAX:
    case GP_OP_CLIP:
    case GP_OP_GATHER:
    case GP_OP_ABSOLUTE:
    case GP_OP_NEGATIVE:
    case GP_OP_POSITIVE:
    case GP_OP_SIGN:
    case GP_OP_FLOOR:
    case GP_OP_CEIL:
    case GP_OP_TRUNC:
    case GP_OP_RINT:
    case GP_OP_COPYSIGN: return 0;
    case GP_OP_CAST: return gp_dtype_is_float(in) && !(t == GP_BOOL || (in == GP_FLOAT32 && t == GP_FLOAT64));
    default: return gp_dtype_is_float(t);
    }
}

/* Whether op's NumPy loops set IEEE flags on integers too: a division or
 * remainder (by zero: "divide by zero encountered in floor_divide";
 * INT_MIN // -1) or a power. */
static int raises_as_division(GpOp op)
{
    return op == GP_OP_FLOOR_DIVIDE || op == GP_OP_REMAINDER || op == GP_OP_FMOD || op == GP_OP_POWER ||
           op == GP_OP_TRUE_DIVIDE;
}

/* Whether an in-place output's flags are ones report_fpe could not turn
 * into NumPy's warnings: an operation that may raise flags NumPy warns of,
 * in a kernel that is not one operation with exact flags (lone_exact_node:
 * its flags are given directly) -- its own flags then are NumPy's loop's
 * only by chance (float // and %, power, transcendentals), or mixed with
 * other operations' (`x *= np.exp(y)`: the replay of exp cannot say
 * whether the multiply warned; an integer `x //= y` fused into a sum of
 * x: fuzzer case 712000127). */
static int warnings_need_inputs(const GpNode *s)
{
    return s->errstate != 0 && (may_raise(s->op, s->dtype, s->nin > 0 && s->in[0] ? s->in[0]->dtype : s->dtype) ||
                                raises_as_division(s->op));
}

/* Whether buffer b is written in place by one of stored[0..nstored). */
static int is_stored_buffer(const GpBuffer *b, GpNode *const *stored, int nstored)
{
    for (int j = 0; j < nstored; j++)
        if (stored[j]->buf == b)
            return 1;
    return 0;
}

/* Whether the kernel's in-place outputs are to be staged apart from their
 * memory (gp_buffer_stage_apart: a copy of the old contents, which the
 * memory keeps until the commit), so that numpy_for_flags can give them
 * up: an in-place kernel with an output whose warnings need its inputs
 * (warnings_need_inputs), under an error state that watches them.  Costs
 * a copy of each buffer written in place. */
static int stages_apart(Plan *pl, GpNode *root, const GpBackend *be)
{
    if (be->resident || !host.eval_with_gil || !host.fpe_replay || gp_guard_in_handler() || gp_guard_on_resolver())
        return 0;
    int need = 0;
    for (int j = 0; j < pl->nstored; j++)
        need |= warnings_need_inputs(pl->stored[j]);
    return need && !(host.fpe_direct && be->exact_fp_flags && lone_exact_node(pl, root));
}

/* After an in-place kernel ran into stages apart from its memory
 * (stages_apart), before they are committed: whether its flags are
 * warnings report_fpe could not give -- a stored output's own (its inputs
 * are overwritten once committed), or any when the others cannot be
 * replayed -- and NumPy should compute the outputs instead, from the
 * memory the stages left untouched, with its warnings (or
 * FloatingPointError).  Takes the back end's flags into pl->fp_flags. */
static int numpy_for_flags(Plan *pl, GpNode *root, const GpBackend *be)
{
    if (!pl->apart)
        return 0;
    GpNode *const *stored = pl->stored;
    int nstored = pl->nstored;
    /* (a fresh output's memory may have been written: NumPy writes it
     * again; an in-place one must be untouched) */
    for (int i = 0; i < pl->nstaged; i++)
        if (is_stored_buffer(pl->staged[i], stored, nstored) &&
            (pl->stage[i] == pl->staged[i]->data || pl->staged[i]->stage_moved))
            return 0; /* written in its memory (not a guarded mapping) */
    pl->fp_flags |= be->take_fp_flags();
    GpNode *nodes[GP_MAXINSTR + 1];
    int n = pending_nodes(pl, root, nodes);
    unsigned flags = pl->fp_flags & watched(nodes, n);
    if (!flags || (host.fpe_direct && be->exact_fp_flags && lone_exact_node(pl, root)))
        return 0;
    if (!replayable_without(pl, stored, nstored, nodes, n))
        return 1;
    for (int j = 0; j < nstored; j++)
        if (flags_are_its_own(stored[j], flags))
            return 1;
    return 0;
}

/* Whether NumPy may warn of node s itself under its error state (its
 * inputs' warnings are theirs): a float operation that may raise
 * (may_raise) other than a cast to its own dtype (an assignment's copy),
 * or an integer division or remainder (by zero: "divide by zero
 * encountered in floor_divide"; INT_MIN // -1) or power. */
static int may_warn(const GpNode *s)
{
    if (s->op == GP_OP_CAST && s->nin > 0 && s->in[0] && s->in[0]->dtype == s->dtype)
        return 0;
    return warnings_need_inputs(s);
}

/* Whether pending node n, or a pending node it reads, may warn
 * (may_warn), looking through at most *budget nodes (one reached twice
 * counts twice): 1 past the budget. */
static int subgraph_may_warn(const GpNode *n, int *budget)
{
    if (!n || n->materialized || n->evaluated)
        return 0;
    if (--*budget < 0 || may_warn(n))
        return 1;
    for (int i = 0; i < n->nin; i++)
        if (subgraph_may_warn(n->in[i], budget))
            return 1;
    return 0;
}

int gp_node_may_warn(const GpNode *n)
{
    GP_EXPECT_LOCKED();
    int budget = 64;
    return subgraph_may_warn(n, &budget);
}

/* What becomes of the IEEE flags of the resident back end's kernel about
 * to run (GpLaunch.fp_use): nothing when no node's error state watches
 * flags its operation may raise (may_warn) or no replay is possible;
 * counted only (fpe_unreported) for a
 * kernel run for a fault (no Python there), and for an in-place kernel
 * run in boxes (an earlier box's outputs are in place already); an
 * in-place kernel's undone when raised (its outputs may be on the device
 * only, where it overwrites the values a replay would read: NumPy computes
 * them instead, from the memory the launch left as it was, GP_EFLAGS);
 * else NumPy's warnings from them (report_fpe), so the back end must have
 * them when the launch returns.  After in_place_outputs. */
/* Whether a node of the kernel watches IEEE flags its operation may raise
 * and the hooks can give NumPy's warnings for them. */
static int kernel_may_warn(Plan *pl, GpNode *root)
{
    GpNode *nodes[GP_MAXINSTR + 1];
    int n = pending_nodes(pl, root, nodes), raises = 0;
    for (int i = 0; i < n; i++)
        raises |= may_warn(nodes[i]);
    return host.fpe_replay && raises;
}

static int flags_use(Plan *pl, GpNode *root, int boxed)
{
    if (!kernel_may_warn(pl, root))
        return GP_FLAGS_IGNORED;
    if (gp_guard_in_handler() || gp_guard_on_resolver() || (pl->nstored > 0 && (boxed || !host.eval_with_gil)))
        return GP_FLAGS_UNREPORTED;
    return pl->nstored > 0 ? GP_FLAGS_UNDONE : GP_FLAGS_REPORTED;
}

/* After a kernel over the plan's nodes (root: a reduction or scan node not
 * among them, or NULL): the IEEE exceptions it raised that a node's error
 * state watches go to the hooks, which replay the nodes with NumPy for its
 * warnings (DESIGN.md 4).  Spurious flags (speculated branches, fast paths)
 * cost a replay and produce no warning NumPy would not give. */
static void report_fpe(Plan *pl, GpNode *root)
{
    unsigned flags = gp_backend()->take_fp_flags() | pl->fp_flags;
    pl->fp_flags = 0;
    if (!flags || !host.fpe_replay)
        return;
    GpNode *nodes[GP_MAXINSTR + 1];
    int n = pending_nodes(pl, root, nodes);
    unsigned watch = watched(nodes, n);
    if (!(flags & watch))
        return;
    /* an in-place kernel (copyto, out=, x[...] = ...) may be replayed when
     * it reads nothing of the memory it wrote: the replay reads the leaves */
    GpNode *const *stored = pl->stored; /* (found by launch, before the kernel ran) */
    int nstored = pl->nstored;
    int in_place = nstored > 0;
    GpNode *lone = in_place && host.fpe_direct && gp_backend()->exact_fp_flags ? lone_exact_node(pl, root) : NULL;
    if (lone && gp_guard_in_handler()) {
        /* no Python in the fault handler: the warnings the flags name are
         * given after the fault, at lone's line (hooks' queue) */
        unsigned mask = flags & lone->errstate & 15u;
        if (mask && host.fpe_queue)
            host.fpe_queue(lone, mask); /* (counts what it must drop: fpe_unreported) */
        else if (mask)
            gp_stats.fpe_unreported++;
        return;
    }
    if (lone) {
        /* an in-place kernel of one operation whose flags are NumPy's:
         * the flags say which warnings NumPy gave, no replay needed */
        gp_stats.fpe_replays++;
        gp_node_incref(lone);
        int depth = gp_lock_release_all();
        host.fpe_direct(lone, flags & lone->errstate);
        gp_lock_reacquire(depth);
        gp_node_decref(lone);
        return;
    }
    if (gp_guard_in_handler()) {
        /* no Python in the fault handler: NumPy's inner loops find the
         * warnings, given later -- not for an in-place kernel, which
         * overwrote values the loops would read, nor where a resident back
         * end's memory may be on the device only */
        if (in_place || gp_backend()->resident || !host.fpe_later || host.fpe_later(nodes, n, flags & watch) < 0)
            gp_stats.fpe_unreported++;
        return;
    }
    /* (a resident back end's in-place output may be on the device only,
     * its host pages inaccessible while it is pending: not read there) */
    if (in_place && (gp_backend()->resident || !replayable_around(pl, flags, stored, nstored, nodes, &n))) {
        /* an in-place kernel that read its own memory has overwritten the
         * values a replay would read */
        gp_stats.fpe_unreported++;
        return;
    }
    if (n == 0)
        return; /* every node was an in-place output: nothing to replay */
    gp_stats.fpe_replays++;
    /* NumPy may drop the GIL inside the replay: never hold the core lock
     * while waiting for it (as for eval_with_gil) */
    for (int i = 0; i < n; i++)
        gp_node_incref(nodes[i]);
    for (int i = 0; i < nstored; i++)
        gp_node_incref(stored[i]);
    int depth = gp_lock_release_all();
    host.fpe_replay(nodes, n, stored, nstored, flags & watch);
    gp_lock_reacquire(depth);
    for (int i = 0; i < n; i++)
        gp_node_decref(nodes[i]);
    for (int i = 0; i < nstored; i++)
        gp_node_decref(stored[i]);
}

/* The tail of every kernel launch: NumPy's warnings for the IEEE flags it
 * raised (report_fpe, which releases the core lock while NumPy replays),
 * then its outputs marked computed.  The outputs are held throughout: an
 * array dropped by another thread while the lock is released must not be
 * freed before it is marked. */
/* The evidence of gp_sites: a node computed by a kernel of its own (one
 * map instruction over computed operands, a fresh result below
 * gp_config.lone_max_bytes) gained nothing from being recorded, and paid
 * for a reserved result moved into place; one computed inside a larger
 * kernel was fused.  Before complete() marks anything: marking may free
 * fused nodes. */
static void note_sites(const Plan *pl)
{
    int ops = 0, lone = -1;
    for (int k = 0; k < pl->prog.ninstr; k++)
        if (pl->prog.instr[k].op != GP_OP_LEAF && pl->prog.instr[k].op != GP_OP_CONST) {
            ops++;
            lone = k;
        }
    /* a map-reduce whose one map is written out anyway -- its array is
     * alive while it is reduced, as in (a*b).sum() -- saves only one read
     * of that result over NumPy's two loops, less than the kernel's
     * staged output costs at these sizes (tools/overhead.py "reduce":
     * 1.45x NumPy's time at 1 MiB): the map counts as computed alone */
    int written_map_reduce =
        pl->prog.kind == GP_KIND_REDUCE && lone >= 0 && lone == pl->root_in && pl->prog.instr[lone].slot >= 0;
    if (ops != 1 || !((pl->prog.kind == GP_KIND_MAP && !pl->prog.accumulate) || written_map_reduce))
        lone = -1;
    /* an integer % or fmod by a constant gains alone: NumPy's loops divide
     * at every element (int16 a % 7 over 2M: 12.8 ms), the kernel
     * multiplies (0.6 ms) */
    if (lone >= 0 && pl->prog.instr[lone].divisor && pl->prog.instr[lone].op != GP_OP_FLOOR_DIVIDE)
        lone = -1;
    if (lone >= 0) {
        const GpNode *n = pl->node[lone];
        if (n && n->site > 0 && n->site < GP_MAX_SITES && !n->out_view &&
            gp_node_size(n) * (int64_t)gp_dtype_size(n->dtype) < gp_config.lone_max_bytes)
            gp_sites[n->site].lone++;
        return;
    }
    for (int k = 0; k < pl->prog.ninstr; k++) {
        const GpNode *n = pl->node[k];
        GpOp op = (GpOp)pl->prog.instr[k].op;
        if (n && op != GP_OP_LEAF && op != GP_OP_CONST && n->site > 0 && n->site < GP_MAX_SITES)
            gp_sites[n->site].fused++;
    }
}

/* complete()s of this thread reporting flags (their nodes `completing`) */
static _Thread_local int completing_here;

/* Whether instruction k of pl is an output complete() marks: one with an
 * operand slot that is not a leaf or a constant. */
static int completes(const Plan *pl, int k)
{
    const GpInstr *ins = &pl->prog.instr[k];
    return ins->slot >= 0 && ins->op != GP_OP_LEAF && ins->op != GP_OP_CONST && pl->node[k];
}

static void complete(Plan *pl, GpNode *root, int64_t t0)
{
    note_sites(pl);
    for (int i = 0; i < pl->noutputs; i++)
        gp_node_incref(pl->outputs[i]);
    for (int k = 0; k < pl->prog.ninstr; k++)
        if (pl->node[k])
            pl->node[k]->evaluated = 1;
    if (root)
        root->evaluated = 1;
    /* what is marked below -- the outputs: the root and every output
     * instruction are among them -- in flight while report_fpe lets the
     * lock go */
    for (int i = 0; i < pl->noutputs; i++)
        pl->outputs[i]->completing = !pl->outputs[i]->materialized;
    completing_here++;
    report_fpe(pl, root);
    completing_here--;
    /* consumers before their inputs -- the root, then the output
     * instructions from the last: an input marked first would gain its
     * consumer as a reader for a moment (an mprotect of its pages to
     * read-only and back).  An instruction with an operand slot is an
     * output, held above; a fused node that is not one may be freed by
     * marking its consumer, so it is never read here. */
    if (root && !root->materialized)
        gp_node_mark_materialized(root);
    for (int k = pl->prog.ninstr - 1; k >= 0; k--)
        if (completes(pl, k) && !pl->node[k]->materialized)
            gp_node_mark_materialized(pl->node[k]);
    for (int i = 0; i < pl->noutputs; i++) {
        if (!pl->outputs[i]->materialized)
            gp_node_mark_materialized(pl->outputs[i]);
        pl->outputs[i]->completing = 0;
    }
    for (int i = 0; i < pl->noutputs; i++)
        gp_node_decref(pl->outputs[i]);
    gp_stats.kernels_launched++;
    gp_stats.run_ns += gp_now_ns() - t0;
    gp_stats.bytes_moved += pl->bytes;
}

/* Whether an operand of the plan is a wrapped leaf (np.roll). */
static int reads_wrapped(const Plan *pl)
{
    for (int o = 0; o < pl->prog.noperands; o++)
        if (pl->wrapped[o])
            return 1;
    return 0;
}

/* Operand slot o's wrap along each plan dim (the wrapped leaf's dims
 * aligned on the right of the root's, then the plan's permutation). */
static void plan_wrap(const Plan *pl, int o, int64_t *wrap)
{
    const GpNode *x = pl->wrapped[o];
    int off = pl->nd - x->nd;
    for (int d = 0; d < pl->nd; d++) {
        int xd = pl->perm[d] - off;
        wrap[d] = xd >= 0 && x->shape[xd] == pl->shape[d] ? x->wrap[xd] : 0;
    }
}

/* A map kernel reading rolled leaves: one launch per box of the index
 * space in which every operand is an affine map of its memory (GpBoxes),
 * each box's dims collapsed (its inner dim kept) and its layouts set as
 * for a whole space: one variant of the kernel for every box.  Every
 * element is computed once, by the same program: the results are those of
 * one launch.  *k: the last variant run. */
typedef GpStatus (*BoxFn)(Plan *pl, const GpBackend *be, const GpLaunch *l, void **k, int *ready);

/* A box: its program compiled and launched. */
static GpStatus box_launch(Plan *pl, const GpBackend *be, const GpLaunch *l, void **k, int *ready)
{
    (void)ready;
    if (!(*k = be->compile(&pl->prog)))
        return GP_EJIT;
    return be->launch(*k, &pl->prog, &pl->args, l);
}

/* A box: its program asked for (be->prefetch); *ready becomes the lowest
 * answer of the boxes' (1 ready, 0 compiling, -1 to be compiled on the
 * caller). */
static GpStatus box_prefetch(Plan *pl, const GpBackend *be, const GpLaunch *l, void **k, int *ready)
{
    (void)l;
    (void)k;
    int r = be->prefetch(&pl->prog);
    *ready = r < *ready ? r : *ready;
    return GP_OK;
}

/* fn for each box of the plan's iteration space, in order, with the
 * box's operand addresses, shape and layouts set (the same layouts in
 * every box: the inner dim is kept); on return the plan's shape and
 * operand addresses are as before, its collapsed args and layouts the
 * last box's (only print_plan and explain read them then).  The first
 * status other than GP_OK, or GP_OK. */
static GpStatus for_each_box(Plan *pl, const GpBackend *be, const GpLaunch *l, void **k, BoxFn fn, int *ready)
{
    int nops = pl->prog.noperands, nd = pl->nd;
    int64_t(*wrap)[GP_MAXDIMS] = calloc(GP_MAXOPERANDS, sizeof *wrap);
    GpBoxes *bx = malloc(sizeof *bx);
    GpStatus st = GP_OK;
    if (!wrap || !bx) {
        free(wrap);
        free(bx);
        return GP_ENOMEM;
    }
    int64_t full[GP_MAXDIMS], start[GP_MAXDIMS], len[GP_MAXDIMS];
    char *base[GP_MAXOPERANDS];
    memcpy(full, pl->shape, sizeof full);
    memcpy(base, pl->args.data, sizeof base);
    gp_boxes_init(bx, nd, full);
    for (int o = 0; o < nops && st == GP_OK; o++)
        if (pl->wrapped[o]) {
            plan_wrap(pl, o, wrap[o]);
            if (gp_boxes_add_wrap(bx, wrap[o]) != 0) {
                gp_set_error("more than %d distinct rolls along one axis", GP_BOX_MAXCUTS); /* (not reached) */
                st = GP_ELIMIT;
            }
        }
    int inner = nd - 1; /* the space's inner dim: its last of more than one element */
    while (inner > 0 && full[inner] == 1)
        inner--;
    while (st == GP_OK && gp_boxes_next(bx, start, len)) {
        for (int o = 0; o < nops; o++) {
            char *p = base[o];
            for (int d = 0; d < nd; d++) {
                int64_t i = start[d] + wrap[o][d];
                p += (i >= full[d] ? i - full[d] : i) * pl->strides[o][d];
            }
            pl->args.data[o] = p;
        }
        memcpy(pl->shape, len, (size_t)nd * sizeof *len);
        /* every box keeps the space's inner dim, so every box has the
         * same layouts and runs one variant (a box one element wide
         * collapsed to its outer dims would be another kernel to compile) */
        int bnd = 0;
        collapse_group_keep(pl, 0, nd, nops, pl->args.shape, pl->args.strides, &bnd, inner);
        pl->args.nd = bnd;
        set_layouts(pl);
        st = fn(pl, be, l, k, ready);
    }
    memcpy(pl->shape, full, sizeof full);
    memcpy(pl->args.data, base, sizeof base);
    free(wrap);
    free(bx);
    return st;
}

static GpStatus launch_boxes(Plan *pl, const GpBackend *be, const GpLaunch *l, void **k)
{
    return for_each_box(pl, be, l, k, box_launch, NULL);
}

/* l->buf and l->base of every operand slot (backend.h): an output's
 * staged buffer and its stage, else the guarded buffer the slot reads. */
static void operand_buffers(const Plan *pl, GpLaunch *l)
{
    for (int k = 0; k < pl->prog.noperands; k++) {
        char *p = pl->args.data[k];
        l->buf[k] = NULL;
        l->base[k] = NULL;
        for (int i = 0; i < pl->nstaged && !l->buf[k]; i++)
            if (p >= pl->stage[i] && p < pl->stage[i] + pl->staged[i]->mapped) {
                l->buf[k] = pl->staged[i];
                l->base[k] = pl->stage[i];
            }
        if (!l->buf[k] && (l->buf[k] = gp_buffer_lookup(p)))
            l->base[k] = l->buf[k]->data;
    }
}

/* NumPy's speed in the estimate below: bytes its operations read and
 * write per ns.  Measured here (2026-11-27, 2 CPUs): a chain of three
 * float64 operations moved 6.5 B/ns at 1.2 MiB operands (fresh pages for
 * every temporary), 11.4 at 8 MiB, 16 at 32-128 MiB; shallow_water's
 * steps (1.2 MiB arrays in a loop) about 27 by this count.  4 before,
 * which sent launches NumPy does in a few ms to wait for their compiles. */
#define NUMPY_BYTES_PER_NS 12

/* NumPy's arithmetic per element of an instruction beyond its memory
 * traffic, in ns, rounded up from NumPy 2.x on these machines (2M float64
 * elements, 2026-11-27): pow of a negative base 57 (glibc's slow path; 5 for
 * positive ones), sin 8.7, floor division and remainders 9-10, arcsin 3.9,
 * the other transcendentals 0.8-2.3; square, sqrt and reciprocal (a
 * constant exponent NumPy special-cases) and the rest are memory-bound. */
static double numpy_element_ns(const GpInstr *ins)
{
    GpOp op = (GpOp)ins->op;
    if (op == GP_OP_POWER)
        return !gp_dtype_is_float((GpDType)ins->dtype)                                    ? 10.0
               : ins->exponent <= GP_EXPONENT_OTHER || ins->exponent >= GP_EXPONENT_THREE ? 60.0 /* (and SCALAR) */
                                                                                          : 0.0;
    if (op == GP_OP_FLOOR_DIVIDE || op == GP_OP_REMAINDER || op == GP_OP_FMOD ||
        (op >= GP_OP_CBRT && op <= GP_OP_HYPOT))
        return 10.0;
    return 0.0;
}

/* Whether NumPy computes this launch while the back end compiles its
 * kernel in the background (DESIGN.md section 6): the kernel is not in
 * memory or in the disk cache (be->prefetch queues it, or it is queued
 * already), and NumPy would do the launch's work -- each operation reading
 * its array operands and writing a temporary, plus its arithmetic (before:
 * each operation moving all of the kernel's bytes, which overestimated a
 * kernel of many leaves by 3-4x, so shallow_water's launches of 12 ms in
 * NumPy waited for their compiles) -- in less
 * than gp_config.first_numpy_ns, about what a compile takes.  A loop's
 * first iterations are NumPy's until the kernel is ready; a launch that
 * NumPy would take longer over waits for its compile instead.  Never in
 * the guard's fault handler or on its resolver thread (no GIL there for
 * NumPy), nor where no evaluator is registered. */
static int first_launch_to_numpy(Plan *pl, const GpBackend *be, int boxed)
{
    if (!gp_config.first_numpy_ns || !be->prefetch || !host.eval_with_gil || gp_guard_in_handler() ||
        gp_guard_on_resolver())
        return 0;
    double points = 1.0, element_ns = 0.0, bytes = 0.0;
    for (int d = 0; d < pl->nd; d++)
        points *= (double)pl->shape[d];
    for (int k = 0; k < pl->prog.ninstr; k++) {
        const GpInstr *ins = &pl->prog.instr[k];
        if (ins->op == GP_OP_LEAF || ins->op == GP_OP_CONST)
            continue;
        /* NumPy's loop reads each array operand and writes a temporary of
         * the point count: the instruction's element size for each */
        int arrays = 1;
        for (int i = 0; i < ins->nin; i++)
            arrays += pl->prog.instr[ins->in[i]].op != GP_OP_CONST;
        bytes += (double)arrays * points * (double)gp_dtype_size((GpDType)ins->dtype);
        element_ns += numpy_element_ns(ins);
    }
    /* at least the kernel's own traffic (its leaves may be wider than the
     * instructions' dtypes: a narrowing cast) */
    double numpy_ns =
        (bytes > (double)pl->bytes ? bytes : (double)pl->bytes) / NUMPY_BYTES_PER_NS + points * element_ns;
    if (numpy_ns >= (double)gp_config.first_numpy_ns)
        return 0;
    if (!boxed)
        return be->prefetch(&pl->prog) == 0;
    /* a launch over rolled operands runs a kernel per box (launch_boxes):
     * theirs are the programs to ask for (the plan's own is never run) */
    int ready = 1;
    void *k = NULL;
    return for_each_box(pl, be, NULL, &k, box_prefetch, &ready) == GP_OK && ready == 0;
}

/* The outputs of the launch last left to NumPy (GP_EDEFER), referenced,
 * for gp_node_materialize_locked to have NumPy compute them all; under the
 * core lock, taken before it is let go. */
static struct {
    GpNode *node[GP_MAXOPERANDS];
    int n;
    int for_flags; /* for numpy_for_flags, not for a compile */
} deferred;

/* Leaves the launch to NumPy: every output the kernel would have written
 * is NumPy's, in the program's order (inputs first), so that the DAG is
 * left as the kernel leaves it: no later plan differs (a new program)
 * because an extra output or a sibling stayed pending.  GP_EDEFER. */
static GpStatus defer_outputs(Plan *pl, int for_flags)
{
    while (deferred.n > 0) /* (left by a deferral no materialization took: none expected) */
        gp_node_decref(deferred.node[--deferred.n]);
    for (int k = 0; k < pl->prog.ninstr; k++)
        for (int i = 0; i < pl->noutputs; i++)
            if (pl->outputs[i] == pl->node[k] && deferred.n < GP_MAXOPERANDS) {
                gp_node_incref(pl->node[k]);
                deferred.node[deferred.n++] = pl->node[k];
            }
    deferred.for_flags = for_flags;
    gp_set_error("%s", for_flags ? "an in-place kernel raised IEEE flags whose warnings need the memory it overwrites"
                                 : GP_DEFER_REASON);
    return GP_EDEFER;
}

/* An in-place kernel run for a fault -- where no Python runs, so that its
 * warnings cannot be found by a replay afterwards (its inputs are
 * overwritten), nor given directly unless it is one operation whose flags
 * are NumPy's (lone_exact_node, report_fpe) -- is computed by NumPy's
 * inner loops instead, node by node, which queue the warnings for the
 * Python thread (hooks/eval_loops.c): launch sets wants_loops and fails,
 * gp_node_materialize_locked evaluates the node so; should the loops fail,
 * the kernel runs after all (loops_failed), its warnings unreported as
 * before.  Fuzzer case 718000551: x3 //= x1 * 1 computed when NumPy's
 * take() read a pending index array lost "divide by zero encountered in
 * floor_divide".  Per thread: the core lock is let go inside a launch
 * (report_fpe), and faults are resolved on several threads. */
static _Thread_local int wants_loops, loops_failed;

static int in_place_for_a_fault_needs_loops(Plan *pl, GpNode *root, const GpBackend *be)
{
    if (pl->nstored == 0 || loops_failed || !host.eval_without_gil ||
        !(gp_guard_in_handler() || gp_guard_on_resolver()))
        return 0;
    if (!kernel_may_warn(pl, root))
        return 0;
    return !(gp_guard_in_handler() && host.fpe_direct && host.fpe_queue && be->exact_fp_flags &&
             lone_exact_node(pl, root));
}

/* Step 5 for every kernel kind: compile the program for the back end,
 * stage the outputs, launch, put the outputs in place, then complete().
 * l->out (a reduction's results) is an address in root's buffer, moved
 * into its stage here.  root: as for complete(). */
static GpStatus launch(Plan *pl, GpNode *root, GpLaunch *l)
{
    const GpBackend *be = gp_backend();
    /* quiet compares once data with NaNs was seen (gp_config.quiet_compares):
     * a variant of the kernel, another key */
    pl->prog.quiet = (uint8_t)(__atomic_load_n(&gp_config.quiet_compares, __ATOMIC_RELAXED) &&
                               gp_program_compares_floats(&pl->prog));
    GpExplainCompile before = {0, 0, 0, 0};
    if (gp_config.explain)
        gp_explain_compile_begin(&before);
    /* (over rolled operands each box runs its own variant: launch_boxes
     * compiles those, and the plan's own program is never run) */
    int boxed = reads_wrapped(pl);
    pl->nstored = in_place_outputs(pl, pl->stored);
    if (in_place_for_a_fault_needs_loops(pl, root, be)) {
        wants_loops = 1;
        gp_set_error("an in-place kernel for a fault that may warn: NumPy's inner loops give its warnings");
        return GP_EUNSUPPORTED;
    }
    pl->apart = stages_apart(pl, root, be);
    pl->nsplit = 0;
    if (pl->apart && !boxed)
        split_stored_slots(pl); /* before the prefetch: another program */
    if (first_launch_to_numpy(pl, be, boxed))
        return defer_outputs(pl, 0);
    void *k = boxed ? NULL : be->compile(&pl->prog);
    if (!k && !boxed)
        return GP_EJIT;
    if (gp_config.debug_plan)
        print_plan(pl);
    int64_t t0 = gp_now_ns();
    GpStatus st = open_outputs(pl);
    if (st != GP_OK)
        return st;
    if ((st = read_inaccessible_leaves(pl)) != GP_OK) {
        free_leaf_copies(pl);
        commit_outputs(pl, 0);
        return st;
    }
    if (l->out)
        l->out = staged_ptr(pl, l->out);
    l->bytes = pl->bytes + pl->strided_extra;
    if (be->resident) {
        operand_buffers(pl, l);
        l->fp_use = flags_use(pl, root, boxed);
    }
    be->take_fp_flags();
    GpStatus run = boxed ? launch_boxes(pl, be, l, &k) : be->launch(k, &pl->prog, &pl->args, l);
    free_leaf_copies(pl);
    if (run == GP_EFLAGS) {
        /* an in-place kernel of the resident back end raised flags and
         * left its outputs' memory as it was (GP_FLAGS_UNDONE) */
        be->take_fp_flags();
        commit_outputs(pl, 0);
        gp_stats.fpe_to_numpy++;
        return defer_outputs(pl, 1);
    }
    if (run == GP_OK && numpy_for_flags(pl, root, be)) {
        /* the stages are given back, the memory keeps the inputs: NumPy
         * computes the outputs, with its warnings */
        commit_outputs(pl, 0);
        gp_stats.fpe_to_numpy++;
        return defer_outputs(pl, 1);
    }
    if ((st = commit_outputs(pl, run == GP_OK)) != GP_OK)
        return st;
    if (run != GP_OK)
        return run;
    /* explain: the nodes are described before complete() marks (and may free) them */
    int record = gp_config.explain
                     ? gp_explain_note(&pl->prog, pl->node, pl->prog.kind == GP_KIND_REDUCE ? root : NULL, k, &before)
                     : -1;
    complete(pl, root, t0);
    gp_stats.nodes_fused += pl->fused;
    gp_stats.extra_outputs += pl->extras;
    if (record >= 0)
        gp_explain_ran(record, k, gp_now_ns() - t0, pl->bytes);
    return GP_OK;
}

static GpStatus add_output(Plan *pl, int k)
{
    GpNode *n = pl->node[k];
    GpStatus st = gp_node_ensure_buffer(n);
    if (st != GP_OK)
        return st;
    int64_t strides[GP_MAXDIMS];
    char *data = n->buf->data;
    if (n->out_view) {
        data = n->out_data;
        memcpy(strides, n->out_strides, sizeof strides);
    } else {
        gp_node_buffer_strides(n, strides);
    }
    int slot = -1;
    if (n->out_view) {
        /* in place: the leaf reading the same elements is the output's slot,
         * so the kernel loads and stores through one pointer (no aliasing) */
        for (int i = 0; i < pl->prog.ninstr && slot < 0; i++) {
            const GpInstr *ins = &pl->prog.instr[i];
            if (ins->op == GP_OP_LEAF && !pl->wrapped[ins->slot] && pl->args.data[ins->slot] == data &&
                ins->dtype == (uint8_t)n->dtype &&
                !memcmp(pl->strides[ins->slot], strides, (size_t)pl->nd * sizeof *strides))
                slot = ins->slot;
        }
    }
    if (slot < 0) {
        if (pl->prog.noperands >= GP_MAXOPERANDS)
            return GP_ELIMIT;
        slot = pl->prog.noperands++;
        pl->wrapped[slot] = NULL;
        pl->args.data[slot] = data;
        memcpy(pl->strides[slot], strides, sizeof strides);
    }
    pl->prog.instr[k].slot = (int16_t)slot;
    pl->outputs[pl->noutputs++] = n;
    pl->bytes += gp_node_size(n) * (int64_t)gp_dtype_size(n->dtype);
    return GP_OK;
}

/* Whether every pending ancestor of n is fusable into the current
 * subgraph (nothing to compute first); *shares is set when one of them is
 * already in it.  Visits at most *budget nodes. */
static int sibling_ok(GpNode *n, int nd, const int64_t *shape, int wrap_ok, int *shares, int *budget)
{
    if (n->set_mark == epoch) {
        *shares = 1;
        return 1;
    }
    if (n->materialized)
        return 1;
    if (--*budget < 0 || !fusable(n, nd, shape) || (!wrap_ok && gp_node_reads_wrapped(n)))
        return 0;
    for (int i = 0; i < n->nin; i++)
        if (!sibling_ok(n->in[i], nd, shape, wrap_ok, shares, budget))
            return 0;
    return 1;
}

/* How many more output slots the plan's pending instructions may want
 * (an alive array, or users outside the plan: add_output), at most: the
 * plan's internal edges only grow. */
static int outputs_wanted(const Plan *pl)
{
    int n = 0;
    for (int i = 0; i < pl->prog.ninstr; i++) {
        const GpNode *x = pl->node[i];
        n += !x->materialized && pl->prog.instr[i].slot < 0 && (x->buf || x->nusers > pl->internal_edges[i]);
    }
    return n;
}

/* Step 3, sibling roots: pending arrays of the iteration shape that share a
 * node with the subgraph and need nothing computed first join the kernel. */
static GpStatus add_siblings(Plan *pl)
{
    for (GpNode *s = gp_dag_pending_first(); s; s = gp_dag_pending_next(s)) {
        if (!s->buf || s->set_mark == epoch || !fusable(s, pl->nd, pl->shape))
            continue;
        int shares = 0, budget = 2 * GP_MAXINSTR;
        if (!sibling_ok(s, pl->nd, pl->shape, pl->wrap_ok, &shares, &budget) || !shares)
            continue;
        if (pl->prog.ninstr + (2 * GP_MAXINSTR - budget) > GP_MAXINSTR - 8 || pl->prog.noperands + 4 > GP_MAXOPERANDS)
            break;
        /* a sibling that does not fit is left for its own kernel: the
         * program is rolled back to before it */
        int ninstr = pl->prog.ninstr, nops = pl->prog.noperands, nconsts = pl->prog.nconsts;
        int64_t bytes = pl->bytes, strided_extra = pl->strided_extra;
        memcpy(pl->saved_edges, pl->internal_edges, sizeof pl->saved_edges);
        int k = collect(pl, s);
        if (k < 0 || pl->prog.noperands + outputs_wanted(pl) >= GP_MAXOPERANDS) {
            for (int i = ninstr; i < pl->prog.ninstr; i++)
                pl->node[i]->set_mark = 0;
            pl->prog.ninstr = (uint16_t)ninstr;
            pl->prog.noperands = (uint8_t)nops;
            pl->prog.nconsts = (uint8_t)nconsts;
            pl->bytes = bytes;
            pl->strided_extra = strided_extra;
            memcpy(pl->internal_edges, pl->saved_edges, sizeof pl->saved_edges);
            break;
        }
        GpStatus st = add_output(pl, k);
        if (st != GP_OK)
            return st;
    }
    return GP_OK;
}

static GpStatus materialize_map(GpNode *root)
{
    Plan *pl = calloc(1, sizeof *pl);
    if (!pl)
        return GP_ENOMEM;
    pl->root_in = -1;
    pl->wrap_ok = 1;
    GpStatus st;
    int count = 0;
    epoch++;
    pl->nd = root->nd;
    memcpy(pl->shape, root->shape, sizeof pl->shape);
    for (int d = 0; d < root->nd; d++)
        pl->perm[d] = d;
    if ((st = prepare(root, root->nd, root->shape, 1, &count)) != GP_OK)
        goto done;
    if (root->materialized)
        goto done;
    pl->prog.kind = GP_KIND_MAP;
    int r = collect(pl, root);
    if (r < 0) {
        st = GP_ELIMIT;
        gp_set_error("subgraph too large for one kernel");
        goto done;
    }
    if ((st = add_output(pl, r)) != GP_OK)
        goto done;
    if ((st = add_siblings(pl)) != GP_OK)
        goto done;
    for (int k = 0; k < pl->prog.ninstr; k++) {
        GpNode *n = pl->node[k];
        if (k == r || n->materialized || pl->prog.instr[k].slot >= 0)
            continue;
        if (n->buf || n->nusers > pl->internal_edges[k]) {
            if ((st = add_output(pl, k)) != GP_OK)
                goto done;
            pl->extras++;
        }
        pl->fused++;
    }
    pl->fused++;
    if (root->has_perm) {
        /* iterate in the result's memory order: its fastest dim innermost */
        Plan *q = malloc(sizeof *q);
        if (!q) {
            st = GP_ENOMEM;
            goto done;
        }
        memcpy(q->shape, pl->shape, sizeof q->shape);
        memcpy(q->strides, pl->strides, sizeof q->strides);
        for (int d = 0; d < pl->nd; d++) {
            pl->perm[d] = root->perm[d];
            pl->shape[d] = q->shape[root->perm[d]];
            for (int o = 0; o < pl->prog.noperands; o++)
                pl->strides[o][d] = q->strides[o][root->perm[d]];
        }
        free(q);
    }
    int nd = 0;
    collapse_group(pl, 0, pl->nd, pl->prog.noperands, pl->args.shape, pl->args.strides, &nd);
    pl->args.nd = nd;
    set_layouts(pl);
    st = launch(pl, NULL, &(GpLaunch){.kind = GP_LAUNCH_MAP});
done:
    free(pl);
    return st;
}

static int reduce_order_free(GpOp op, GpDType t)
{
    return !gp_dtype_is_float(t) || op == GP_OP_MIN || op == GP_OP_MAX || op == GP_OP_ANY || op == GP_OP_ALL;
}

/* Steps 1-3 for the map part of a reduction over `in`: prepare, collect,
 * siblings, extra outputs (`in` itself is read by the reduction too).
 * *r receives in's instruction. */
static GpStatus collect_reduced_input(Plan *pl, GpNode *in, GpKind kind, int *r)
{
    GpStatus st;
    int count = 0;
    epoch++;
    pl->nd = in->nd;
    memcpy(pl->shape, in->shape, sizeof pl->shape);
    /* a reduction or scan kernel cannot read np.roll's leaves: when its
     * input's map subgraph does, that map is computed first, as one map
     * kernel reading them (its rolls fused, its other outputs written as
     * its extras), and the reduction reads its memory.  (prepare alone
     * would compute each roll as a copy of its own, and then recompute
     * the nodes above them that the map kernel of the first roll already
     * computed: shallow_water.py's speed, three copies a step.) */
    int budget = 4 * GP_MAXINSTR;
    if (!in->materialized && fusable(in, in->nd, in->shape) &&
        fused_reads_wrapped(in, in->nd, in->shape, &budget) == 1 && (st = gp_node_materialize_locked(in)) != GP_OK)
        return st;
    if (!in->materialized && (st = prepare(in, in->nd, in->shape, 0, &count)) != GP_OK)
        return st;
    pl->prog.kind = (uint8_t)kind;
    *r = collect(pl, in);
    if (*r < 0 || pl->prog.ninstr >= GP_MAXINSTR || pl->prog.noperands >= GP_MAXOPERANDS)
        return GP_ELIMIT;
    pl->root_in = *r;
    if (!in->materialized && (st = add_siblings(pl)) != GP_OK)
        return st;
    for (int k = 0; k < pl->prog.ninstr; k++) {
        GpNode *n = pl->node[k];
        if (n->materialized || pl->prog.instr[k].slot >= 0)
            continue;
        if ((n->buf && !n->output_deferred) || n->nusers > pl->internal_edges[k] + (k == *r)) {
            if ((st = add_output(pl, k)) != GP_OK)
                return st;
            pl->extras++;
        }
    }
    return GP_OK;
}

/* Appends the instruction of a reduction or scan node root reading
 * instruction r (the reduced input), after the plan's map instructions;
 * returns its index, or -1 when the program is full. */
static int append_root(Plan *pl, GpNode *root, int r)
{
    if (pl->prog.ninstr >= GP_MAXINSTR || pl->prog.noperands >= GP_MAXOPERANDS)
        return -1;
    int k = pl->prog.ninstr++;
    GpInstr *ins = &pl->prog.instr[k];
    memset(ins, 0, sizeof *ins);
    ins->op = (uint8_t)root->op;
    ins->dtype = (uint8_t)root->dtype;
    ins->in_dtype = (uint8_t)root->dtype;
    ins->nin = 1;
    ins->in[0] = (int16_t)r;
    ins->slot = -1;
    pl->node[k] = root;
    return k;
}

/* Reduction root's result strides (bytes) over its input's dims: 0 on
 * the reduced ones, else the stride in root's buffer of the dim each
 * becomes (NumPy's layout of the result: GpNode.perm). */
static void reduce_out_strides(const GpNode *root, int64_t *st)
{
    const GpNode *in = root->in[0];
    int64_t bs[GP_MAXDIMS];
    gp_node_buffer_strides(root, bs);
    for (int d = 0, k = 0; d < in->nd; d++) {
        int reduced = (int)(root->reduce_mask >> d & 1);
        st[d] = reduced ? 0 : bs[k];
        k += !reduced || root->keepdims;
    }
}

/* A reduction that keeps the innermost axis (sum(axis=0) of a C array):
 * a map over the input's iteration space whose last instruction folds each
 * value into its output element (stride 0 along the reduced axes), rows in
 * order, threads splitting the kept columns.  NumPy's order per element;
 * contiguous reads. */
static GpStatus materialize_outer_reduce(GpNode *root)
{
    GpNode *in = root->in[0];
    GpStatus st;
    Plan *pl = calloc(1, sizeof *pl);
    if (!pl)
        return GP_ENOMEM;
    pl->root_in = -1;
    int r;
    pl->prog.accumulate = 1;
    if ((st = collect_reduced_input(pl, in, GP_KIND_MAP, &r)) != GP_OK || root->materialized)
        goto done; /* materialized: computed with its input (a flush) */
    if ((st = gp_node_ensure_buffer(root)) != GP_OK)
        goto done;
    /* the folding instruction and its output: stride 0 on reduced axes */
    int k = append_root(pl, root, r);
    if (k < 0) {
        st = GP_ELIMIT;
        goto done;
    }
    GpInstr *ins = &pl->prog.instr[k];
    int slot = pl->prog.noperands++;
    ins->slot = (int16_t)slot;
    pl->args.data[slot] = root->buf->data;
    reduce_out_strides(root, pl->strides[slot]);
    pl->outputs[pl->noutputs++] = root;
    if (root->has_in_order) {
        /* NumPy's order: each element accumulates over the reduced dims
         * in the order its iterator visits them (X.T.sum(axis=1) of a
         * C-ordered X: row after row) */
        int64_t shape[GP_MAXDIMS], strides[GP_MAXOPERANDS][GP_MAXDIMS];
        memcpy(shape, pl->shape, sizeof shape);
        memcpy(strides, pl->strides, sizeof strides);
        for (int d = 0; d < pl->nd; d++) {
            pl->shape[d] = shape[root->in_order[d]];
            for (int o = 0; o < pl->prog.noperands; o++)
                pl->strides[o][d] = strides[o][root->in_order[d]];
        }
    }
    int nd = 0;
    collapse_group(pl, 0, pl->nd, pl->prog.noperands, pl->args.shape, pl->args.strides, &nd);
    pl->args.nd = nd;
    if (pl->args.strides[slot][nd - 1] == 0) {
        /* threads split the innermost dim: it must be a kept one, or two
         * threads would fold into the same element (innermost_axis) */
        st = GP_EUNSUPPORTED;
        gp_set_error("outer reduction over its innermost dim");
        goto done;
    }
    set_layouts(pl);
    st = launch(pl, root, &(GpLaunch){.kind = GP_LAUNCH_ACCUMULATE, .op = root->op, .dtype = root->dtype});
done:
    free(pl);
    return st;
}

/* An inclusive scan along one axis (paper section 3.2, map-scan): the map
 * producing its input and the scan are one kernel.  The iteration space is
 * permuted so that the scanned axis is innermost; each row carries the
 * accumulator in a register and stores every partial result; threads take
 * whole rows.  Per element the order is NumPy's (out[i] = out[i-1] op a[i]),
 * so results are bit-identical. */
static GpStatus materialize_scan(GpNode *root)
{
    GpNode *in = root->in[0];
    GpStatus st;
    if (!in->materialized && gp_op_kind[in->op] != GP_KIND_MAP && (st = gp_node_materialize_locked(in)) != GP_OK)
        return st;
    if (root->materialized) /* computed with its input (a flush) */
        return GP_OK;
    Plan *pl = calloc(1, sizeof *pl);
    Plan *q = calloc(1, sizeof *q);
    if (!pl || !q) {
        free(pl);
        free(q);
        return GP_ENOMEM;
    }
    pl->root_in = -1;
    int r;
    if ((st = collect_reduced_input(pl, in, GP_KIND_MAP, &r)) != GP_OK || root->materialized)
        goto done; /* materialized: computed with its input (a flush) */
    int k = append_root(pl, root, r);
    if (k < 0) {
        st = GP_ELIMIT;
        goto done;
    }
    root->set_mark = epoch;
    if ((st = add_output(pl, k)) != GP_OK)
        goto done;
    /* the scanned axis last; the others keep their order */
    int axis = __builtin_ctzll(root->reduce_mask), perm[GP_MAXDIMS], n = 0;
    for (int d = 0; d < pl->nd; d++)
        if (d != axis)
            perm[n++] = d;
    perm[n] = axis;
    q->nd = pl->nd;
    for (int d = 0; d < pl->nd; d++) {
        q->shape[d] = pl->shape[perm[d]];
        for (int o = 0; o < pl->prog.noperands; o++)
            q->strides[o][d] = pl->strides[o][perm[d]];
    }
    int nd = 0;
    collapse_group(q, 0, q->nd - 1, pl->prog.noperands, pl->args.shape, pl->args.strides, &nd);
    pl->args.shape[nd] = q->shape[q->nd - 1];
    for (int o = 0; o < pl->prog.noperands; o++)
        pl->args.strides[o][nd] = q->strides[o][q->nd - 1];
    pl->args.nd = nd + 1;
    set_layouts(pl);
    for (int i = 0; i < pl->prog.ninstr; i++)
        pl->fused += !pl->node[i]->materialized;
    st = launch(pl, NULL, &(GpLaunch){.kind = GP_LAUNCH_SCAN, .op = root->op, .dtype = root->dtype});
done:
    free(pl);
    free(q);
    return st;
}

/* Element j along in's last axis, in the shape of root (the reduction of
 * that axis, keepdims or not): a leaf of in's memory, or for a pending map
 * the view folded into its subgraph.  New reference or NULL. */
static GpNode *last_axis_element(GpNode *in, GpNode *root, int64_t j)
{
    int64_t bs[GP_MAXDIMS], strides[GP_MAXDIMS];
    if (in->materialized)
        memcpy(bs, in->strides, sizeof bs);
    else
        gp_node_buffer_strides(in, bs);
    int last = in->nd - 1;
    for (int d = 0; d < root->nd; d++)
        strides[d] = d < last ? bs[d] : 0;
    if (in->materialized)
        return gp_node_leaf(in->dtype, root->nd, root->shape, strides, in->data + j * bs[last], in->buf);
    /* not priced: the element views of a short row replace one reduction
     * kernel's pass over the same subgraph, each element computed once */
    return pending_view(in, j * bs[last], root->nd, root->shape, strides, 0);
}

static int numpy_inner_axis(const GpNode *root);

/* A reduction over a short last axis (n <= 16: distances over 8 features)
 * as one map over the kept dims, the n elements of each row combined in
 * the kernel's own order -- for a float sum NumPy's pairwise leaf
 * (sequential from -0.0 below 8 elements; eight accumulators combined
 * ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) and the remainder in order from 8),
 * then the identity in front as gp_run_reduce stores it; for the others a
 * fold from the identity.  Bit-identical to the map-reduce kernel, without
 * one kernel call per row.  GP_EUNSUPPORTED when it does not apply. */
static GpStatus unroll_short_reduce(GpNode *root)
{
    GpNode *in = root->in[0];
    int64_t n = in->nd ? in->shape[in->nd - 1] : 0;
    GpOp op = root->op;
    if (in->nd < 2 || root->reduce_mask != 1ull << (in->nd - 1) || n < 2 || n > 16 || in->dtype != root->dtype ||
        !(op == GP_OP_SUM || op == GP_OP_PROD || op == GP_OP_MIN || op == GP_OP_MAX) || root->dtype == GP_BOOL ||
        gp_node_size(root) < 4096)
        return GP_EUNSUPPORTED;
    if (!in->materialized && (gp_op_kind[in->op] != GP_KIND_MAP || in->out_view))
        return GP_EUNSUPPORTED;
    if (numpy_inner_axis(root) != in->nd - 1)
        return GP_EUNSUPPORTED; /* NumPy accumulates row by row: the outer reduction's order */
    GpNode *v[16] = {NULL};
    GpStatus st = GP_EUNSUPPORTED; /* a view that cannot be made: the reduction kernel does it */
    for (int64_t j = 0; j < n; j++)
        if (!(v[j] = last_axis_element(in, root, j)))
            goto done;
    st = GP_ENOMEM;
    GpOp comb = op == GP_OP_SUM    ? GP_OP_ADD
                : op == GP_OP_PROD ? GP_OP_MULTIPLY
                : op == GP_OP_MIN  ? GP_OP_MINIMUM
                                   : GP_OP_MAXIMUM;
    GpDType t = root->dtype;
    int pw = op == GP_OP_SUM && gp_dtype_is_float(t);
    GpScalar idv = gp_reduce_identity(op, t);
    GpNode *acc = NULL;
#define COMBINE2(dst, x, y)                                                             \
    do {                                                                                \
        GpNode *xy_[2] = {(x), (y)};                                                    \
        GpNode *r_ = gp_node_map(comb, t, 2, xy_, root->nd, root->shape);               \
        gp_node_decref(xy_[0]);                                                         \
        gp_node_decref(xy_[1]);                                                         \
        if (r_)                                                                         \
            r_->errstate = 0; /* the reduction's warnings are the root's (replay_in) */ \
        (dst) = r_;                                                                     \
        if (!r_)                                                                        \
            goto done;                                                                  \
    } while (0)
    if (pw && n >= 8) {
        GpNode *r[8];
        for (int q = 0; q < 8; q++)
            r[q] = v[q], v[q] = NULL;
        int64_t nblk = n - n % 8;
        for (int64_t i = 8; i < nblk; i += 8)
            for (int q = 0; q < 8; q++) {
                GpNode *x = v[i + q];
                v[i + q] = NULL;
                COMBINE2(r[q], r[q], x);
            }
        GpNode *s01, *s23, *s45, *s67, *lo, *hi;
        COMBINE2(s01, r[0], r[1]);
        COMBINE2(s23, r[2], r[3]);
        COMBINE2(s45, r[4], r[5]);
        COMBINE2(s67, r[6], r[7]);
        COMBINE2(lo, s01, s23);
        COMBINE2(hi, s45, s67);
        COMBINE2(acc, lo, hi);
        for (int64_t i = nblk; i < n; i++) {
            GpNode *x = v[i];
            v[i] = NULL;
            COMBINE2(acc, acc, x);
        }
    } else {
        GpScalar start = idv;
        if (pw) {
            if (t == GP_FLOAT32)
                start.f32 = -0.0f;
            else
                start.f = -0.0;
        }
        if (!(acc = gp_node_const(t, start)))
            goto done;
        for (int64_t i = 0; i < n; i++) {
            GpNode *x = v[i];
            v[i] = NULL;
            COMBINE2(acc, acc, x);
        }
    }
    /* store_result: the identity combined with the row's value */
    GpNode *id = gp_node_const(t, idv);
    if (!id) {
        gp_node_decref(acc);
        goto done;
    }
    GpNode *fin[2] = {id, acc};
    gp_node_rewrite_as_map(root, comb, 2, fin);
    gp_node_decref(id);
    gp_node_decref(acc);
#undef COMBINE2
    st = materialize_map(root);
done:
    for (int j = 0; j < 16; j++)
        if (v[j])
            gp_node_decref(v[j]);
    return st;
}

/* The innermost axis of n that is longer than 1 (the last one if none):
 * the axis a reduction's memory order is decided by, as in NumPy, whose
 * iterator drops length-1 axes.  A reduction that keeps the trailing
 * length-1 axis of an (n, 1) input reduces its innermost real axis. */
static int innermost_axis(const GpNode *n)
{
    for (int d = n->nd - 1; d > 0; d--)
        if (n->shape[d] != 1)
            return d;
    return n->nd ? 0 : -1;
}

/* The input dim NumPy's reduction loop runs innermost: the last of the
 * order its iterator visits the input's dims in (GpNode.in_order) that
 * is longer than 1, else innermost_axis.  A reduced one is summed
 * pairwise along it (NumPy's binary reduce loop); a kept one makes each
 * element accumulate in the order of the others, row by row. */
static int numpy_inner_axis(const GpNode *root)
{
    const GpNode *in = root->in[0];
    if (root->has_in_order)
        for (int i = in->nd - 1; i >= 0; i--)
            if (in->shape[root->in_order[i]] != 1)
                return root->in_order[i];
    return innermost_axis(in);
}

/* Whether NumPy's inner dim of reduction root (numpy_inner_axis) is a
 * reduced one and the dim its iterator visits just outside it (longer
 * than 1) a kept one: then NumPy sums pairwise along the inner dim and
 * adds each such sum to the element in order, around the kept dim --
 * the inner reduction, then an outer one (x.sum(axis=(0, 2)) of a C
 * array is x.sum(axis=2).sum(axis=0), bit for bit).  Not a product:
 * NumPy's inner loop multiplies on from the element's running value, one
 * chain over both dims, which two reductions would round otherwise. */
static int inner_reduced_alone(const GpNode *root)
{
    const GpNode *in = root->in[0];
    int inner = numpy_inner_axis(root), seen = 0;
    if (!(root->reduce_mask >> inner & 1))
        return 0;
    for (int i = in->nd - 1; i >= 0; i--) {
        int d = root->has_in_order ? root->in_order[i] : i;
        if (in->shape[d] == 1)
            continue;
        if (seen)
            return !(root->reduce_mask >> d & 1);
        seen = d == inner;
    }
    return 0;
}

static GpStatus materialize_reduce(GpNode *root);

/* Reduction root as NumPy orders it when its inner dim is reduced alone
 * (inner_reduced_alone): that dim reduced first (pairwise, a kernel of
 * its own), then root over the result, whose inner dim is now a kept one
 * (an outer reduction: in order). */
static GpStatus reduce_inner_first(GpNode *root)
{
    GpNode *r1 = gp_node_reduce_inner_first(root, numpy_inner_axis(root));
    if (!r1)
        return GP_ENOMEM;
    GpStatus st = gp_node_materialize_locked(r1);
    if (st != GP_OK || root->materialized)
        return st;
    return materialize_reduce(root);
}

/* The iteration of reduction root's plan pl (its input collected):
 * kept dims first (in the order of the result's layout: the kernel writes
 * the result in it),
 * then the reduced dims in the order NumPy visits them (with_order: the
 * run's innermost is the one its pairwise loop sums along; never for an
 * arg-reduction, whose index counts the reduced dims in logical order:
 * np.argmax(x, axis=None) of a transposed x, fuzz case 729003760), each group
 * collapsed into pl->args; *nd dims in all, *kept_nd of them kept.  0, or
 * -1 when out of memory. */
static int reduce_iteration(Plan *pl, const GpNode *root, int with_order, int *nd, int *kept_nd)
{
    int perm[GP_MAXDIMS], nk = 0, nr = 0;
    int64_t ost[GP_MAXDIMS];
    reduce_out_strides(root, ost);
    for (int d = 0; d < pl->nd; d++) {
        if (root->reduce_mask >> d & 1)
            continue;
        /* by the result's layout, slowest first: the kernel writes the
         * result densely in its iteration order (NumPy's layout, not C's,
         * when GpNode.perm says so) */
        int k = nk++;
        while (k > 0 && ost[perm[k - 1]] < ost[d]) {
            perm[k] = perm[k - 1];
            k--;
        }
        perm[k] = d;
    }
    for (int i = 0; i < pl->nd; i++) {
        int d = root->has_in_order && with_order ? root->in_order[i] : i;
        if (root->reduce_mask >> d & 1)
            perm[nk + nr++] = d;
    }
    Plan *q = calloc(1, sizeof *q);
    if (!q)
        return -1;
    q->nd = pl->nd;
    for (int d = 0; d < pl->nd; d++) {
        q->shape[d] = pl->shape[perm[d]];
        for (int k = 0; k < pl->prog.noperands; k++)
            q->strides[k][d] = pl->strides[k][perm[d]];
    }
    *nd = 0;
    collapse_group(q, 0, nk, pl->prog.noperands, pl->args.shape, pl->args.strides, nd);
    *kept_nd = *nd;
    collapse_group(q, nk, q->nd, pl->prog.noperands, pl->args.shape, pl->args.strides, nd);
    free(q);
    return 0;
}

/* A copy of reduction root's input in (a new reference, or NULL): in
 * NumPy's order (root's in_order, *in_order set) when asked for, and it
 * is not the logical order, else C-contiguous. */
static GpNode *reduce_copy(const GpNode *root, GpNode *in, int in_numpy_order, int *in_order)
{
    GpNode *copy = gp_node_map(GP_OP_CAST, in->dtype, 1, &in, in->nd, in->shape);
    *in_order = 0;
    if (copy && in_numpy_order && root->has_in_order) {
        int perm[GP_MAXDIMS];
        for (int d = 0; d < in->nd; d++)
            perm[d] = root->in_order[d];
        gp_node_set_perm(copy, perm);
        *in_order = 1;
    }
    return copy;
}

static GpStatus materialize_reduce(GpNode *root)
{
    GpStatus ust = unroll_short_reduce(root);
    if (ust != GP_EUNSUPPORTED)
        return ust;
    if (!gp_op_is_arg(root->op) && root->in[0]->nd >= 2 && !(root->reduce_mask >> numpy_inner_axis(root) & 1) &&
        (root->in[0]->materialized || gp_op_kind[root->in[0]->op] == GP_KIND_MAP))
        return materialize_outer_reduce(root);
    GpNode *in = root->in[0];
    Plan *pl = NULL;
    GpStatus st = GP_OK;
    GpNode *copy = NULL;   /* owned: a copy of the input, if needed */
    int copy_in_order = 0; /* copy is laid out in NumPy's order (in_order), else C-contiguous */
    for (int attempt = 0;; attempt++) {
        if (!in->materialized && gp_op_kind[in->op] != GP_KIND_MAP) {
            if ((st = gp_node_materialize_locked(in)) != GP_OK)
                goto done;
            if (root->materialized) /* computed with its input (a flush) */
                goto done;
        }
        free(pl);
        pl = calloc(1, sizeof *pl);
        if (!pl) {
            st = GP_ENOMEM;
            goto done;
        }
        pl->root_in = -1;
        int r;
        if ((st = collect_reduced_input(pl, in, GP_KIND_REDUCE, &r)) != GP_OK || root->materialized)
            goto done; /* materialized: computed with its input (a flush) */
        pl->prog.root = (int16_t)r;
        int nd = 0, kept_nd = 0;
        if (reduce_iteration(pl, root, (!copy || copy_in_order) && !gp_op_is_arg(root->op), &nd, &kept_nd) != 0) {
            st = GP_ENOMEM;
            goto done;
        }
        if (nd - kept_nd != 1 && !copy && root->op == GP_OP_SUM && !reduce_order_free(root->op, root->dtype) &&
            inner_reduced_alone(root)) {
            /* NumPy's order as two reductions: its innermost dim first */
            free(pl);
            pl = NULL;
            st = reduce_inner_first(root);
            goto done;
        }
        if (nd - kept_nd != 1) {
            /* the reduced axes do not form one run of memory: reduce a
             * C-contiguous copy of the input instead -- when the order
             * does not matter.  NumPy sums such a float input pairwise
             * along its innermost reduced dim and accumulates the others
             * in order (x.T[::-1].sum(axis=(0, 1)), the (0, 1) sum of a
             * (n, 4, 5) transpose), which one pairwise run over a copy
             * does not reproduce: NumPy computes it (a plan failure).
             * Where NumPy's array is one run (reduced_run: a gather's
             * plan does not collapse, its array does) a copy laid out as
             * that array (in NumPy's order, not C's: a kept dim logically
             * after the run would be innermost in a C copy, and the run
             * accumulated in order where NumPy sums it pairwise) is one
             * run too, summed as NumPy sums it */
            int order_free = reduce_order_free(root->op, root->dtype);
            if (attempt > 0 || copy || (!order_free && !root->reduced_run)) {
                st = GP_EUNSUPPORTED;
                gp_set_error("reduction axes not collapsible");
                goto done;
            }
            copy = reduce_copy(root, in, !order_free, &copy_in_order);
            if (!copy || (st = gp_node_materialize_locked(copy)) != GP_OK) {
                st = copy ? st : GP_ENOMEM;
                goto done;
            }
            in = copy;
            continue;
        }
        pl->args.nd = nd;
        break;
    }
    set_layouts(pl);
    pl->prog.reduce_op = (uint8_t)root->op;
    int last_reduced =
        in->nd > 0 &&
        (int)(root->reduce_mask >> (copy && !copy_in_order ? innermost_axis(in) : numpy_inner_axis(root)) & 1);
    pl->prog.pairwise = (uint8_t)(root->op == GP_OP_SUM && gp_dtype_is_float(root->dtype) && last_reduced);
    if ((st = gp_node_ensure_buffer(root)) != GP_OK)
        goto done;
    if (gp_op_is_arg(root->op)) /* the index counts along the reduced axis only */
        pl->prog.pairwise = 0;
    pl->outputs[pl->noutputs++] = root;
    pl->bytes += gp_node_size(root) * (int64_t)gp_dtype_size(root->dtype);
    int arg = gp_op_is_arg(root->op);
    GpLaunch l = {.kind = arg ? GP_LAUNCH_ARGREDUCE : GP_LAUNCH_REDUCE,
                  .op = root->op,
                  .dtype = arg ? in->dtype : root->dtype,
                  .order_free = reduce_order_free(root->op, root->dtype),
                  .out = root->buf->data};
    st = launch(pl, root, &l);
done:
    free(pl);
    if (copy)
        gp_node_decref(copy);
    return st;
}

static int c_contiguous(const GpNode *n)
{
    int64_t want = (int64_t)gp_dtype_size(n->dtype);
    for (int d = n->nd - 1; d >= 0; d--) {
        if (n->shape[d] != 1 && n->strides[d] != want)
            return 0;
        want *= n->shape[d];
    }
    return 1;
}

/* NumPy's warnings for a product (root, its operands computed, its result
 * staged, not yet marked) whose result holds an infinity or a NaN: NumPy
 * computes it again under its recorded error state (fpe_replay), giving
 * its own warnings or none (a NaN operand raises no flag).  Not in the fault handler (no Python there: counted
 * unreported). */
static void product_fpe(GpNode *root)
{
    if (!host.fpe_replay || gp_guard_in_handler() || gp_guard_on_resolver()) {
        gp_stats.fpe_unreported++;
        return;
    }
    gp_stats.fpe_replays++;
    gp_node_incref(root);
    int depth = gp_lock_release_all(); /* (NumPy may drop the GIL in the replay) */
    host.fpe_replay(&root, 1, NULL, 0, root->errstate & (GP_FPE_OVERFLOW | GP_FPE_INVALID));
    gp_lock_reacquire(depth);
    gp_node_decref(root);
}

/* The library node (Algorithm 1: materialize_pred_of_node): operands are
 * computed first, then OpenBLAS writes the result.  An operand whose layout
 * BLAS cannot take is replaced by a C-contiguous copy (counted). */
static GpStatus library_product(GpNode *root, GpNode *const *operands);

static GpStatus materialize_library(GpNode *root)
{
    GpNode *in[2] = {root->in[0], root->in[1]};
    GpStatus st = GP_OK;
    /* held: computing one operand may compute root (a flush), which
     * releases both */
    gp_node_incref(in[0]);
    gp_node_incref(in[1]);
    for (int i = 0; i < 2 && st == GP_OK; i++)
        if (!in[i]->materialized)
            st = gp_node_materialize_locked(in[i]);
    if (st == GP_OK && !root->materialized)
        st = library_product(root, in);
    gp_node_decref(in[0]);
    gp_node_decref(in[1]);
    return st;
}

/* materialize_library once its operands are computed (held by the caller). */
static GpStatus library_product(GpNode *root, GpNode *const *operands)
{
    GpNode *in[2] = {operands[0], operands[1]}, *copies[2] = {NULL, NULL};
    GpStatus st;
    if ((st = gp_node_ensure_buffer(root)) != GP_OK)
        return st;
    char *out;
    int copy;
    if (stage_for_write(root->buf, &out, &copy, 0) != 0 || (copy && copy_contents(root->buf, out) != 0)) {
        gp_set_error("no memory to stage a product");
        return GP_ENOMEM;
    }
    int64_t t0 = gp_now_ns();
    for (int attempt = 0;; attempt++) {
        GpBlasOperand a = {in[0]->nd, in[0]->shape, in[0]->strides, in[0]->data};
        GpBlasOperand b = {in[1]->nd, in[1]->shape, in[1]->strides, in[1]->data};
        st = gp_backend()->matmul(
            root->dtype, a, b, out,
            gp_node_size(root) * (int64_t)gp_dtype_size(root->dtype) == (int64_t)root->buf->nbytes ? root->buf : NULL);
        if (st != GP_EUNSUPPORTED || attempt > 0)
            break;
        for (int i = 0; i < 2; i++) {
            if (c_contiguous(in[i]))
                continue;
            copies[i] = gp_node_map(GP_OP_CAST, in[i]->dtype, 1, &in[i], in[i]->nd, in[i]->shape);
            if (!copies[i] || (st = gp_node_materialize_locked(copies[i])) != GP_OK) {
                st = copies[i] ? st : GP_ENOMEM;
                goto done;
            }
            in[i] = copies[i];
            gp_stats.blas_operand_copies++;
        }
        if (root->materialized) /* computed while the copies were (the lock was let go) */
            goto done;
    }
done:;
    /* NumPy checks its product's IEEE flags ("overflow encountered in
     * matmul"); BLAS through grumpy gives none: a result with an infinity
     * or a NaN, where the error state watches them, is computed again by
     * NumPy for its warnings (the values stand).  Host results only (a
     * resident back end's may be on its device, the stage unwritten). */
    int nonfinite = st == GP_OK && !root->materialized && (root->errstate & (GP_FPE_OVERFLOW | GP_FPE_INVALID)) &&
                    !gp_backend()->resident && root->buf->where != GP_ON_DEVICE &&
                    gp_blas_any_nonfinite(root->dtype, out, gp_node_size(root)); /* (out: C-ordered, root's shape) */
    if (nonfinite)
        product_fpe(root); /* (before root is marked: the replay computes it) */
    if (st == GP_OK && root->materialized) {
        gp_buffer_unstage(root->buf, out);
    } else if (st == GP_OK) {
        GpBuffer *b = root->buf;
        if (gp_buffer_commit(b, out, result_prot(root)) != 0) {
            gp_buffer_drop_device(b); /* a product the back end left on its device is lost too */
            gp_set_error("a product could not be put in place");
            st = GP_ENOMEM;
        } else {
            gp_node_mark_materialized(root);
            gp_stats.run_ns += gp_now_ns() - t0;
        }
    } else {
        gp_buffer_unstage(root->buf, out);
    }
    for (int i = 0; i < 2; i++)
        if (copies[i])
            gp_node_decref(copies[i]);
    return st;
}

static GpStatus materialize_by_kind(GpNode *n)
{
    return n->materialized                        ? GP_OK
           : gp_op_kind[n->op] == GP_KIND_REDUCE  ? materialize_reduce(n)
           : gp_op_kind[n->op] == GP_KIND_SCAN    ? materialize_scan(n)
           : gp_op_kind[n->op] == GP_KIND_LIBRARY ? materialize_library(n)
                                                  : materialize_map(n);
}

GpStatus gp_node_materialize(GpNode *n)
{
    if (__atomic_load_n(&n->materialized, __ATOMIC_ACQUIRE))
        return GP_OK; /* without the lock: set atomically (gp_node_mark_materialized) */
    gp_lock();
    GpStatus st = gp_node_materialize_locked(n);
    gp_unlock();
    return st;
}

/* materialize_by_kind, with an in-place kernel for a fault computed by
 * NumPy's inner loops (in_place_for_a_fault_needs_loops), or, where they
 * fail, by the kernel after all. */
static GpStatus materialize_or_loops(GpNode *n)
{
    wants_loops = 0;
    GpStatus st = materialize_by_kind(n);
    if (st != GP_OK && wants_loops && !n->materialized) {
        wants_loops = 0;
        st = host.eval_without_gil(n);
        if (st != GP_OK && !n->materialized) {
            int was = loops_failed;
            loops_failed = 1;
            st = materialize_by_kind(n);
            loops_failed = was;
        }
    }
    wants_loops = 0;
    return st;
}

/* n stored by another thread's kernel, which reports its IEEE flags with
 * the lock released and marks it when back (GpNode.completing): computing
 * it again would apply an in-place kernel twice.  Waited for -- not on the
 * reporting thread itself (a warnings hook), nor in the fault handler (the
 * reporter may need the GIL the faulting thread holds): computed as before
 * there.  Core lock held (let go while waiting); the caller holds n. */
static GpStatus wait_for_completion(GpNode *n)
{
    if (!n->completing)
        return GP_OK;
    int64_t t0 = gp_now_ns();
    while (n->completing && !completing_here && !gp_guard_in_handler() && host.let_others_run) {
        if (gp_now_ns() - t0 > 10 * (int64_t)1000000000) {
            /* the reporter may wait for something this thread holds (a
             * Python lock around a warnings hook): an error, not a value
             * computed twice */
            gp_set_error("an array another thread is computing did not complete in 10 s");
            return GP_EUNSUPPORTED;
        }
        int depth = gp_lock_release_all();
        host.let_others_run();
        gp_lock_reacquire(depth);
    }
    return GP_OK;
}

/* fork() while another thread reported a kernel's flags: nobody in the
 * child completes its nodes, so nothing may wait for them there */
static void completing_after_fork_child(void)
{
    for (GpNode *n = gp_dag_pending_first(); n; n = gp_dag_pending_next(n))
        n->completing = 0;
}

GpStatus gp_node_materialize_locked(GpNode *n)
{
    GP_EXPECT_LOCKED();
    gp_node_incref(n);
    if (wait_for_completion(n) != GP_OK) {
        gp_node_decref(n);
        return GP_EUNSUPPORTED;
    }
    if (n->materialized) {
        gp_node_decref(n);
        return GP_OK; /* computed by another thread (a fault) while this one waited */
    }
    /* its inputs too: computing one of them may compute n (an in-place
     * write first computes the readers of the old values), which releases
     * them while the planner still walks them */
    GpNode *held[3] = {NULL, NULL, NULL};
    for (int i = 0; i < n->nin && i < 3; i++)
        if ((held[i] = n->in[i]))
            gp_node_incref(held[i]);
    void *shadow = NULL;
    if (gp_config.shadow_check && host.check_begin && !gp_guard_in_handler()) {
        /* the shadow check: NumPy's value first, while the inputs exist */
        int depth = gp_lock_release_all();
        shadow = host.check_begin(n);
        gp_lock_reacquire(depth);
    }
    /* a value computed by another thread meanwhile is not this kernel's:
     * its memory may have been written since, so it is not compared */
    int compare = shadow && !n->materialized;
    GpStatus st = materialize_or_loops(n);
    if (st == GP_ELIMIT && !n->materialized) {
        /* too large for one kernel (views of views push their producers'
         * subgraphs into every reader): the pending inputs first, each its
         * own kernel (splitting again as needed), then n over them */
        gp_stats.kernel_splits++;
        st = GP_OK;
        for (int i = 0; i < n->nin && st == GP_OK; i++)
            if (n->in[i] && !n->in[i]->materialized && gp_op_kind[n->in[i]->op] != GP_KIND_LEAF)
                st = gp_node_materialize_locked(n->in[i]);
        if (st == GP_OK)
            st = materialize_or_loops(n);
    }
    if (st != GP_OK && !n->materialized) {
        if (st == GP_EDEFER)
            gp_stats.first_numpy += !deferred.for_flags;
        else
            gp_stats.plan_failures++;
        if (gp_config.debug_plan)
            fprintf(stderr, "grumpy plan: %s failed (status %d): %s; NumPy computes it\n", gp_op_name[n->op], (int)st,
                    gp_last_error());
        int no_gil = gp_guard_on_resolver() || gp_guard_in_handler();
        int evaluated = 0;
        if (st == GP_EDEFER && deferred.n > 0) {
            /* the deferred kernel's outputs, in its order, in one NumPy
             * evaluation (a value two of them read is computed once), n
             * among them (else n after them, below) */
            GpNode *outs[GP_MAXOPERANDS];
            int nouts = deferred.n;
            memcpy(outs, deferred.node, (size_t)nouts * sizeof *outs);
            deferred.n = 0;
            for (int i = 0; i < nouts; i++)
                evaluated |= outs[i] == n;
            if (host.eval_with_gil) {
                int depth = gp_lock_release_all();
                GpStatus es = host.eval_with_gil(outs, nouts);
                gp_lock_reacquire(depth);
                if (evaluated)
                    st = n->materialized ? GP_OK : es; /* (computed by another thread meanwhile: OK) */
            }
            for (int i = 0; i < nouts; i++)
                gp_node_decref(outs[i]);
            evaluated &= host.eval_with_gil != NULL;
        }
        if (!evaluated && st != GP_OK && !n->materialized && host.eval_without_gil &&
            (no_gil || gp_config.debug_eval_loops))
            /* never the GIL for a fault: the faulting thread may hold it.
             * NumPy's inner loops, called without Python */
            st = host.eval_without_gil(n);
        if (!evaluated && st != GP_OK && !n->materialized && host.eval_with_gil && !no_gil) {
            /* the evaluator takes the GIL: never wait for it holding the core lock */
            int depth = gp_lock_release_all();
            st = host.eval_with_gil(&n, 1);
            gp_lock_reacquire(depth);
        }
        if (st != GP_OK && n->materialized)
            st = GP_OK; /* computed by another thread (a fault) while the lock was let go */
    }
    if (shadow) {
        int depth = gp_lock_release_all();
        host.check_end(n, shadow, compare);
        gp_lock_reacquire(depth);
    }
    for (int i = 0; i < 3; i++)
        if (held[i])
            gp_node_decref(held[i]);
    gp_node_decref(n);
    return st;
}

static GpStatus dag_flush(void);

GpStatus gp_buffer_compute_locked(GpBuffer *b)
{
    GP_EXPECT_LOCKED();
    GpNode *n = b->producer; /* read under the lock: a fault may compute it */
    GpStatus st = GP_OK;
    if (n) {
        gp_node_incref(n);
        st = gp_node_materialize_locked(n);
        gp_node_decref(n);
    }
    return st;
}

GpStatus gp_buffer_materialize_locked(GpBuffer *b)
{
    GpStatus st = gp_buffer_compute_locked(b);
    if (st == GP_OK && b->where == GP_ON_DEVICE && gp_buffer_to_host(b) != 0) {
        gp_set_error("no memory to copy a device result to the host");
        st = GP_ENOMEM;
    }
    return st;
}

GpStatus gp_buffer_materialize(GpBuffer *b)
{
    gp_lock();
    GpStatus st = gp_buffer_materialize_locked(b);
    gp_unlock();
    return st;
}

GpStatus gp_buffer_prepare_write(GpBuffer *b)
{
    gp_lock();
    GpStatus st = gp_buffer_materialize_locked(b);
    if (st == GP_OK && b->nreaders > 0)
        st = dag_flush();
    if (st == GP_OK && !b->producer && b->nreaders == 0) {
        gp_buffer_drop_device(b);
        gp_buffer_open_for_write(b);
    }
    gp_unlock();
    return st;
}

/* Whether op's values depend on who computes them: a transcendental or a
 * power of floats rounds as its implementation does (libmvec in a CPU
 * kernel, libdevice on a GPU, NumPy's own loops in the evaluator), within
 * the contract's ULPs of one another (DESIGN.md section 4) but not
 * bit-identical.  The other ops are IEEE operations, comparisons and
 * integer arithmetic: the same bits wherever they run. */
static int op_is_transcendental(GpOp op, GpDType t)
{
    switch (op) {
    case GP_OP_POWER: return gp_dtype_is_float(t);
    case GP_OP_CBRT:
    case GP_OP_EXP:
    case GP_OP_EXP2:
    case GP_OP_EXPM1:
    case GP_OP_LOG:
    case GP_OP_LOG2:
    case GP_OP_LOG10:
    case GP_OP_LOG1P:
    case GP_OP_SIN:
    case GP_OP_COS:
    case GP_OP_TAN:
    case GP_OP_ARCSIN:
    case GP_OP_ARCCOS:
    case GP_OP_ARCTAN:
    case GP_OP_SINH:
    case GP_OP_COSH:
    case GP_OP_TANH:
    case GP_OP_ARCSINH:
    case GP_OP_ARCCOSH:
    case GP_OP_ARCTANH:
    case GP_OP_ARCTAN2:
    case GP_OP_HYPOT: return 1;
    default: return 0;
    }
}

/* Weighted operations per element of pending map n's subgraph, counting
 * each node once per path (a shared node is counted again: it is cloned
 * again by a view), up to `budget`: a transcendental or a power weighs
 * 16, a division, remainder or square root 4, any other op 1. */
static int recompute_cost(const GpNode *n, int budget)
{
    if (n->materialized || gp_op_kind[n->op] != GP_KIND_MAP || budget <= 0)
        return 0;
    int w;
    switch (n->op) {
    case GP_OP_POWER: w = 16; break;
    case GP_OP_TRUE_DIVIDE:
    case GP_OP_FLOOR_DIVIDE:
    case GP_OP_REMAINDER:
    case GP_OP_FMOD:
    case GP_OP_SQRT:
    case GP_OP_RECIPROCAL: w = 4; break;
    default: w = op_is_transcendental(n->op, n->dtype) ? 16 : 1;
    }
    for (int i = 0; i < n->nin && w < budget; i++)
        w += recompute_cost(n->in[i], budget - w);
    return w;
}

/* The distinct nodes clones_transcendental has visited, with whether
 * through a shared node; more than fit count as a transcendental. */
#define CLONE_SCAN_MAX 256
typedef struct {
    const GpNode *node[CLONE_SCAN_MAX];
    unsigned char shared[CLONE_SCAN_MAX];
    int n;
} CloneScan;

/* Whether pending map n's subgraph (the part a view would clone, down to
 * computed nodes) holds a transcendental (op_is_transcendental) whose
 * values are computed elsewhere too: shared (set by the caller, or on the
 * path from n by a node with its own array or another reader, which is
 * computed on its own).  Each node is visited once per `shared` value. */
static int clones_transcendental(const GpNode *n, int shared, CloneScan *scan)
{
    if (n->materialized || gp_op_kind[n->op] != GP_KIND_MAP)
        return 0;
    shared |= (n->buf && n->buf->owner == n) || n->nusers > 1;
    for (int i = 0; i < scan->n; i++)
        if (scan->node[i] == n && scan->shared[i] >= shared)
            return 0; /* (seen with as much sharing: its inputs too) */
    if (scan->n == CLONE_SCAN_MAX)
        return 1;
    scan->node[scan->n] = n;
    scan->shared[scan->n++] = (unsigned char)shared;
    if (shared && op_is_transcendental(n->op, n->dtype))
        return 1;
    for (int i = 0; i < n->nin; i++)
        if (clones_transcendental(n->in[i], shared, scan))
            return 1;
    return 0;
}

/* A view pushed into a pending producer's expression (gp_node_view)
 * recomputes the producer's subgraph for the view's elements: one view
 * costs nothing extra, but each further view of the same node -- a
 * stencil's taps, lum[:-2, 2:] + 2 * lum[1:-1, 2:] + ... -- computes it
 * again per element.  Recomputation is priced (issue "never slower"):
 * when the producer weighs VIEW_RECOMPUTE_MAX or more (recompute_cost), a
 * second view computes it once and its views read memory (NULL here: the
 * hooks compute n and view its buffer).  Sobel over an sRGB-decoded
 * luminance with a power per channel ran 12 copies of it: 0.1-0.2x
 * NumPy's speed (tools/programs/sobel_gamma.py). */
#define VIEW_RECOMPUTE_MAX 16

/* A copy of pending n's subgraph made by the DAG (gp_node_view,
 * gp_node_rolled: fn), computing first each node it asks for: a few
 * rounds at most.  New reference or NULL. */
typedef GpNode *(*CopyFn)(GpNode *n, const void *arg, GpNode **need);

static GpNode *copy_computing_needs(GpNode *n, CopyFn fn, const void *arg)
{
    gp_node_incref(n);
    GpNode *v = NULL;
    for (int round = 0; round < 64 && !n->materialized; round++) {
        GpNode *need = NULL;
        v = fn(n, arg, &need);
        if (v || !need)
            break;
        GpStatus st = gp_node_materialize_locked(need);
        gp_node_decref(need);
        if (st != GP_OK)
            break;
    }
    gp_node_decref(n);
    return v;
}

typedef struct {
    int64_t offset;
    int nd;
    const int64_t *shape, *strides;
} ViewArgs;

static GpNode *view_copy(GpNode *n, const void *arg, GpNode **need)
{
    const ViewArgs *a = arg;
    return gp_node_view(n, a->offset, a->nd, a->shape, a->strides, need);
}

static GpNode *rolled_copy(GpNode *n, const void *arg, GpNode **need) { return gp_node_rolled(n, arg, need); }

/* np.roll of a pending map pushed into its subgraph (gp_node_rolled)
 * recomputes the subgraph once per roll: a stencil rolls its operand
 * four or eight times.  So only a producer that weighs less than
 * VIEW_RECOMPUTE_MAX (recompute_cost) and computes no transcendental
 * (whose bits could differ from n's own array's, clones_transcendental)
 * is rolled so, and none that reads rolls itself: a roll of a stencil's
 * pending result (laplace_roll.py's u = np.where(interior, avg, u), each
 * iteration rolling the last) would compute each element of the last
 * iteration five times, over 25 rolled leaves, in boxes cut at shifts of
 * one and two: 80 iterations over 1024^2 float32 took 0.083 s
 * against 0.052-0.059 s computing each u first.  NULL otherwise (the caller
 * computes n and rolls its memory).  A roll of the fluxes hu * u + 0.5 * g * h * h of
 * tools/programs/shallow_water.py had been a kernel of seven outputs a
 * step before the stencil's. */
GpNode *gp_pending_rolled_locked(GpNode *n, const int64_t *shift)
{
    GP_EXPECT_LOCKED();
    int budget = 4 * GP_MAXINSTR;
    if (n->materialized || gp_op_kind[n->op] != GP_KIND_MAP ||
        recompute_cost(n, VIEW_RECOMPUTE_MAX) >= VIEW_RECOMPUTE_MAX ||
        fused_reads_wrapped(n, n->nd, n->shape, &budget) != 0)
        return NULL;
    CloneScan *scan = malloc(sizeof *scan);
    int costly = !scan || (scan->n = 0, clones_transcendental(n, 1, scan));
    free(scan);
    return costly ? NULL : copy_computing_needs(n, rolled_copy, shift);
}

static GpNode *pending_view(GpNode *n, int64_t offset, int nd, const int64_t *shape, const int64_t *strides, int priced)
{
    GP_EXPECT_LOCKED();
    if (priced && n->viewed && !n->materialized && recompute_cost(n, VIEW_RECOMPUTE_MAX) >= VIEW_RECOMPUTE_MAX) {
        gp_stats.views_materialized++;
        return NULL;
    }
    /* A clone computes n's elements again, perhaps elsewhere: in a kernel
     * while n itself is NumPy's (a first launch, a failed plan) or the
     * GPU's.  A transcendental's bits differ between the two, and NumPy's
     * program, which computed n once, sees one value per element: v - v
     * for v = cos(x).T is 0 there.  So a view of a transcendental is read
     * from n's memory -- always for the program's views (their base keeps
     * n's array: it may be read again), and for the planner's own (a short
     * row's elements: NULL makes it a reduction kernel, which computes n
     * once) when the transcendental or a node between it and n is computed
     * on its own (clones_transcendental). */
    CloneScan *scan = n->materialized ? NULL : malloc(sizeof *scan);
    if (!n->materialized && (!scan || (scan->n = 0, clones_transcendental(n, priced, scan)))) {
        free(scan);
        gp_stats.views_materialized += priced;
        return NULL;
    }
    free(scan);
    ViewArgs a = {offset, nd, shape, strides};
    return copy_computing_needs(n, view_copy, &a);
}

GpNode *gp_pending_view_locked(GpNode *n, int64_t offset, int nd, const int64_t *shape, const int64_t *strides)
{
    return pending_view(n, offset, nd, shape, strides, 1);
}

GpNode *gp_pending_view(GpNode *n, int64_t offset, int nd, const int64_t *shape, const int64_t *strides)
{
    gp_lock();
    GpNode *v = gp_pending_view_locked(n, offset, nd, shape, strides);
    gp_unlock();
    return v;
}

void gp_node_release(GpNode *n)
{
    if (!n)
        return;
    gp_lock();
    gp_node_decref(n);
    gp_unlock();
}

GpNode *gp_record_map(GpOp op, GpDType t, int nin, GpNode *const *in, int nd, const int64_t *shape)
{
    gp_lock();
    GpNode *n = gp_node_map(op, t, nin, in, nd, shape);
    gp_unlock();
    return n;
}

static GpStatus dag_flush(void)
{
    GpStatus st = GP_OK;
    gp_stats.flushes++;
    for (;;) {
        GpNode *n = gp_dag_pending_first();
        while (n && !n->buf)
            n = gp_dag_pending_next(n);
        if (!n)
            break;
        if ((st = gp_node_materialize_locked(n)) != GP_OK)
            break;
    }
    return st;
}

GpStatus gp_dag_flush(void)
{
    gp_lock();
    GpStatus st = dag_flush();
    gp_unlock();
    return st;
}

/* The guard's resolver: makes every access to b legal (computes its
 * producer; a device result is copied to the host, read-only; before a
 * write, the pending readers of its old values, and a device copy is
 * dropped).  A fault on a readable buffer is a write; a write to a device
 * result faults twice (copy, then write). */
static void resolve(GpBuffer *b)
{
    if (b->producer)
        gp_node_materialize_locked(b->producer);
    if (b->where == GP_ON_DEVICE) {
        gp_buffer_to_host(b);
        return;
    }
    if (b->nreaders > 0)
        dag_flush();
    if (!b->producer && b->nreaders == 0) {
        gp_buffer_drop_device(b);
        gp_buffer_open_for_write(b); /* a write to a sticky read-only buffer */
    }
}

int gp_node_reads_buffer(const GpNode *x, const GpBuffer *b, int *budget)
{
    if (--*budget < 0)
        return 1;
    if (x->materialized)
        return b ? x->buf == b : x->buf && x->buf->producer != NULL;
    for (int i = 0; i < x->nin; i++)
        if (x->in[i] && gp_node_reads_buffer(x->in[i], b, budget))
            return 1;
    return 0;
}

void gp_copy_strided(char *dst, const int64_t *strides, int nd, const int64_t *shape, const char *src, size_t elsize)
{
    int64_t total = 1, idx[GP_MAXDIMS] = {0}, want = (int64_t)elsize;
    int contiguous = 1;
    for (int d = nd - 1; d >= 0; d--) {
        contiguous &= shape[d] == 1 || strides[d] == want;
        want *= shape[d];
        total *= shape[d];
    }
    if (contiguous) {
        memcpy(dst, src, (size_t)total * elsize);
        return;
    }
    for (int64_t i = 0; i < total; i++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++)
            off += idx[d] * strides[d];
        memcpy(dst + off, src + i * (int64_t)elsize, elsize);
        for (int d = nd - 1; d >= 0 && ++idx[d] == shape[d]; d--)
            idx[d] = 0;
    }
}

/* The buffer holding materialized leaf x's memory when a pending in-place
 * write made it inaccessible (read_inaccessible_leaves: a kernel split's
 * or an evaluator's read of the values from before the write), else NULL.
 * Core lock held. */
static GpBuffer *unreadable_buffer(const GpNode *x)
{
    if (!x->buf || !x->buf->writer || x->buf->writer->materialized || x->op == GP_OP_CONST)
        return NULL;
    GpBuffer *b = gp_buffer_lookup(x->data);
    return host_inaccessible(b) ? b : NULL;
}

int gp_leaf_unreadable(const GpNode *x)
{
    int held = gp_lock_held();
    if (!held)
        gp_lock();
    int r = unreadable_buffer(x) != NULL;
    if (!held)
        gp_unlock();
    return r;
}

GpStatus gp_leaf_copy(const GpNode *x, char *dst, const int64_t *dst_strides)
{
    static const int64_t none[GP_MAXDIMS];
    const int64_t *wrap = x->wrap ? x->wrap : none;
    size_t elsize = gp_dtype_size(x->dtype);
    GpBoxes *bx = malloc(sizeof *bx);
    int64_t start[GP_MAXDIMS], len[GP_MAXDIMS], idx[GP_MAXDIMS];
    if (!bx) {
        gp_set_error("no memory to copy a rolled array");
        return GP_ENOMEM;
    }
    /* memory a pending in-place write made inaccessible: read from a
     * private copy of its buffer */
    int held = gp_lock_held();
    if (!held)
        gp_lock();
    GpBuffer *b = unreadable_buffer(x);
    char *contents = b ? malloc(b->mapped) : NULL;
    int failed = b && (!contents || gp_buffer_read_contents(b, contents) != 0);
    const char *base = contents ? contents + (x->data - b->data) : x->data;
    if (!held)
        gp_unlock();
    if (failed) {
        free(contents);
        free(bx);
        gp_set_error("no memory to copy a leaf's inaccessible buffer");
        return GP_ENOMEM;
    }
    gp_boxes_init(bx, x->nd, x->shape);
    gp_boxes_add_wrap(bx, wrap); /* one operand: one cut per dim */
    while (gp_boxes_next(bx, start, len)) {
        const char *src = base;
        char *out = dst;
        int64_t total = 1;
        for (int d = 0; d < x->nd; d++) {
            int64_t i = start[d] + wrap[d];
            src += (i >= x->shape[d] ? i - x->shape[d] : i) * x->strides[d];
            out += start[d] * dst_strides[d];
            total *= len[d];
            idx[d] = 0;
        }
        for (int64_t e = 0; e < total; e++) {
            int64_t si = 0, di = 0;
            for (int d = 0; d < x->nd; d++) {
                si += idx[d] * x->strides[d];
                di += idx[d] * dst_strides[d];
            }
            memcpy(out + di, src + si, elsize);
            for (int d = x->nd - 1; d >= 0 && ++idx[d] == len[d]; d--)
                idx[d] = 0;
        }
    }
    free(bx);
    free(contents);
    return GP_OK;
}

/* gp_node_inputs_ready's walk (each node once per walk, held while its
 * inputs are walked: computing one may compute x, which releases them):
 * 1 when computing something failed.  Past the budget the rest is left to
 * the faults it may take. */
static int inputs_ready(GpNode *root, GpNode *x, int *budget)
{
    if (root->materialized || --*budget < 0 || x->mark == epoch)
        return 0;
    x->mark = epoch;
    if (x->materialized) {
        GpNode *p = x->buf ? x->buf->producer : NULL;
        /* (not a pending in-place write of x's own memory: x holds the
         * values from before it, which root may be computing a part of --
         * an in-place chain computed in parts; the evaluators read them
         * through gp_leaf_copy, gp_leaf_unreadable) */
        return p && p != root && p != x->buf->writer && !p->materialized && gp_node_materialize_locked(p) != GP_OK;
    }
    int failed = 0;
    gp_node_incref(x);
    for (int i = 0; i <= x->nin && !failed && !x->materialized && !root->materialized; i++) {
        GpNode *in = i < x->nin ? x->in[i] : x->replay_in; /* a reduction rewritten as a map reads replay_in */
        if (in)
            failed = inputs_ready(root, in, budget);
    }
    gp_node_decref(x);
    return failed;
}

GpStatus gp_node_inputs_ready(GpNode *n)
{
    GP_EXPECT_LOCKED();
    gp_node_incref(n);
    epoch++;
    int budget = 1 << 16;
    GpStatus st = n->materialized || !inputs_ready(n, n, &budget) ? GP_OK : GP_EUNSUPPORTED;
    gp_node_decref(n);
    return st;
}

GpStatus gp_node_prepare_store(GpNode *n)
{
    GP_EXPECT_LOCKED();
    GpStatus st = n->materialized ? GP_OK : gp_node_ensure_buffer(n);
    int budget = 4096;
    if (st == GP_OK && !n->materialized && gp_node_reads_buffer(n, n->buf, &budget))
        gp_buffer_open_for_write(n->buf);
    return st;
}

void gp_node_abandon_store(GpNode *n)
{
    GP_EXPECT_LOCKED();
    if (!n->materialized && n->buf)
        gp_buffer_sync_prot(n->buf); /* pending again: inaccessible, so a reader faults and waits */
}

GpStatus gp_node_store(GpNode *n, const char *values)
{
    GP_EXPECT_LOCKED();
    GpStatus st = GP_ENOMEM;
    GpBuffer *b = n->buf;
    char *stage;
    int copy = 0;
    if (n->materialized) {
        st = GP_OK; /* another thread computed it meanwhile */
    } else if (b && stage_for_write(b, &stage, &copy, 0) == 0) {
        if (copy && gp_buffer_read_old(b, 0, stage, b->nbytes) != 0) {
            gp_buffer_unstage(b, stage);
        } else {
            gp_stats.stage_copy_bytes += copy ? (int64_t)b->nbytes : 0;
            int64_t own[GP_MAXDIMS];
            gp_node_buffer_strides(n, own);
            char *first = n->out_view ? n->out_data : b->data;
            gp_copy_strided(stage + (first - b->data), n->out_view ? n->out_strides : own, n->nd, n->shape, values,
                            gp_dtype_size(n->dtype));
            if (gp_buffer_commit(b, stage, result_prot(n)) == 0) {
                gp_node_mark_materialized(n);
                st = GP_OK;
            }
        }
    }
    if (st != GP_OK)
        gp_set_error("no memory to store a computed value");
    return st;
}

static const GpBackend *backend = &gp_backend_cpu;

const GpBackend *gp_backend(void) { return backend; }
void gp_backend_set(const GpBackend *b) { backend = b ? b : &gp_backend_cpu; }

static void register_completing_fork(void) { pthread_atfork(NULL, NULL, completing_after_fork_child); }

static void prepare_backend(void)
{
    if (backend->prepare)
        backend->prepare();
}

void gp_core_init(const GpHostCallbacks *callbacks)
{
    if (callbacks)
        host = *callbacks;
    /* pthread_atfork runs prepare handlers last-registered first: the core
     * lock, then the guard's (the lock order) */
    gp_jit_init_fork(); /* its prepare handler runs last: after the core lock's */
    gp_guard_init_fork();
    gp_lock_init_fork();
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_completing_fork);
    gp_guard_resolve = resolve;
    gp_guard_before_first_fault = prepare_backend;
}
