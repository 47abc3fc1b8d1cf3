/* core/dag.c -- recording nodes, reference counts and reader accounting.
 *
 * Invariants (checked by tests/c/test_core.c: test_listing1, test_guard_read):
 *  1. buf->producer is the pending node that will write buf, else NULL.
 *  2. buf->nreaders counts, over all pending nodes P and input edges P->X
 *     where X is materialized, the edges whose X->buf is buf.
 *  3. A pending node is on the pending list; a materialized one is not.
 * guard.c turns (1) and (2) into page protection.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "dag.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The pending list, for the process; under the core lock. */
static struct {
    GpNode pending_head; /* sentinel of the circular list of pending nodes */
    int64_t pending_count;
} S = {.pending_head = {.prev = &S.pending_head, .next = &S.pending_head}};

int64_t gp_dag_pending_count(void) { return S.pending_count; }
GpNode *gp_dag_pending_first(void) { return S.pending_head.next == &S.pending_head ? NULL : S.pending_head.next; }
GpNode *gp_dag_pending_next(GpNode *n) { return n->next == &S.pending_head ? NULL : n->next; }

int64_t gp_node_size(const GpNode *n)
{
    int64_t s = 1;
    for (int d = 0; d < n->nd; d++)
        s *= n->shape[d];
    return s;
}

int gp_node_is_held(const GpNode *n)
{
    return !n->materialized && !n->out_view && !n->output_deferred && n->buf && n->buf->owner == n;
}

void gp_contiguous_strides(int nd, const int64_t *shape, size_t elsize, int64_t *strides)
{
    int64_t s = (int64_t)elsize;
    for (int d = nd - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

static GpNode *node_new(GpOp op, GpDType t, int nd, const int64_t *shape)
{
    GpNode *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->refcnt = 1;
    static uint64_t serial;
    n->serial = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&gp_stats.live_nodes, 1, __ATOMIC_RELAXED);
    n->op = op;
    n->dtype = t;
    n->nd = nd;
    if (nd)
        memcpy(n->shape, shape, (size_t)nd * sizeof *shape);
    return n;
}

GpNode *gp_node_leaf(GpDType t, int nd, const int64_t *shape, const int64_t *strides, char *data, GpBuffer *buf)
{
    GpNode *n = node_new(GP_OP_LEAF, t, nd, shape);
    if (!n)
        return NULL;
    n->materialized = 1;
    n->data = data;
    if (nd)
        memcpy(n->strides, strides, (size_t)nd * sizeof *strides);
    if (buf) {
        gp_buffer_incref(buf);
        n->buf = buf;
    }
    return n;
}

GpNode *gp_node_leaf_rolled(GpNode *x, const int64_t *shift)
{
    if (!x->materialized || x->op == GP_OP_CONST || x->nd < 1)
        return NULL;
    int64_t *w = malloc((size_t)x->nd * sizeof *w);
    GpNode *n = w ? gp_node_leaf(x->dtype, x->nd, x->shape, x->strides, x->data, x->buf) : NULL;
    if (!n) {
        free(w);
        return NULL;
    }
    for (int d = 0; d < x->nd; d++) {
        int64_t len = x->shape[d], r = len ? -(shift[d] % len) : 0; /* |r| < len */
        if (x->wrap)
            r += x->wrap[d];
        w[d] = len ? ((r % len) + len) % len : 0;
    }
    n->wrap = w;
    return n;
}

int gp_node_reads_wrapped(const GpNode *n)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && n->in[i]->materialized && n->in[i]->wrap)
            return 1;
    return 0;
}

void gp_boxes_init(GpBoxes *b, int nd, const int64_t *shape)
{
    b->nd = nd;
    b->done = 0;
    for (int d = 0; d < nd; d++) {
        b->ncut[d] = 0;
        b->cut[d][0] = 0;
        b->cut[d][1] = shape[d];
        b->idx[d] = 0;
        if (shape[d] == 0)
            b->done = 1;
    }
}

