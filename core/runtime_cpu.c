/* core/runtime_cpu.c -- the thread pool and the launch of map and
 * map-reduce kernels (paper section 3: the iteration space is split among
 * CPU threads in blocks; reductions combine per-thread partials).
 *
 * Map: the outer dims are flattened to an index o and the innermost dim to
 * j; tasks are blocks of rows, or column blocks of single rows when rows are
 * long, each about GRAIN_ELEMS or more.
 * Reduce: rows (outer indices) are split among threads when there are
 * enough; a single long row is split by NumPy's pairwise recursion (so the
 * result is bit-identical to NumPy's sum) or, for order-free operations,
 * into blocks whose partials are combined.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime_cpu.h"

#include <fenv.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define GRAIN_ELEMS 65536
#define PW_BLOCK 128           /* NumPy's PW_BLOCKSIZE */
#define GP_REDUCE_MAXPARTS 256 /* pairwise splits stop at depth 7 (128 leaves) */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    int nthreads; /* including the caller */
    int started;  /* workers running */
    unsigned long generation;
    GpTaskFn fn;
    void *ctx;
    int64_t ntasks, next, finished;
    int active;  /* workers still in the current launch */
    int helpers; /* workers taking part in the current launch: those numbered below it (a count
                    lowered after they started, threadpoolctl's limit, leaves the others asleep) */
} pool = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, NULL, 0, 0, 0, 0, 0};

static unsigned fp_flags; /* GP_FPE_*, ORed atomically by every thread */

unsigned gp_pool_take_fp_flags(void) { return __atomic_exchange_n(&fp_flags, 0u, __ATOMIC_ACQ_REL); }

static void pool_after_fork_child(void)
{
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.started = 0;
    pool.active = 0;
}

static int affinity_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
    return 1;
}

int gp_pool_threads(void)
{
    if (!pool.nthreads)
        pool.nthreads = affinity_cpus();
    return pool.nthreads;
}

/* Set by the back end around a launch too small to be worth waking the
 * workers (gp_pool_set_serial): the caller runs every task, and the
 * launches partition the work for one thread. */
static __thread int serial;

void gp_pool_set_serial(int on) { serial = on; }

static int threads_now(void) { return serial ? 1 : gp_pool_threads(); }

static void run_tasks(void)
{
    feclearexcept(FE_ALL_EXCEPT);
    for (;;) {
        int64_t t = __atomic_fetch_add(&pool.next, 1, __ATOMIC_RELAXED);
        if (t >= pool.ntasks)
            break;
        pool.fn(pool.ctx, t);
    }
    unsigned f = gp_fpe_of_fenv(fetestexcept(FE_ALL_EXCEPT));
    if (f)
        __atomic_fetch_or(&fp_flags, f, __ATOMIC_RELAXED);
}

static void *worker(void *arg)
{
    int index = (int)(intptr_t)arg; /* 0 .. started-1 */
    unsigned long seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (pool.generation == seen)
            pthread_cond_wait(&pool.wake, &pool.mu);
        seen = pool.generation;
        if (index >= pool.helpers)
            continue; /* not in this launch: asleep again */
        pthread_mutex_unlock(&pool.mu);
        run_tasks();
        pthread_mutex_lock(&pool.mu);
        if (--pool.active == 0)
            pthread_cond_signal(&pool.done);
    }
    return NULL;
}

static void start_workers(void)
{
    static int atfork_registered;
    if (!atfork_registered) {
        pthread_atfork(NULL, NULL, pool_after_fork_child);
        atfork_registered = 1;
    }
    int want = gp_pool_threads() - 1;
    while (pool.started < want) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = gp_fail_now() ? EAGAIN : pthread_create(&th, &attr, worker, (void *)(intptr_t)pool.started);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        pool.started++;
    }
}

void gp_pool_set_threads(int n) { pool.nthreads = n > 0 ? n : affinity_cpus(); }

void gp_pool_start(void)
{
    pthread_mutex_lock(&pool.mu);
    start_workers();
    pthread_mutex_unlock(&pool.mu);
}

