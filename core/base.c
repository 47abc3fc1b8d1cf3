/* core/base.c -- the base layer every core file may use, and which uses
 * nothing of grumpy: counters, the core lock, fault injection, error text,
 * the clock, the op tables of ops.def, dtype sizes, the reductions'
 * identities and combining rules, the debug configuration.  Declared in
 * gp.h.
 *
 * The locks, in the order a thread may take them:
 *   1. the GIL (a thread holding the core lock that must wait for it -- the
 *      NumPy evaluator, the FP-flag replay, the shadow check -- lets go of
 *      the core lock first: gp_lock_release_all, gp_lock_reacquire);
 *   2. the core lock: the DAG, the buffers' producer/reader/device state,
 *      the planner, the JIT's tables, the explain records.  Not recursive:
 *      plan.h's entry points take it, everything they call expects it held
 *      (the "_locked" functions, dag.h), and no thread takes it twice
 *      (gp_stats.lock_reentries counts a violation; the tests fail on any,
 *      and a production run survives it as a nested hold, not a
 *      self-deadlock).  A fault on a thread that holds it is resolved on
 *      that thread without taking it again (guard.c);
 *   3. leaves, under which nothing else is taken or waited for: the
 *      guard's lock (registry, page cache, handler installation: guard.c),
 *      the kernel pool's mutex (runtime_cpu.c), the registry's seqlock
 *      (read without any lock by the fault handler).
 * The JIT library is loaded once under pthread_once (jit_load.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "gp.h"

#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

GpConfig gp_config;

GpSiteCounts gp_sites[GP_MAX_SITES];

GpStats gp_stats;

static pthread_mutex_t core_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int lock_held;    /* 1 while this thread holds core_lock */
static __thread int lock_reentry; /* gp_lock calls on a thread that held it (a bug) */

void gp_lock(void)
{
    if (lock_held) {
        /* a programming error: the core lock is not recursive.  Counted
         * (the test suite fails on any) and survived as a nested hold,
         * rather than deadlocking the process on itself */
        lock_reentry++;
        __atomic_add_fetch(&gp_stats.lock_reentries, 1, __ATOMIC_RELAXED);
        return;
    }
    pthread_mutex_lock(&core_lock);
    lock_held = 1;
}
void gp_unlock(void)
{
    if (lock_reentry) {
        lock_reentry--;
        return;
    }
    lock_held = 0;
    pthread_mutex_unlock(&core_lock);
}

/* fork(): the child gets only the forking thread, so a lock another thread
 * held would stay held forever.  The core lock is taken before fork() (the
 * forking thread waits until no kernel, plan or fault is in flight) and
 * given back in the parent; the child gets a fresh lock, held if the
 * forking thread held it before fork().  Registered once, by gp_core_init. */
static __thread int held_before_fork;
static void lock_before_fork(void)
{
    held_before_fork = lock_held;
    if (!held_before_fork)
        gp_lock();
}
static void lock_after_fork_parent(void)
{
    if (!held_before_fork)
        gp_unlock();
}
static void lock_after_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    core_lock = fresh;
    lock_held = 0;
    lock_reentry = 0;
    if (held_before_fork)
        gp_lock();
}
static void lock_register_fork(void)
{
    pthread_atfork(lock_before_fork, lock_after_fork_parent, lock_after_fork_child);
}

void gp_lock_init_fork(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, lock_register_fork);
}

int gp_lock_held(void) { return lock_held; }

int gp_lock_release_all(void)
{
    int held = lock_held ? 1 + lock_reentry : 0;
    lock_reentry = 0;
    if (held)
        gp_unlock();
    return held;
}
void gp_lock_reacquire(int held)
{
    if (held) {
        gp_lock();
        lock_reentry = held - 1;
    }
}

unsigned gp_fpe_of_fenv(int f)
{
    return (f & FE_DIVBYZERO ? GP_FPE_DIVIDE : 0u) | (f & FE_OVERFLOW ? GP_FPE_OVERFLOW : 0u) |
           (f & FE_UNDERFLOW ? GP_FPE_UNDERFLOW : 0u) | (f & FE_INVALID ? GP_FPE_INVALID : 0u);
}

int64_t gp_fail_at;

void gp_jit_counts_add(const GpJitCounts *c)
{
    gp_stats.cache_hits += c->cache_hits;
    gp_stats.disk_cache_hits += c->disk_cache_hits;
    gp_stats.kernels_compiled += c->kernels_compiled;
    gp_stats.jit_failures += c->jit_failures;
    gp_stats.compile_ns += c->compile_ns;
}