int gp_boxes_add_wrap(GpBoxes *b, const int64_t *wrap)
{
    for (int d = 0; d < b->nd; d++) {
        if (!wrap[d])
            continue;
        int n = b->ncut[d] + 2; /* bounds in cut[d] */
        int64_t c = b->cut[d][n - 1] - wrap[d], *cut = b->cut[d];
        int i = 1;
        while (i < n - 1 && cut[i] < c)
            i++;
        if (cut[i] == c)
            continue;
        if (b->ncut[d] == GP_BOX_MAXCUTS)
            return -1;
        memmove(&cut[i + 1], &cut[i], (size_t)(n - i) * sizeof *cut);
        cut[i] = c;
        b->ncut[d]++;
    }
    return 0;
}

int gp_boxes_next(GpBoxes *b, int64_t *start, int64_t *len)
{
    if (b->done)
        return 0;
    for (int d = 0; d < b->nd; d++) {
        start[d] = b->cut[d][b->idx[d]];
        len[d] = b->cut[d][b->idx[d] + 1] - start[d];
    }
    int d = b->nd - 1;
    for (; d >= 0; d--) {
        if (++b->idx[d] <= b->ncut[d])
            break;
        b->idx[d] = 0;
    }
    b->done = d < 0;
    return 1;
}

GpNode *gp_node_const(GpDType t, GpScalar v)
{
    GpNode *n = node_new(GP_OP_CONST, t, 0, NULL);
    if (!n)
        return NULL;
    n->materialized = 1;
    n->value = v;
    return n;
}

/* Records the edge consumer -> x (consumer is pending). */
static void add_edge(GpNode *x)
{
    gp_node_incref(x);
    x->nusers++;
    if (x->materialized && x->buf) {
        x->buf->nreaders++;
        gp_buffer_sync_prot(x->buf);
    }
}

/* Removes the edge consumer -> x and drops the consumer's reference. */
static void remove_edge(GpNode *x)
{
    x->nusers--;
    if (x->materialized && x->buf) {
        x->buf->nreaders--;
        gp_buffer_sync_prot(x->buf);
    }
    gp_node_decref(x);
}

static void pending_link(GpNode *n)
{
    n->next = S.pending_head.next;
    n->prev = &S.pending_head;
    S.pending_head.next->prev = n;
    S.pending_head.next = n;
    S.pending_count++;
}

static void pending_unlink(GpNode *n)
{
    if (!n->prev)
        return;
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = NULL;
    S.pending_count--;
}

GpNode *gp_node_map(GpOp op, GpDType t, int nin, GpNode *const *in, int nd, const int64_t *shape)
{
    GP_EXPECT_LOCKED();
    GpNode *n = node_new(op, t, nd, shape);
    if (n) {
        n->nin = nin;
        n->weight = 1;
        n->errstate = gp_record_errstate;
        n->line = gp_record_line;
        n->where = gp_record_where;
        for (int i = 0; i < nin; i++) {
            n->in[i] = in[i];
            add_edge(in[i]);
            if (!in[i]->materialized && in[i]->weight + 1 > n->weight)
                n->weight = in[i]->weight + 1;
        }
        pending_link(n);
        gp_stats.nodes_recorded++;
    }
    return n;
}

GpNode *gp_node_reduce(GpOp op, GpDType t, GpNode *in, uint64_t mask, int keepdims)
{
    int64_t shape[GP_MAXDIMS];
    int nd = 0;
    for (int d = 0; d < in->nd; d++) {
        if (!(mask >> d & 1))
            shape[nd++] = in->shape[d];
        else if (keepdims)
            shape[nd++] = 1;
    }
    GpNode *n = gp_node_map(op, t, 1, &in, nd, shape);
    if (n) {
        n->reduce_mask = mask;
        n->keepdims = keepdims;
    }
    return n;
}