void gp_pool_run(GpTaskFn fn, void *ctx, int64_t ntasks)
{
    if (ntasks <= 0)
        return;
    /* the caller's flags belong to whoever called it (NumPy's loop, when a
     * guard fault computes an array under it): kept across the launch */
    fexcept_t saved;
    fegetexceptflag(&saved, FE_ALL_EXCEPT);
    if (ntasks == 1 || threads_now() == 1) {
        feclearexcept(FE_ALL_EXCEPT);
        for (int64_t t = 0; t < ntasks; t++)
            fn(ctx, t);
        __atomic_fetch_or(&fp_flags, gp_fpe_of_fenv(fetestexcept(FE_ALL_EXCEPT)), __ATOMIC_RELAXED);
        fesetexceptflag(&saved, FE_ALL_EXCEPT);
        return;
    }
    pthread_mutex_lock(&pool.mu);
    start_workers();
    /* the thread count may have been lowered since the workers started
     * (threadpoolctl): only that many take part */
    int helpers = pool.started < gp_pool_threads() - 1 ? pool.started : gp_pool_threads() - 1;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.ntasks = ntasks;
    pool.next = 0;
    pool.helpers = helpers;
    pool.active = helpers;
    pool.generation++;
    if (helpers > 0)
        pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    run_tasks();
    pthread_mutex_lock(&pool.mu);
    while (pool.active > 0)
        pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    fesetexceptflag(&saved, FE_ALL_EXCEPT);
}

/* ---- map --------------------------------------------------------------- */

typedef struct {
    GpMapKernel k;
    const int64_t *a;
    int64_t outer, inner;
    int64_t rows_per_task; /* > 0: tasks are row blocks */
    int64_t cols_per_task; /* else: tasks are column blocks of one row */
    int64_t tasks_per_row;
} MapJob;

static void map_task(void *ctx, int64_t t)
{
    MapJob *m = ctx;
    if (m->rows_per_task) {
        int64_t o0 = t * m->rows_per_task, o1 = o0 + m->rows_per_task;
        if (o1 > m->outer)
            o1 = m->outer;
        m->k(m->a, o0, o1, 0, m->inner);
    } else {
        int64_t o = t / m->tasks_per_row, c = t % m->tasks_per_row;
        int64_t j0 = c * m->cols_per_task, j1 = j0 + m->cols_per_task;
        if (j1 > m->inner)
            j1 = m->inner;
        m->k(m->a, o, o + 1, j0, j1);
    }
}

static void columns_task(void *ctx, int64_t t)
{
    MapJob *m = ctx;
    int64_t j0 = t * m->cols_per_task, j1 = j0 + m->cols_per_task;
    if (j1 > m->inner)
        j1 = m->inner;
    m->k(m->a, 0, m->outer, j0, j1);
}

void gp_run_map(GpMapKernel k, const int64_t *a, GpSplit split)
{
    MapJob m = {k, a, 1, a[a[0]], 0, 0, 0};
    for (int d = 0; d < a[0] - 1; d++)
        m.outer *= a[1 + d];
    int64_t total = m.outer * m.inner;
    if (total == 0)
        return;
    int T = threads_now();
    if (split == GP_SPLIT_COLUMNS) {
        int64_t tasks = total >= 2 * GRAIN_ELEMS ? 2 * T : 1;
        m.cols_per_task = (m.inner + tasks - 1) / tasks;
        m.cols_per_task = (m.cols_per_task + 15) / 16 * 16;
        gp_pool_run(columns_task, &m, (m.inner + m.cols_per_task - 1) / m.cols_per_task);
        return;
    }
    int64_t chunk = total / (T * 4);
    if (chunk < GRAIN_ELEMS)
        chunk = GRAIN_ELEMS;
    int64_t ntasks;
    if (split == GP_SPLIT_ANY && m.inner >= chunk && m.outer < 4 * T) {
        m.cols_per_task = (chunk + 63) / 64 * 64;
        m.tasks_per_row = (m.inner + m.cols_per_task - 1) / m.cols_per_task;
        ntasks = m.outer * m.tasks_per_row;
    } else {
        m.rows_per_task = chunk / (m.inner ? m.inner : 1);
        if (m.rows_per_task < 1)
            m.rows_per_task = 1;
        ntasks = (m.outer + m.rows_per_task - 1) / m.rows_per_task;
    }
    gp_pool_run(map_task, &m, ntasks);
}