int gp_thread_create_quiet(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *))
{
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, attr, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static __thread int fail_points_off;
void gp_fail_points_off(void) { fail_points_off = 1; }

int gp_fail_now(void)
{
    if (fail_points_off)
        return 0;
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

/* ---- reductions -------------------------------------------------------- */

GpScalar gp_reduce_identity(GpOp op, GpDType t)
{
    GpScalar s;
    s.u = 0;
    int fl = gp_dtype_is_float(t);
    switch (op) {
    case GP_OP_PROD:
        if (t == GP_FLOAT32)
            s.f32 = 1.0f;
        else if (fl)
            s.f = 1.0;
        else
            s.u = 1;
        break;
    case GP_OP_ALL: s.u = 1; break;
    case GP_OP_MIN:
    case GP_OP_MAX: {
        int mx = op == GP_OP_MAX;
        if (t == GP_FLOAT32)
            s.f32 = mx ? -INFINITY : INFINITY; /* constants: 1.0 / 0.0 at run time raises divide-by-zero */
        else if (fl)
            s.f = mx ? -(double)INFINITY : (double)INFINITY;
        else if (gp_dtype_is_signed(t))
            s.i = mx ? -(int64_t)(1ull << (gp_dtype_size(t) * 8 - 1))
                     : (int64_t)((1ull << (gp_dtype_size(t) * 8 - 1)) - 1);
        else if (t == GP_BOOL)
            s.u = mx ? 0 : 1;
        else
            s.u = mx ? 0 : (gp_dtype_size(t) == 8 ? ~0ull : (1ull << (gp_dtype_size(t) * 8)) - 1);
        if (!fl && gp_dtype_size(t) < 8)
            s.u &= (1ull << (gp_dtype_size(t) * 8)) - 1;
        break;
    }
    default: break;
    }
    return s;
}

/* The C twin of reduce_step below, for combining per-thread partials.
 * LESS / GREATER: C's quiet isless / isgreater for floats (its < and >
 * signal "invalid" on a NaN partial, which NumPy's min does not). */
#define COMBINE_WITH(T, field, LESS, GREATER)                              \
    do {                                                                   \
        T x = (T)acc->field, y = (T)v.field, r;                            \
        switch (op) {                                                      \
        case GP_OP_SUM: r = (T)(x + y); break;                             \
        case GP_OP_PROD: r = (T)(x * y); break;                            \
        case GP_OP_MIN: r = (x != x) ? x : (LESS(x, y) ? x : y); break;    \
        case GP_OP_MAX: r = (x != x) ? x : (GREATER(x, y) ? x : y); break; \
        case GP_OP_ANY: r = (T)(x || y); break;                            \
        default: r = (T)(x && y); break;                                   \
        }                                                                  \
        acc->field = r;                                                    \
    } while (0)
#define INT_LESS(x, y) ((x) < (y))
#define INT_GREATER(x, y) ((x) > (y))
#define COMBINE(T, field) COMBINE_WITH(T, field, INT_LESS, INT_GREATER)

void gp_reduce_combine(GpOp op, GpDType t, GpScalar *acc, GpScalar v)
{
    union {
        GpScalar s;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        uint16_t u16;
        uint32_t u32;
    } a, b;
    a.s = *acc;
    b.s = v;
    switch (t) {
    case GP_FLOAT64: COMBINE_WITH(double, f, isless, isgreater); return;
    case GP_FLOAT32: COMBINE_WITH(float, f32, isless, isgreater); return;
    case GP_BOOL: {
        uint8_t x = acc->b != 0, y = v.b != 0;
        acc->u = op == GP_OP_SUM || op == GP_OP_MAX || op == GP_OP_ANY ? (x | y) : (x & y);
        return;
    }
    case GP_UINT8: COMBINE(uint8_t, b); return;
    case GP_UINT64: COMBINE(uint64_t, u); return;
    case GP_INT64: COMBINE(int64_t, i); return;
    default: break;
    }
    /* narrower integers: combine through a typed view of the union */
#define NARROW(T, fld)                            \
    do {                                          \
        T x = a.fld, y = b.fld, r;                \
        switch (op) {                             \
        case GP_OP_SUM: r = (T)(x + y); break;    \
        case GP_OP_PROD: r = (T)(x * y); break;   \
        case GP_OP_MIN: r = x < y ? x : y; break; \
        case GP_OP_MAX: r = x > y ? x : y; break; \
        case GP_OP_ANY: r = (T)(x || y); break;   \
        default: r = (T)(x && y); break;          \
        }                                         \
        a.fld = r;                                \
    } while (0)
    switch (t) {
    case GP_INT8: NARROW(int8_t, i8); break;
    case GP_INT16: NARROW(int16_t, i16); break;
    case GP_INT32: NARROW(int32_t, i32); break;
    case GP_UINT16: NARROW(uint16_t, u16); break;
    case GP_UINT32: NARROW(uint32_t, u32); break;
    default: break;
    }
    *acc = a.s;
}

/* Whether value v (at a later index) replaces cur, NumPy's rules. */
int gp_arg_better(GpOp op, GpDType t, GpScalar v, GpScalar cur)
{
    int mn = op == GP_OP_ARGMIN;
#define CMP(T, f)                   \
    do {                            \
        T x = (T)v.f, y = (T)cur.f; \
        if (y != y)                 \
            return 0;               \
        if (x != x)                 \
            return 1;               \
        return mn ? x < y : x > y;  \
    } while (0)
    switch (t) {
    case GP_FLOAT64: CMP(double, f);
    case GP_FLOAT32: CMP(float, f32);
    case GP_INT8: CMP(int8_t, i);
    case GP_INT16: CMP(int16_t, i);
    case GP_INT32: CMP(int32_t, i);
    case GP_INT64: CMP(int64_t, i);
    case GP_UINT8:
    case GP_BOOL: CMP(uint8_t, u);
    case GP_UINT16: CMP(uint16_t, u);
    case GP_UINT32: CMP(uint32_t, u);
    default: CMP(uint64_t, u);
    }
#undef CMP
}