int gp_vote_axis_order(int nd, int nop, const int64_t (*st)[GP_MAXDIMS], const int64_t (*vote)[GP_MAXDIMS],
                       int fastest_first, int *perm)
{
    int ax[GP_MAXDIMS]; /* sorted so far: fastest first, or slowest first */
    for (int i = 0; i < nd; i++)
        ax[i] = fastest_first ? nd - 1 - i : i;
    for (int i0 = 1; i0 < nd; i0++) {
        int a0 = ax[i0], pos = i0;
        for (int i1 = i0 - 1; i1 >= 0; i1--) {
            int a1 = ax[i1], ambig = 1, swap = 0;
            for (int k = 0; k < nop; k++) {
                if (vote[k][a0] == 0 || vote[k][a1] == 0)
                    continue;
                int64_t s0 = llabs(st[k][a0]), s1 = llabs(st[k][a1]);
                if (fastest_first ? s1 <= s0 : s0 <= s1)
                    swap = 0;
                else if (ambig)
                    swap = 1;
                ambig = 0;
            }
            if (!ambig) {
                if (!swap)
                    break;
                pos = i1;
            }
        }
        for (int i = i0; i > pos; i--)
            ax[i] = ax[i - 1];
        ax[pos] = a0;
    }
    int identity = 1;
    for (int i = 0; i < nd; i++) {
        perm[i] = ax[fastest_first ? nd - 1 - i : i];
        identity &= perm[i] == i;
    }
    return !identity;
}

int gp_best_axis_order(int nd, int nop, const int64_t (*st)[GP_MAXDIMS], int *perm)
{
    return gp_vote_axis_order(nd, nop, st, st, 1, perm);
}

int gp_iteration_order(int nd, const int64_t *shape, const int64_t *strides, int *order)
{
    int64_t st[1][GP_MAXDIMS];
    for (int d = 0; d < nd; d++)
        st[0][d] = shape[d] == 1 ? 0 : strides[d]; /* (the iterator's stride of a length-1 dim) */
    gp_best_axis_order(nd, 1, (const int64_t(*)[GP_MAXDIMS])st, order);
    /* the dims of length 1 first (anywhere: the iterator drops them) */
    int tmp[GP_MAXDIMS], n = 0;
    for (int i = 0; i < nd; i++)
        if (shape[order[i]] == 1)
            tmp[n++] = order[i];
    int first = n;
    for (int i = 0; i < nd; i++)
        if (shape[order[i]] != 1)
            tmp[n++] = order[i];
    memcpy(order, tmp, (size_t)nd * sizeof *order);
    return first;
}

/* Reduction r's result laid out as NumPy allocates it: in its iterator's
 * order, so the kept dims (and with keepdims the reduced ones) vary in
 * memory as they do in the input (order: its dims, slowest first).  A
 * float sum of an F-ordered (2, 129, 127) array over axis 2 is F-ordered,
 * and its ravel() a copy, not a view (fuzz case 731008991: writing
 * through a view of that ravel changed the sum).  Dims of length 1 keep
 * their places; the others take the input's order among their slots. */
static void set_reduce_result_perm(GpNode *r, const int *order)
{
    const GpNode *in = r->in[0];
    int out_of_in[GP_MAXDIMS], seq[GP_MAXDIMS], perm[GP_MAXDIMS], k = 0, n = 0;
    for (int d = 0; d < in->nd; d++)
        out_of_in[d] = !(r->reduce_mask >> d & 1) || r->keepdims ? k++ : -1;
    if (k != r->nd)
        return;
    for (int i = 0; i < in->nd; i++) {
        int o = out_of_in[order[i]];
        if (o >= 0 && r->shape[o] != 1)
            seq[n++] = o;
    }
    for (int o = 0, j = 0; o < r->nd; o++)
        perm[o] = r->shape[o] != 1 ? seq[j++] : o;
    gp_node_set_perm(r, perm);
}

