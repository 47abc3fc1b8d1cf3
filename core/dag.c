/* core/dag.c -- recording nodes, reference counts and reader accounting.
 *
 * Invariants (checked by tests/c/test_dag.c):
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

GpStats gp_stats;

static pthread_mutex_t core_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static __thread int lock_depth; /* how many times this thread holds core_lock */
void gp_lock(void)
{
    pthread_mutex_lock(&core_lock);
    lock_depth++;
}
void gp_unlock(void)
{
    lock_depth--;
    pthread_mutex_unlock(&core_lock);
}

/* fork(): the child gets only the forking thread, so a lock another thread
 * held would stay held forever.  The core lock is taken before fork()
 * (the forking thread waits until no kernel, plan or fault is in flight)
 * and given back in the parent; the child gets a fresh lock, held as often
 * as the forking thread held it before.  Registered once, at load. */
static void lock_before_fork(void) { gp_lock(); }
static void lock_after_fork_parent(void) { gp_unlock(); }
static void lock_after_fork_child(void)
{
    int depth = lock_depth - 1;
    pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    core_lock = fresh;
    lock_depth = 0;
    for (int i = 0; i < depth; i++)
        gp_lock();
}
__attribute__((constructor)) static void lock_init(void)
{
    pthread_atfork(lock_before_fork, lock_after_fork_parent, lock_after_fork_child);
}

int gp_lock_release_all(void)
{
    int depth = lock_depth;
    for (int i = 0; i < depth; i++)
        gp_unlock();
    return depth;
}
void gp_lock_reacquire(int depth)
{
    for (int i = 0; i < depth; i++)
        gp_lock();
}

int64_t gp_fail_at;

int gp_fail_now(void)
{
    int64_t k = __atomic_add_fetch(&gp_stats.fail_points, 1, __ATOMIC_RELAXED);
    return k == gp_fail_at;
}

static __thread char error_text[256];
const char *gp_last_error(void) { return error_text; }
void gp_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_text, sizeof error_text, fmt, ap);
    va_end(ap);
}

int64_t gp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

const int gp_op_nin[GP_NOPS] = {
#define GP_OP(name, nin, kind, npname, meaning) nin,
#include "ops.def"
#undef GP_OP
};
const GpKind gp_op_kind[GP_NOPS] = {
#define GP_OP(name, nin, kind, npname, meaning) kind,
#include "ops.def"
#undef GP_OP
};
const char *const gp_op_name[GP_NOPS] = {
#define GP_OP(name, nin, kind, npname, meaning) #name,
#include "ops.def"
#undef GP_OP
};
const char *const gp_op_numpy_name[GP_NOPS] = {
#define GP_OP(name, nin, kind, npname, meaning) npname,
#include "ops.def"
#undef GP_OP
};

size_t gp_dtype_size(GpDType t)
{
    static const size_t sizes[GP_NDTYPES] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8};
    return t < GP_NDTYPES ? sizes[t] : 0;
}

static GpNode pending_head = {.prev = &pending_head, .next = &pending_head};
static int64_t pending_count;

int64_t gp_dag_pending_count(void) { return pending_count; }
GpNode *gp_dag_pending_first(void) { return pending_head.next == &pending_head ? NULL : pending_head.next; }
GpNode *gp_dag_pending_next(GpNode *n) { return n->next == &pending_head ? NULL : n->next; }

int64_t gp_node_size(const GpNode *n)
{
    int64_t s = 1;
    for (int d = 0; d < n->nd; d++)
        s *= n->shape[d];
    return s;
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
    __atomic_add_fetch(&gp_stats.live_nodes, 1, __ATOMIC_RELAXED);
    n->op = op;
    n->dtype = t;
    n->nd = nd;
    if (nd)
        memcpy(n->shape, shape, (size_t)nd * sizeof *shape);
    return n;
}

GpNode *gp_node_leaf(GpDType t, int nd, const int64_t *shape, const int64_t *strides, char *data,
                     GpBuffer *buf)
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
    n->next = pending_head.next;
    n->prev = &pending_head;
    pending_head.next->prev = n;
    pending_head.next = n;
    pending_count++;
}

static void pending_unlink(GpNode *n)
{
    if (!n->prev)
        return;
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = NULL;
    pending_count--;
}