/* ---- map-reduce -------------------------------------------------------- */

typedef struct {
    GpReduceKernel k;
    const int64_t *a;
    GpOp op;
    GpDType t;
    size_t elsize;
    int pairwise, order_free;
    int64_t outer, inner;
    char *out;
    /* single-row split */
    int64_t nparts;
    int64_t part_start[GP_REDUCE_MAXPARTS], part_len[GP_REDUCE_MAXPARTS];
    GpScalar partial[GP_REDUCE_MAXPARTS];
} ReduceJob;

/* NumPy's pairwise_sum recursion for row o over [j0, j0+n). */
static GpScalar reduce_row(ReduceJob *r, int64_t o, int64_t j0, int64_t n)
{
    /* a pairwise sum's kernel recurses as NumPy's pairwise_sum over any n
     * (codegen_cpu.c pairwise_tree) */
    GpScalar v;
    v.u = 0;
    r->k(r->a, o, j0, n, &v);
    return v;
}

static void store_result(ReduceJob *r, int64_t o, GpScalar v)
{
    GpScalar acc = gp_reduce_identity(r->op, r->t);
    gp_reduce_combine(r->op, r->t, &acc, v);
    memcpy(r->out + o * (int64_t)r->elsize, &acc, r->elsize);
}

static void rows_task(void *ctx, int64_t t)
{
    ReduceJob *r = ctx;
    int T = threads_now();
    int64_t per = (r->outer + T * 4 - 1) / (T * 4);
    int64_t o0 = t * per, o1 = o0 + per;
    if (o1 > r->outer)
        o1 = r->outer;
    for (int64_t o = o0; o < o1; o++)
        store_result(r, o, reduce_row(r, o, 0, r->inner));
}

static void part_task(void *ctx, int64_t t)
{
    ReduceJob *r = ctx;
    r->partial[t] = reduce_row(r, 0, r->part_start[t], r->part_len[t]);
}

/* Splits [j0, j0+n) as NumPy's pairwise recursion does, depth levels deep,
 * recording the leaves in order. */