void gp_node_set_reduce_order(GpNode *r, const int64_t *in_strides)
{
    const GpNode *in = r->in[0];
    int order[GP_MAXDIMS];
    r->has_in_order = 0;
    r->reduced_run = in && in->nd < 2;
    if (!in || in->nd < 2)
        return;
    int first = gp_iteration_order(in->nd, in->shape, in_strides, order);
    if (first < 0)
        return;
    for (int d = 0; d < in->nd; d++) {
        r->in_order[d] = (int8_t)order[d];
        r->has_in_order |= order[d] != d;
    }
    /* the reduced dims: innermost, in logical order, contiguous */
    int run = 1, inner = -1, kept_seen = 0;
    for (int i = in->nd - 1; i >= first && run; i--) {
        int d = order[i];
        if (!(r->reduce_mask >> d & 1)) {
            kept_seen = 1;
            continue;
        }
        if (kept_seen || (inner >= 0 && (d > inner || in_strides[d] != in_strides[inner] * in->shape[inner])))
            run = 0;
        inner = d;
    }
    r->reduced_run = run;
    if (!gp_op_is_arg(r->op))
        set_reduce_result_perm(r, order);
}

GpNode *gp_node_reduce_inner_first(GpNode *r, int inner)
{
    GP_EXPECT_LOCKED();
    GpNode *in = r->in[0];
    GpNode *r1 = gp_node_reduce(r->op, r->dtype, in, 1ull << inner, 1);
    if (!r1)
        return NULL;
    r1->has_in_order = r->has_in_order;
    memcpy(r1->in_order, r->in_order, sizeof r1->in_order);
    r1->errstate = r->errstate;
    r1->line = r->line;
    r1->where = r->where;
    r1->site = r->site;
    r1->serial = r->serial;
    add_edge(r1);
    gp_node_decref(r1); /* (r's edge holds it) */
    r->in[0] = r1;
    r->weight = r1->weight + 1;
    remove_edge(in);
    return r1;
}

GpNode *gp_node_scan(GpOp op, GpDType t, GpNode *in, int axis)
{
    GpNode *n = gp_node_map(op, t, 1, &in, in->nd, in->shape);
    if (n)
        n->reduce_mask = 1ull << axis;
    return n;
}

/* ---- views of pending results ------------------------------------------- */