GpNode *gp_node_map(GpOp op, GpDType t, int nin, GpNode *const *in, int nd, const int64_t *shape)
{
    gp_lock();
    GpNode *n = node_new(op, t, nd, shape);
    if (n) {
        n->nin = nin;
        n->weight = 1;
        n->errstate = gp_record_errstate;
        for (int i = 0; i < nin; i++) {
            n->in[i] = in[i];
            add_edge(in[i]);
            if (!in[i]->materialized && in[i]->weight + 1 > n->weight)
                n->weight = in[i]->weight + 1;
        }
        pending_link(n);
        gp_stats.nodes_recorded++;
    }
    gp_unlock();
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
    int nd;                     /* view dims */
    const int64_t *shape;       /* view shape */
    int dim[GP_MAXDIMS];
    int64_t step[GP_MAXDIMS];
    int64_t off[GP_MAXDIMS];    /* per node dim */
} ViewMap;

typedef struct {
    GpNode *from[64], *to[64];
    int n, budget;
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

/* A leaf over materialized x's memory, read through the map. */
static GpNode *view_leaf(GpNode *x, const ViewMap *m)
{
    if (x->op == GP_OP_CONST) {
        gp_node_incref(x);
        return x;
    }
    char *data = x->data;
    for (int d = 0; d < x->nd; d++)
        data += m->off[d] * x->strides[d];
    int64_t strides[GP_MAXDIMS];
    for (int k = 0; k < m->nd; k++)
        strides[k] = m->dim[k] >= 0 ? m->step[k] * x->strides[m->dim[k]] : 0;
    return gp_node_leaf(x->dtype, m->nd, m->shape, strides, data, x->buf);
}

static GpNode *view_node(GpNode *x, const ViewMap *m, ViewMemo *memo)
{
    if (!x->materialized && (gp_op_kind[x->op] != GP_KIND_MAP || x->out_view) && gp_node_materialize(x) != GP_OK)
        return NULL;
    if (x->materialized)
        return view_leaf(x, m);
    if (memo->n < 64)
        for (int i = 0; i < memo->n; i++)
            if (memo->from[i] == x) {
                gp_node_incref(memo->to[i]);
                return memo->to[i];
            }
    if (--memo->budget < 0)
        return NULL;
    GpNode *in[3] = {NULL, NULL, NULL}, *r = NULL;
    int nin = x->nin;
    for (int i = 0; i < nin; i++) {
        GpNode *y = x->in[i];
        /* a pending broadcast operand is computed once, not per copy;
         * computing it (an in-place write first computes the readers of
         * the old values) may compute x too, which releases y: held */
        gp_node_incref(y);
        if (!y->materialized && !same_shape(y, x) && gp_node_materialize(y) != GP_OK) {
            gp_node_decref(y);
            goto done;
        }
        if (x->materialized) {
            gp_node_decref(y);
            for (int j = 0; j < i; j++)
                gp_node_decref(in[j]);
            return view_leaf(x, m);
        }
        ViewMap my;
        input_map(x, y, m, &my);
        in[i] = view_node(y, &my, memo);
        gp_node_decref(y);
        if (!in[i])
            goto done;
        if (x->materialized) { /* computed while y's view was made */
            for (int j = 0; j <= i; j++)
                gp_node_decref(in[j]);
            return view_leaf(x, m);
        }
    }
    r = gp_node_map(x->op, x->dtype, x->nin, in, m->nd, m->shape);
    if (r) {
        r->errstate = x->errstate;
        if (memo->n < 64) {
            /* held by the memo until gp_node_view returns */
            gp_node_incref(x);
            gp_node_incref(r);
            memo->from[memo->n] = x;
            memo->to[memo->n++] = r;
        }
    }
done:
    for (int i = 0; i < nin; i++)
        if (in[i])
            gp_node_decref(in[i]);
    return r;
}

void gp_node_rewrite_as_map(GpNode *n, GpOp op, int nin, GpNode *const *in)
{
    gp_lock();
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
    gp_unlock();
}

GpNode *gp_node_view(GpNode *n, int64_t offset, int nd, const int64_t *shape, const int64_t *strides)
{
    int64_t e = (int64_t)gp_dtype_size(n->dtype), B[GP_MAXDIMS];
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
    gp_lock();
    ViewMemo memo;
    memo.n = 0;
    memo.budget = GP_MAXINSTR / 4;
    GpNode *r = view_node(n, &m, &memo);
    if (r)
        n->viewed = 1;
    for (int i = 0; i < memo.n; i++) {
        gp_node_decref(memo.from[i]);
        gp_node_decref(memo.to[i]);
    }
    gp_unlock();
    return r;
}

void gp_node_set_output(GpNode *n, GpBuffer *buf)
{
    gp_lock();
    gp_buffer_incref(buf);
    n->buf = buf;
    buf->producer = n;
    gp_buffer_sync_prot(buf);
    gp_unlock();
}

void gp_node_set_output_view(GpNode *n, GpBuffer *buf, char *data, const int64_t *strides)
{
    gp_lock();
    gp_buffer_incref(buf);
    n->buf = buf;
    n->out_view = 1;
    n->out_data = data;
    if (n->nd)
        memcpy(n->out_strides, strides, (size_t)n->nd * sizeof *strides);
    buf->producer = n;
    buf->populated = 1;
    gp_node_incref(n);
    buf->writer = n;
    gp_buffer_sync_prot(buf);
    gp_unlock();
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
    gp_lock();
    if (b->writer && !b->writer->materialized)
        gp_node_drop_output(b->writer);
    release_writer(b);
    gp_unlock();
}

void gp_node_drop_output(GpNode *n)
{
    gp_lock();
    if (!n->materialized && n->buf) {
        GpBuffer *b = n->buf;
        n->buf = NULL;
        n->out_view = 0;
        b->producer = NULL;
        gp_buffer_sync_prot(b);
        gp_buffer_decref(b);
    }
    gp_unlock();
}

void gp_node_incref(GpNode *n) { n->refcnt++; }

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
    gp_lock();
    if (--n->refcnt == 0) {
        if (!n->materialized) {
            pending_unlink(n);
            if (n->buf)
                n->buf->producer = NULL;
        }
        release_inputs(n);
        if (n->buf) {
            gp_buffer_sync_prot(n->buf);
            gp_buffer_decref(n->buf);
        }
        __atomic_sub_fetch(&gp_stats.live_nodes, 1, __ATOMIC_RELAXED);
        free(n);
    }
    gp_unlock();
}