static void pairwise_parts(ReduceJob *r, int64_t j0, int64_t n, int depth)
{
    if (depth == 0 || n <= PW_BLOCK) {
        r->part_start[r->nparts] = j0;
        r->part_len[r->nparts] = n;
        r->nparts++;
        return;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    pairwise_parts(r, j0, n2, depth - 1);
    pairwise_parts(r, j0 + n2, n - n2, depth - 1);
}

/* Recombines the leaves of pairwise_parts in the recursion's own order. */
static GpScalar pairwise_combine(ReduceJob *r, int64_t n, int depth, int64_t *idx)
{
    if (depth == 0 || n <= PW_BLOCK)
        return r->partial[(*idx)++];
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    GpScalar x = pairwise_combine(r, n2, depth - 1, idx);
    GpScalar y = pairwise_combine(r, n - n2, depth - 1, idx);
    gp_reduce_combine(GP_OP_SUM, r->t, &x, y);
    return x;
}

static int run_reduce(GpReduceKernel k, const int64_t *a, GpOp op, GpDType t, int pairwise_order, int order_free,
                      char *out);

/* The flags of the serial parts (rows run by the caller, partial and
 * identity combines) are collected too, like those of the pool's tasks. */
int gp_run_reduce(GpReduceKernel k, const int64_t *a, GpOp op, GpDType t, int pairwise_order, int order_free, char *out)
{
    fexcept_t saved;
    fegetexceptflag(&saved, FE_ALL_EXCEPT);
    feclearexcept(FE_ALL_EXCEPT);
    int rc = run_reduce(k, a, op, t, pairwise_order, order_free, out);
    __atomic_fetch_or(&fp_flags, gp_fpe_of_fenv(fetestexcept(FE_ALL_EXCEPT)), __ATOMIC_RELAXED);
    fesetexceptflag(&saved, FE_ALL_EXCEPT);
    return rc;
}

static int run_reduce(GpReduceKernel k, const int64_t *a, GpOp op, GpDType t, int pairwise_order, int order_free,
                      char *out)
{
    ReduceJob *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    r->k = k;
    r->a = a;
    r->op = op;
    r->t = t;
    r->elsize = gp_dtype_size(t);
    r->pairwise = pairwise_order;
    r->order_free = order_free;
    r->outer = 1;
    for (int d = 0; d < a[0] - 1; d++)
        r->outer *= a[1 + d];
    r->inner = a[a[0]];
    r->out = out;
    int T = threads_now();
    int64_t total = r->outer * r->inner;
    if (r->outer == 1 && T > 1 && total >= 2 * GRAIN_ELEMS && (pairwise_order || order_free)) {
        if (pairwise_order) {
            int depth = 0;
            while ((1 << depth) < 4 * T && depth < 7)
                depth++;
            pairwise_parts(r, 0, r->inner, depth);
            gp_pool_run(part_task, r, r->nparts);
            int64_t idx = 0;
            store_result(r, 0, pairwise_combine(r, r->inner, depth, &idx));
        } else {
            /* bounded by the partial arrays, whatever the thread count */
            int64_t parts = 4 * T < GP_REDUCE_MAXPARTS ? 4 * T : GP_REDUCE_MAXPARTS;
            int64_t per = (r->inner + parts - 1) / parts;
            for (int64_t p = 0; p < parts; p++) {
                r->part_start[p] = p * per;
                r->part_len[p] = p * per >= r->inner ? 0 : (p * per + per > r->inner ? r->inner - p * per : per);
            }
            r->nparts = parts;
            gp_pool_run(part_task, r, parts);
            GpScalar acc = gp_reduce_identity(op, t);
            for (int64_t p = 0; p < parts; p++)
                gp_reduce_combine(op, t, &acc, r->partial[p]);
            store_result(r, 0, acc);
        }
    } else if (total >= 2 * GRAIN_ELEMS && r->outer >= 2 && T > 1) {
        gp_pool_run(rows_task, r, T * 4);
    } else {
        for (int64_t o = 0; o < r->outer; o++)
            store_result(r, o, reduce_row(r, o, 0, r->inner));
    }
    free(r);
    return 0;
}

/* ---- arg-reductions ------------------------------------------------------ */

typedef struct {
    GpReduceKernel k;
    const int64_t *a;
    int64_t outer, inner, parts, per;
    int64_t *out;
    GpArgResult *partial;
} ArgJob;

static void arg_rows_task(void *ctx, int64_t t)
{
    ArgJob *j = ctx;
    int64_t o0 = t * j->per, o1 = o0 + j->per < j->outer ? o0 + j->per : j->outer;
    for (int64_t o = o0; o < o1; o++) {
        GpArgResult r;
        memset(&r, 0, sizeof r);
        j->k(j->a, o, 0, j->inner, &r);
        j->out[o] = r.index;
    }
}

static void arg_part_task(void *ctx, int64_t t)
{
    ArgJob *j = ctx;
    int64_t j0 = t * j->per, n = j0 + j->per < j->inner ? j->per : j->inner - j0;
    memset(&j->partial[t], 0, sizeof j->partial[t]);
    j->partial[t].index = -1;
    if (n > 0)
        j->k(j->a, 0, j0, n, &j->partial[t]);
}

void gp_run_argreduce(GpReduceKernel k, const int64_t *a, GpOp op, GpDType t, int64_t *out)
{
    ArgJob j = {k, a, 1, a[a[0]], 0, 0, out, NULL};
    for (int d = 0; d < a[0] - 1; d++)
        j.outer *= a[1 + d];
    int T = threads_now();
    if (j.outer == 1 && T > 1 && j.inner >= 2 * GRAIN_ELEMS) {
        GpArgResult partial[64];
        j.parts = 4 * T < 64 ? 4 * T : 64;
        j.per = (j.inner + j.parts - 1) / j.parts;
        j.partial = partial;
        gp_pool_run(arg_part_task, &j, j.parts);
        GpArgResult best = partial[0];
        for (int64_t p = 1; p < j.parts; p++)
            if (partial[p].index >= 0 && gp_arg_better(op, t, partial[p].value, best.value))
                best = partial[p];
        out[0] = best.index;
        return;
    }
    int64_t tasks = j.outer * j.inner >= 2 * GRAIN_ELEMS && j.outer >= 2 ? 4 * T : 1;
    j.per = (j.outer + tasks - 1) / tasks;
    gp_pool_run(arg_rows_task, &j, tasks);
}