static int same_shape(const GpNode *a, const GpNode *b)
{
    if (a->nd != b->nd)
        return 0;
    for (int d = 0; d < a->nd; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

/* A view's index map into a node's dims: view dim k reads dim dim[k] of the
 * node with step step[k] (dim -1: the view dim does not move in it), from
 * the node's multi-index off[]. */
typedef struct {
    int nd;               /* view dims */
    const int64_t *shape; /* view shape */
    int dim[GP_MAXDIMS];
    int64_t step[GP_MAXDIMS];
    int64_t off[GP_MAXDIMS]; /* per node dim */
} ViewMap;

typedef struct {
    GpNode *from[64], *to[64];
    int n, budget;
    GpNode *need; /* held: a node to compute before the view can be made */
} ViewMemo;

/* The map of input x (broadcast into consumer c's dims) from c's map. */
static void input_map(const GpNode *c, const GpNode *x, const ViewMap *m, ViewMap *out)
{
    int shift = c->nd - x->nd;
    out->nd = m->nd;
    out->shape = m->shape;
    for (int d = 0; d < x->nd; d++)
        out->off[d] = x->shape[d] == 1 ? 0 : m->off[d + shift];
    for (int k = 0; k < m->nd; k++) {
        int d = m->dim[k] < 0 ? -1 : m->dim[k] - shift;
        out->dim[k] = d >= 0 && x->shape[d] != 1 ? d : -1;
        out->step[k] = out->dim[k] >= 0 ? m->step[k] : 0;
    }
}

static GpNode *view_node(GpNode *x, const ViewMap *m, ViewMemo *memo);

/* The memo's copy of pending map x, if it made one (a new reference). */
static GpNode *memo_find(ViewMemo *memo, const GpNode *x)
{
    for (int i = 0; i < memo->n; i++)
        if (memo->from[i] == x) {
            gp_node_incref(memo->to[i]);
            return memo->to[i];
        }
    return NULL;
}

static void memo_free(ViewMemo *memo)
{
    for (int i = 0; i < memo->n; i++) {
        gp_node_decref(memo->from[i]);
        gp_node_decref(memo->to[i]);
    }
}

/* The copy of input i of pending map x, made by a walker (view_node,
 * rolled_node) under its map; NULL to give up (memo->need may be set). */
typedef GpNode *(*CopyInput)(GpNode *x, int i, const void *map, ViewMemo *memo);

/* A copy of pending map x with the given shape, over the copies of its
 * inputs: the same operation (its error state, line, where= and serial, so
 * that its warnings are given once), remembered in the memo (a node read
 * twice is copied once).  NULL when an input gives up, the memo's budget
 * is spent, or out of memory. */
static GpNode *copy_map(GpNode *x, int nd, const int64_t *shape, CopyInput input, const void *map, ViewMemo *memo)
{
    GpNode *found = memo_find(memo, x);
    if (found)
        return found;
    if (--memo->budget < 0)
        return NULL;
    GpNode *in[3] = {NULL, NULL, NULL}, *r = NULL;
    for (int i = 0; i < x->nin; i++)
        if (!(in[i] = input(x, i, map, memo)))
            goto done;
    if (!(r = gp_node_map(x->op, x->dtype, x->nin, in, nd, shape)))
        goto done;
    r->errstate = x->errstate;
    r->line = x->line;
    r->where = x->where;
    r->serial = x->serial; /* the same operation: its warnings once */
    r->cast_for_reduce = x->cast_for_reduce;
    if (memo->n < 64) {
        /* held by the memo until the copy is made */
        gp_node_incref(x);
        gp_node_incref(r);
        memo->from[memo->n] = x;
        memo->to[memo->n++] = r;
    }
done:
    for (int i = 0; i < x->nin; i++)
        if (in[i])
            gp_node_decref(in[i]);
    return r;
}

/* A leaf over materialized x's memory, read through the map. */
static GpNode *view_leaf(GpNode *x, const ViewMap *m)
{
    if (x->op == GP_OP_CONST) {
        gp_node_incref(x);
        return x;
    }
    if (x->wrap)
        return NULL; /* not an affine map of memory */
    char *data = x->data;
    for (int d = 0; d < x->nd; d++)
        data += m->off[d] * x->strides[d];
    int64_t strides[GP_MAXDIMS];
    for (int k = 0; k < m->nd; k++)
        strides[k] = m->dim[k] >= 0 ? m->step[k] * x->strides[m->dim[k]] : 0;
    return gp_node_leaf(x->dtype, m->nd, m->shape, strides, data, x->buf);
}

/* Sets memo->need to x (held) when x must be computed before the view
 * can be made; NULL return. */
static GpNode *needs(ViewMemo *memo, GpNode *x)
{
    gp_node_incref(x);
    memo->need = x;
    return NULL;
}

static GpNode *view_input(GpNode *x, int i, const void *map, ViewMemo *memo)
{
    GpNode *y = x->in[i];
    /* a pending broadcast operand is computed once, not per copy */
    if (!y->materialized && !same_shape(y, x))
        return needs(memo, y);
    ViewMap my;
    input_map(x, y, map, &my);
    return view_node(y, &my, memo);
}

static GpNode *view_node(GpNode *x, const ViewMap *m, ViewMemo *memo)
{
    if (!x->materialized && (gp_op_kind[x->op] != GP_KIND_MAP || x->out_view || gp_node_reads_wrapped(x)))
        return needs(memo, x); /* (a roll: computed, then its memory is viewed) */
    if (x->materialized)
        return view_leaf(x, m);
    return copy_map(x, m->nd, m->shape, view_input, m, memo);
}

void gp_node_rewrite_as_map(GpNode *n, GpOp op, int nin, GpNode *const *in)
{
    GP_EXPECT_LOCKED();
    GpNode *old[3] = {n->in[0], n->in[1], n->in[2]};
    int old_nin = n->nin;
    if (gp_op_kind[n->op] == GP_KIND_REDUCE && !n->replay_in) {
        n->replay_in = old[0]; /* the edge stays, owned by replay_in */
        n->replay_op = n->op;
        n->replay_mask = n->reduce_mask;
        n->replay_keepdims = n->keepdims;
        old[0] = NULL;
    }
    n->weight = 1;
    for (int i = 0; i < nin; i++) {
        n->in[i] = in[i];
        add_edge(in[i]);
        if (!in[i]->materialized && in[i]->weight + 1 > n->weight)
            n->weight = in[i]->weight + 1;
    }
    for (int i = nin; i < 3; i++)
        n->in[i] = NULL;
    n->nin = nin;
    n->op = op;
    n->reduce_mask = 0;
    n->keepdims = 0;
    for (int i = 0; i < old_nin; i++)
        if (old[i])
            remove_edge(old[i]);
}

GpNode *gp_node_view(GpNode *n, int64_t offset, int nd, const int64_t *shape, const int64_t *strides, GpNode **need)
{
    GP_EXPECT_LOCKED();
    int64_t e = (int64_t)gp_dtype_size(n->dtype), B[GP_MAXDIMS];
    *need = NULL;
    if (n->materialized || gp_op_kind[n->op] != GP_KIND_MAP || n->out_view || offset < 0 || offset % e)
        return NULL;
    ViewMap m;
    m.nd = nd;
    m.shape = shape;
    /* the node's element strides (its buffer layout), dims from the
     * coarsest; the offset as a multi-index */
    int64_t rem = offset / e, bs[GP_MAXDIMS];
    int order[GP_MAXDIMS];
    gp_node_buffer_strides(n, bs);
    for (int d = 0; d < n->nd; d++) {
        B[d] = bs[d] / e;
        order[d] = n->has_perm ? n->perm[d] : d;
    }
    for (int i = 0; i < n->nd; i++) {
        int d = order[i];
        m.off[d] = rem / B[d];
        rem %= B[d];
        if (m.off[d] >= n->shape[d])
            return NULL;
    }
    /* each view dim steps along the coarsest node dim its stride is a
     * multiple of; the box of indices must stay inside every dim */
    int64_t lo[GP_MAXDIMS], hi[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        lo[d] = hi[d] = m.off[d];
    for (int k = 0; k < nd; k++) {
        m.dim[k] = -1;
        m.step[k] = 0;
        if (shape[k] == 0)
            return NULL;
        if (shape[k] == 1 || strides[k] == 0)
            continue;
        if (strides[k] % e)
            return NULL;
        int64_t st = strides[k] / e, a = st < 0 ? -st : st;
        for (int i = 0; i < n->nd; i++) {
            int d = order[i];
            if (a % B[d] == 0) {
                m.dim[k] = d;
                m.step[k] = st / B[d];
                break;
            }
        }
        int64_t span = m.step[k] * (shape[k] - 1);
        if (span < 0)
            lo[m.dim[k]] += span;
        else
            hi[m.dim[k]] += span;
    }
    for (int d = 0; d < n->nd; d++)
        if (lo[d] < 0 || hi[d] >= n->shape[d])
            return NULL;
    ViewMemo memo;
    memo.n = 0;
    memo.budget = GP_MAXINSTR / 4;
    memo.need = NULL;
    GpNode *r = view_node(n, &m, &memo);
    *need = memo.need;
    if (r)
        n->viewed = 1;
    memo_free(&memo);
    return r;
}

static GpNode *rolled_node(GpNode *x, const int64_t *shift, ViewMemo *memo);

static GpNode *rolled_input(GpNode *x, int i, const void *shift, ViewMemo *memo)
{
    GpNode *y = x->in[i];
    if (x->op == GP_OP_GATHER && i == 0) {
        /* a gather's table is read at its indices, which are rolled: the
         * table itself is not (its leaf's address is the table's first
         * element, a zero-stride broadcast where a view copied the gather;
         * a rolled one was copied by the NumPy evaluator into memory of its
         * own, and the gather read past it: seed 9001, case 9001000598) */
        gp_node_incref(y);
        return y;
    }
    if (y->op != GP_OP_CONST && !same_shape(y, x)) {
        /* a broadcast operand: a pending one is computed once (then asked
         * again), a computed one is not rolled here */
        return y->materialized ? NULL : needs(memo, y);
    }
    return rolled_node(y, shift, memo);
}

static GpNode *rolled_node(GpNode *x, const int64_t *shift, ViewMemo *memo)
{
    if (x->op == GP_OP_CONST) {
        gp_node_incref(x);
        return x;
    }
    if (x->materialized)
        return gp_node_leaf_rolled(x, shift);
    if (gp_op_kind[x->op] != GP_KIND_MAP || x->out_view)
        return needs(memo, x);
    return copy_map(x, x->nd, x->shape, rolled_input, shift, memo);
}

GpNode *gp_node_rolled(GpNode *n, const int64_t *shift, GpNode **need)
{
    GP_EXPECT_LOCKED();
    *need = NULL;
    if (n->materialized || gp_op_kind[n->op] != GP_KIND_MAP || n->out_view || n->nd < 1)
        return NULL;
    ViewMemo memo;
    memo.n = 0;
    memo.budget = GP_MAXINSTR / 4;
    memo.need = NULL;
    GpNode *r = rolled_node(n, shift, &memo);
    *need = memo.need;
    /* the copy computes every element of each node it copied (a roll is a
     * permutation of them), with its warnings: a node whose array dies
     * unread need not be computed for them -- unless the roll's result,
     * recorded under the error state now, would not be either
     * (hooks/allocator.c compute_if_unread: a node that watches nothing) */
    for (int i = 0; r && i < memo.n; i++)
        if (gp_record_errstate || !memo.from[i]->errstate)
            memo.from[i]->viewed = 1;
    memo_free(&memo);
    return r;
}

void gp_node_set_output(GpNode *n, GpBuffer *buf)
{
    GP_EXPECT_LOCKED();
    gp_buffer_incref(buf);
    n->buf = buf;
    __atomic_store_n(&buf->producer, n, __ATOMIC_RELEASE); /* read without the lock: gp_buffer_compute_or_raise */
    gp_buffer_sync_prot(buf);
}

void gp_node_set_output_view(GpNode *n, GpBuffer *buf, char *data, const int64_t *strides)
{
    GP_EXPECT_LOCKED();
    gp_buffer_incref(buf);
    n->buf = buf;
    n->out_view = 1;
    n->out_data = data;
    if (n->nd)
        memcpy(n->out_strides, strides, (size_t)n->nd * sizeof *strides);
    __atomic_store_n(&buf->producer, n, __ATOMIC_RELEASE); /* read without the lock: gp_buffer_compute_or_raise */
    buf->populated = 1;
    gp_node_incref(n);
    buf->writer = n;
    gp_buffer_sync_prot(buf);
}

void gp_node_take_output_view(GpNode *n, GpBuffer *buf)
{
    GP_EXPECT_LOCKED();
    GpNode *w = buf->writer;
    n->buf = buf; /* w's reference moves to n */
    w->buf = NULL;
    n->out_view = 1;
    w->out_view = 0;
    n->out_data = w->out_data;
    if (n->nd)
        memcpy(n->out_strides, w->out_strides, (size_t)n->nd * sizeof *n->out_strides);
    __atomic_store_n(&buf->producer, n, __ATOMIC_RELEASE);
    gp_node_incref(n);
    buf->writer = n;
    gp_node_decref(w); /* buf's reference; n's edge keeps it */
}

/* Releases buf's reference to its pending in-place writer. */
static void release_writer(GpBuffer *b)
{
    GpNode *w = b->writer;
    b->writer = NULL;
    if (w)
        gp_node_decref(w);
}

void gp_buffer_drop_writer(GpBuffer *b)
{
    GP_EXPECT_LOCKED();
    if (b->writer && !b->writer->materialized)
        gp_node_drop_output(b->writer);
    release_writer(b);
}

void gp_node_drop_output(GpNode *n)
{
    GP_EXPECT_LOCKED();
    /* (one being completed keeps it: complete() marks it over its buffer
     * when it has the lock back) */
    if (!n->materialized && !n->completing && n->buf) {
        GpBuffer *b = n->buf;
        n->buf = NULL;
        n->out_view = 0;
        __atomic_store_n(&b->producer, NULL, __ATOMIC_RELEASE);
        gp_buffer_sync_prot(b);
        gp_buffer_decref(b);
    }
}

void gp_node_incref(GpNode *n) { __atomic_add_fetch(&n->refcnt, 1, __ATOMIC_RELAXED); }

static void release_inputs(GpNode *n)
{
    for (int i = 0; i < n->nin; i++) {
        GpNode *x = n->in[i];
        n->in[i] = NULL;
        if (x)
            remove_edge(x);
    }
    if (n->replay_in) {
        GpNode *x = n->replay_in;
        n->replay_in = NULL;
        remove_edge(x);
    }
}

void gp_node_decref(GpNode *n)
{
    if (!n)
        return;
    GP_EXPECT_LOCKED();
    if (__atomic_sub_fetch(&n->refcnt, 1, __ATOMIC_ACQ_REL) == 0) {
        if (!n->materialized) {
            pending_unlink(n);
            if (n->buf)
                __atomic_store_n(&n->buf->producer, NULL, __ATOMIC_RELEASE);
        }
        release_inputs(n);
        if (n->buf) {
            gp_buffer_sync_prot(n->buf);
            gp_buffer_decref(n->buf);
        }
        __atomic_sub_fetch(&gp_stats.live_nodes, 1, __ATOMIC_RELAXED);
        free(n->wrap);
        free(n);
    }
}

void gp_perm_strides(int nd, const int64_t *shape, size_t elsize, const int *perm, int64_t *strides)
{
    int64_t s = (int64_t)elsize;
    for (int i = nd - 1; i >= 0; i--) {
        strides[perm[i]] = s;
        s *= shape[perm[i]];
    }
}

void gp_node_buffer_strides(const GpNode *n, int64_t *strides)
{
    if (!n->has_perm) {
        gp_contiguous_strides(n->nd, n->shape, gp_dtype_size(n->dtype), strides);
        return;
    }
    int perm[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        perm[d] = n->perm[d];
    gp_perm_strides(n->nd, n->shape, gp_dtype_size(n->dtype), perm, strides);
}

void gp_node_set_perm(GpNode *n, const int *perm)
{
    GP_EXPECT_LOCKED();
    n->has_perm = 0;
    for (int d = 0; d < n->nd; d++) {
        n->perm[d] = (int8_t)perm[d];
        n->has_perm |= perm[d] != d;
    }
}

void gp_node_mark_materialized(GpNode *n)
{
    GP_EXPECT_LOCKED();
    __atomic_store_n(&n->materialized, 1, __ATOMIC_RELEASE); /* read without the lock: gp_node_materialize */
    if (n->out_view) {
        n->data = n->out_data;
        memcpy(n->strides, n->out_strides, sizeof n->strides);
    } else {
        n->data = n->buf->data;
        gp_node_buffer_strides(n, n->strides);
    }
    pending_unlink(n);
    GpBuffer *b = n->buf;
    __atomic_store_n(&b->producer, NULL, __ATOMIC_RELEASE);
    b->nreaders += n->nusers;
    gp_buffer_sync_prot(b);
    release_inputs(n);
    if (b->writer == n)
        release_writer(b); /* the caller still holds n */
}

unsigned gp_record_errstate = GP_FPE_DIVIDE | GP_FPE_OVERFLOW | GP_FPE_INVALID; /* NumPy's default */
_Thread_local int gp_record_line;
int gp_record_where;

GpStatus gp_node_ensure_buffer(GpNode *n)
{
    GP_EXPECT_LOCKED();
    if (n->buf)
        return GP_OK;
    size_t nbytes = (size_t)gp_node_size(n) * gp_dtype_size(n->dtype);
    GpBuffer *b = gp_buffer_reserve(nbytes); /* written whole by its kernel */
    if (!b) {
        gp_set_error("out of memory for a %zu-byte buffer", nbytes);
        return GP_ENOMEM;
    }
    gp_node_set_output(n, b);
    gp_buffer_decref(b);
    return GP_OK;
}