void gp_node_buffer_strides(const GpNode *n, int64_t *strides)
{
    if (!n->has_perm) {
        gp_contiguous_strides(n->nd, n->shape, gp_dtype_size(n->dtype), strides);
        return;
    }
    int64_t s = (int64_t)gp_dtype_size(n->dtype);
    for (int i = n->nd - 1; i >= 0; i--) {
        strides[n->perm[i]] = s;
        s *= n->shape[n->perm[i]];
    }
}

void gp_node_set_perm(GpNode *n, const int *perm)
{
    n->has_perm = 0;
    for (int d = 0; d < n->nd; d++) {
        n->perm[d] = (int8_t)perm[d];
        n->has_perm |= perm[d] != d;
    }
}

void gp_node_mark_materialized(GpNode *n)
{
    n->materialized = 1;
    if (n->out_view) {
        n->data = n->out_data;
        memcpy(n->strides, n->out_strides, sizeof n->strides);
    } else {
        n->data = n->buf->data;
        gp_node_buffer_strides(n, n->strides);
    }
    pending_unlink(n);
    GpBuffer *b = n->buf;
    b->producer = NULL;
    b->nreaders += n->nusers;
    gp_buffer_sync_prot(b);
    release_inputs(n);
    if (b->writer == n)
        release_writer(b); /* the caller still holds n */
}

GpStatus gp_dag_flush(void)
{
    gp_lock();
    GpStatus st = GP_OK;
    gp_stats.flushes++;
    for (;;) {
        GpNode *n = pending_head.next;
        while (n != &pending_head && !n->buf)
            n = n->next;
        if (n == &pending_head)
            break;
        st = gp_node_materialize(n);
        if (st != GP_OK)
            break;
    }
    gp_unlock();
    return st;
}

GpStatus (*gp_eval_fallback)(GpNode *n);
void *(*gp_check_begin)(GpNode *n);
void (*gp_check_end)(GpNode *n, void *numpy_value, int compare);
int (*gp_fpe_hook)(GpNode *const *nodes, int n, unsigned flags);
unsigned gp_record_errstate = GP_FPE_DIVIDE | GP_FPE_OVERFLOW | GP_FPE_INVALID; /* NumPy's default */

GpStatus gp_node_ensure_buffer(GpNode *n)
{
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

/* The guard's callback: make every access to b legal. */
static void resolve(GpBuffer *b)
{
    if (b->producer)
        gp_node_materialize(b->producer);
    if (b->nreaders > 0)
        gp_dag_flush();
    if (!b->producer && b->nreaders == 0)
        gp_buffer_open_for_write(b); /* a write to a sticky read-only buffer */
}

__attribute__((constructor)) static void dag_init(void) { gp_guard_resolve = resolve; }
