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

void gp_node_mark_materialized(GpNode *n)
{
    n->materialized = 1;
    if (n->out_view) {
        n->data = n->out_data;
        memcpy(n->strides, n->out_strides, sizeof n->strides);
    } else {
        n->data = n->buf->data;
        gp_contiguous_strides(n->nd, n->shape, gp_dtype_size(n->dtype), n->strides);
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
int (*gp_fpe_hook)(GpNode *const *nodes, int n, unsigned flags);
unsigned gp_record_errstate = GP_FPE_DIVIDE | GP_FPE_OVERFLOW | GP_FPE_INVALID; /* NumPy's default */

GpStatus gp_node_ensure_buffer(GpNode *n)
{
    if (n->buf)
        return GP_OK;
    size_t nbytes = (size_t)gp_node_size(n) * gp_dtype_size(n->dtype);
    GpBuffer *b = gp_buffer_alloc_uninit(nbytes);
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
