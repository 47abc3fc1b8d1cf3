/* hooks/allocator.c -- the NumPy memory handler (NEP 49) that makes large
 * buffers page-guarded.
 *
 * Every NumPy allocation of GP_GUARD_MIN_BYTES or more made while capture
 * is on (in the context where grumpy.enable() ran) is a registered
 * page-aligned mapping (core/guard.c), so a pending array's buffer can be
 * PROT_NONE until computed.  free() from NumPy drops the array's claim: a
 * still-pending node then continues as an intermediate.  Called by NumPy
 * with the GIL held (or not: NumPy frees some buffers without it).
 */
#include "hooks.h"

#include <malloc.h>
#include <string.h>

/* ---- NEP 49 memory handler --------------------------------------------- */

/* Set around the allocation of a pending array's buffer (GIL held). */
int gp_allocating_pending;

/* NumPy's own handler (NEP 49: PyDataMem_DefaultHandler), which makes
 * the allocations grumpy neither guards nor aligns (below 4 KiB, and from
 * 4 MiB: cache_line_aligned below): NumPy's small-block cache
 * (blocks under 1 KiB, the data of 0-d arrays and of NumPy's scalar
 * operands, reused without a malloc) and its huge-page advice, as without
 * grumpy.  With plain malloc instead, `p + 1.0` of a small plain p cost a
 * malloc and a free more per operation, and the small freed chunks made
 * glibc consolidate its fast bins at the next larger malloc: 1.9 against
 * 1.6 us an operation.  NumPy's cache is used under the GIL only (its own
 * rule); a call without it takes malloc and free, which a cached block
 * (malloc's own) also goes back to.  Set by gp_allocator_init. */
static PyDataMem_Handler *numpy_handler;

void gp_allocator_init(void)
{
    numpy_handler = PyCapsule_GetPointer(PyDataMem_DefaultHandler, "mem_handler");
    if (!numpy_handler)
        PyErr_Clear(); /* (plain malloc then) */
}

static int numpy_handler_usable(void) { return numpy_handler && PyGILState_Check(); }

/* Plain buffers from 4 KiB up to NumPy's huge-page size start on a
 * cache line (64 bytes).  glibc's malloc puts a 16-byte header before each
 * chunk, so NumPy's same-sized arrays of 2^k bytes, allocated one after the
 * other, start 16 or 32 bytes apart modulo 4096; a loop that stores out[i]
 * while it loads from an array starting 16-48 bytes from out, either way,
 * modulo 4096, makes loads wait on stores they only seem to depend on
 * ("4K aliasing" in Intel's optimization reference manual), and NumPy's
 * own `a * b` ran at half speed: 16-20 against 8-10 us at 256 KiB, 1.4-2.0
 * against 0.95 at 16 KiB (`python tools/aliasing.py`: the output placed
 * 0-4080 bytes from its operands).  Arrays that all start on a cache line are 0 or 64+ bytes
 * apart, where no load waits.  From 4 MiB NumPy's handler mallocs (glibc
 * mmaps: every such buffer starts at the same page offset) and advises huge
 * pages; below 4 KiB its handler keeps its small-block cache. */
#define ALIGNED_MIN_BYTES ((size_t)4 << 10)
#define ALIGNED_MAX_BYTES ((size_t)4 << 20) /* NumPy's huge-page threshold */
#define ALIGNED_TO_BYTES ((size_t)64)

static int cache_line_aligned(size_t bytes) { return bytes >= ALIGNED_MIN_BYTES && bytes < ALIGNED_MAX_BYTES; }

/* Freed aligned blocks kept for the next request they fit, most recent
 * last: a loop's temporaries of one size take the same blocks back without
 * glibc.  (glibc's memalign cost 60-80 ns more than a malloc, and its
 * split-off remainders could leave the heap's top above the trim threshold
 * after each free: `c = a + b` of 256 KiB grew and trimmed the heap, one
 * brk and 64 page faults a statement, 46 us against NumPy's 17.)  At most
 * ALIGNED_CACHE_SLOTS blocks and ALIGNED_CACHE_MAX_BYTES bytes; `usable`
 * is malloc_usable_size's, not the size NumPy passes to free.  Guarded by
 * aligned_cache_busy, a try-lock taken with an atomic exchange: NumPy
 * allocates and frees some buffers without the GIL (sort's scratch), and
 * PyGILState_Check answers 1 on every thread once a subinterpreter exists;
 * a call that finds it taken goes to aligned_alloc or free. */
#define ALIGNED_CACHE_SLOTS 8
#define ALIGNED_CACHE_MAX_BYTES ((size_t)8 << 20)

static struct {
    void *ptr;
    size_t usable; /* bytes */
} aligned_cache[ALIGNED_CACHE_SLOTS];
static int aligned_cached;          /* slots in use */
static size_t aligned_cached_bytes; /* their usable bytes */
static int aligned_cache_busy;      /* 1 while a thread reads or changes the three above */

static int aligned_cache_try_lock(void) { return !__atomic_exchange_n(&aligned_cache_busy, 1, __ATOMIC_ACQUIRE); }

static void aligned_cache_unlock(void) { __atomic_store_n(&aligned_cache_busy, 0, __ATOMIC_RELEASE); }

size_t gp_allocator_cached_bytes(void) { return __atomic_load_n(&aligned_cached_bytes, __ATOMIC_RELAXED); }

static void aligned_cache_remove(int i)
{
    __atomic_store_n(&aligned_cached_bytes, aligned_cached_bytes - aligned_cache[i].usable, __ATOMIC_RELAXED);
    memmove(&aligned_cache[i], &aligned_cache[i + 1], (size_t)(aligned_cached - i - 1) * sizeof aligned_cache[0]);
    aligned_cached--;
}

/* size: bytes, ALIGNED_MIN_BYTES to ALIGNED_MAX_BYTES.  A cached block is
 * taken when it holds size bytes and wastes at most a quarter more (a loop
 * over slowly shrinking arrays reuses the last one, as malloc's heap
 * would).  free() takes every block back (glibc's aligned_alloc).  NULL
 * when out of memory (NumPy's MemoryError). */
static void *aligned_malloc(size_t size)
{
    if (aligned_cache_try_lock()) {
        for (int i = aligned_cached - 1; i >= 0; i--) {
            if (aligned_cache[i].usable < size || aligned_cache[i].usable - size > size / 4)
                continue;
            void *p = aligned_cache[i].ptr;
            aligned_cache_remove(i);
            aligned_cache_unlock();
            return p;
        }
        aligned_cache_unlock();
    }
    return aligned_alloc(ALIGNED_TO_BYTES, (size + ALIGNED_TO_BYTES - 1) & ~(ALIGNED_TO_BYTES - 1));
}

/* Keeps ptr (a malloc'ed block NumPy frees) when it is a cache-line-aligned
 * block of the cached sizes and the cache is free; returns 0 otherwise (the
 * caller frees it).  The oldest blocks make room (freed after the unlock). */
static int aligned_keep(void *ptr)
{
    if ((uintptr_t)ptr & (ALIGNED_TO_BYTES - 1))
        return 0;
    size_t usable = malloc_usable_size(ptr);
    if (!cache_line_aligned(usable) || !aligned_cache_try_lock())
        return 0;
    void *evicted[ALIGNED_CACHE_SLOTS];
    int n_evicted = 0;
    while (aligned_cached &&
           (aligned_cached == ALIGNED_CACHE_SLOTS || aligned_cached_bytes + usable > ALIGNED_CACHE_MAX_BYTES)) {
        evicted[n_evicted++] = aligned_cache[0].ptr;
        aligned_cache_remove(0);
    }
    aligned_cache[aligned_cached].ptr = ptr;
    aligned_cache[aligned_cached].usable = usable;
    aligned_cached++;
    __atomic_store_n(&aligned_cached_bytes, aligned_cached_bytes + usable, __ATOMIC_RELAXED);
    aligned_cache_unlock();
    while (n_evicted)
        free(evicted[--n_evicted]);
    return 1;
}

static void *plain_malloc(size_t size)
{
    size = size ? size : 1;
    if (cache_line_aligned(size))
        return aligned_malloc(size);
    return numpy_handler_usable() ? numpy_handler->allocator.malloc(numpy_handler->allocator.ctx, size) : malloc(size);
}

/* n * size: checked for overflow by the caller */
static void *plain_calloc(size_t n, size_t size)
{
    n = n ? n : 1;
    size = size ? size : 1;
    if (cache_line_aligned(n * size)) {
        void *p = aligned_malloc(n * size);
        return p ? memset(p, 0, n * size) : NULL;
    }
    return numpy_handler_usable() ? numpy_handler->allocator.calloc(numpy_handler->allocator.ctx, n, size)
                                  : calloc(n, size);
}

static void *plain_realloc(void *ptr, size_t size)
{
    return numpy_handler_usable() ? numpy_handler->allocator.realloc(numpy_handler->allocator.ctx, ptr, size)
                                  : realloc(ptr, size);
}

/* size: the bytes the block was asked for (NumPy's cache files it by them) */
static void plain_free(void *ptr, size_t size)
{
    if (cache_line_aligned(size) && aligned_keep(ptr))
        return;
    if (numpy_handler_usable())
        numpy_handler->allocator.free(numpy_handler->allocator.ctx, ptr, size);
    else
        free(ptr);
}

/* Allocations below this many bytes are plain (plain_malloc: NumPy's
 * handler's, or cache-line-aligned from 4 KiB): grumpy never makes them
 * pending (GRUMPY_MIN_BYTES), and small leaves are copied when read
 * lazily, so NumPy's small temporaries cost nothing extra. */
static size_t guarded_min(void)
{
    return (size_t)gp_hooks.min_bytes > gp_guard_min_bytes() ? (size_t)gp_hooks.min_bytes : gp_guard_min_bytes();
}

static void *handler_malloc(void *ctx, size_t size)
{
    (void)ctx;
    if ((size < guarded_min() || gp_paused) && !gp_allocating_pending)
        return plain_malloc(size);
    /* a pending result too small to guard is computed at once and copied
     * in (gp_array_for_node): plain memory, no GpBuffer to keep track of */
    if (size < gp_guard_min_bytes())
        return plain_malloc(size);
    if (gp_allocating_pending && gp_guard_broken())
        return plain_malloc(size); /* nothing can be deferred: the result is computed at once */
    GpBuffer *b = gp_allocating_pending ? gp_buffer_reserve(size) : gp_buffer_alloc_uninit(size);
    return b ? b->data : NULL; /* a reservation that broke the guard is left open: computed at once */
}

static void *handler_calloc(void *ctx, size_t n, size_t size)
{
    (void)ctx;
    if (size && n > SIZE_MAX / size)
        return NULL;
    if (n * size < guarded_min() || gp_paused)
        return plain_calloc(n, size);
    GpBuffer *b = gp_buffer_alloc(n * size); /* fresh mappings are zero */
    return b ? b->data : NULL;
}

/* NumPy computes every result, and warns for its IEEE flags, even one
 * nobody reads.  A pending result whose array dies unread and that no
 * pending node uses (nothing but the buffer holds its node) is computed before its memory goes, when its error
 * state watches any category: its warnings come at the statement that
 * dropped it, as NumPy's do (pytest.warns around `x.astype(np.int8)`).
 * A warning made an error here cannot propagate: it is reported as
 * unraisable. */
static void compute_if_unread(GpBuffer *b)
{
    /* not inside the core (NumPy called by the NumPy back end or the FP-flag
     * replay frees its temporaries there): nothing is computed in a kernel */
    if (!PyGILState_Check() || gp_lock_held())
        return;
    gp_lock();
    GpNode *n = b->owner;
    if (n && (n != b->producer || n->materialized || n->evaluated || n->viewed || n->refcnt > 1 || !n->errstate))
        n = NULL;
    /* or a pending write into it (np.copyto(fresh, x), fill): nothing can
     * read the array any more, but NumPy would have written it and warned */
    GpNode *w = b->writer;
    if (!n && w && w == b->producer && !w->materialized && !w->evaluated && w->errstate)
        n = w;
    if (n)
        gp_node_incref(n);
    gp_unlock();
    if (!n)
        return;
    if (!gp_py_is_finalizing()) {
        /* freed while an exception propagates: it stays the one raised */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (gp_materialize_or_raise(n) < 0)
            PyErr_WriteUnraisable(NULL);
        PyErr_Restore(et, ev, tb);
    }
    gp_node_release(n);
}

/* glibc's dynamic mmap threshold (its malloc.c, free(): a freed mmapped
 * chunk larger than the threshold, up to DEFAULT_MMAP_THRESHOLD_MAX,
 * raises the threshold to its size and the heap's trim threshold to twice
 * that).  Without grumpy NumPy's large buffers are malloc'ed and freed, so
 * after the first one glibc serves the smaller ones from the heap and
 * keeps the heap's top; grumpy's guarded buffers never reach free(), so
 * the thresholds stayed at 128 KiB and every 512 KiB block of
 * np.histogram's loop grew and trimmed the heap (5692 brk calls against
 * 42 in 40 calls, its pages faulted in again each time: 84 ms a call
 * against NumPy's 41).  So a guarded buffer freed at a size glibc has not
 * been shown yet is shown to it: a malloc and a free of that size (an
 * mmap and munmap with one page touched, or a heap chunk when glibc's
 * threshold is above it already), and glibc adjusts itself by its own
 * rule -- it never lowers a threshold, and leaves one the user fixed
 * (mallopt, MALLOC_MMAP_THRESHOLD_) alone.  At most once per new largest
 * size from glibc's default to its cap. */
#define GLIBC_MMAP_THRESHOLD_MIN ((size_t)128 << 10) /* DEFAULT_MMAP_THRESHOLD */
#define GLIBC_MMAP_THRESHOLD_MAX ((size_t)32 << 20)  /* 4 * 1024 * 1024 * sizeof(long) */

static void show_free_to_malloc(size_t bytes)
{
    static size_t shown = GLIBC_MMAP_THRESHOLD_MIN;
    if (bytes > GLIBC_MMAP_THRESHOLD_MAX)
        return; /* (glibc leaves the thresholds alone above it) */
    size_t cur = __atomic_load_n(&shown, __ATOMIC_RELAXED);
    while (bytes > cur) {
        if (__atomic_compare_exchange_n(&shown, &cur, bytes, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            void *volatile p = malloc(bytes); /* (volatile: the compiler drops a malloc freed unused) */
            free(p);
            return;
        }
    }
}

static void handler_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    if (!ptr)
        return;
    GpBuffer *b = gp_buffer_lookup(ptr);
    if (!b || b->data != (char *)ptr) {
        plain_free(ptr, size);
        return;
    }
    show_free_to_malloc(b->nbytes);
    compute_if_unread(b);
    /* NumPy frees inside the core too, where this thread holds the core
     * lock (NumPy called by the NumPy back end or the FP-flag replay): the
     * one place the hooks are called back from inside it */
    int took = !gp_lock_held();
    if (took)
        gp_lock();
    GpNode *owner = b->owner;
    b->owner = NULL;
    b->freed = 1;
    if (owner) {
        gp_node_drop_output(owner);
        gp_node_decref(owner);
    }
    gp_buffer_drop_writer(b);
    gp_buffer_decref(b);
    if (took)
        gp_unlock();
}

static void *handler_realloc(void *ctx, void *ptr, size_t size)
{
    if (!ptr)
        return handler_malloc(ctx, size);
    GpBuffer *b = gp_buffer_lookup(ptr);
    if (!b || b->data != (char *)ptr) {
        if (size < guarded_min() || gp_paused)
            return plain_realloc(ptr, size);
        size_t old = malloc_usable_size(ptr);
        void *p = handler_malloc(ctx, size);
        if (p) {
            memcpy(p, ptr, old < size ? old : size);
            free(ptr); /* (not to NumPy's cache: its size is not known here) */
        }
        return p;
    }
    if (gp_lock_held()) /* inside the core, as in handler_free */
        gp_buffer_materialize_locked(b);
    else
        gp_buffer_materialize(b);
    void *p = handler_malloc(ctx, size);
    if (p) {
        memcpy(p, ptr, b->nbytes < size ? b->nbytes : size);
        handler_free(ctx, ptr, b->nbytes);
    }
    return p;
}

PyDataMem_Handler gp_mem_handler = {
    "grumpy_guarded",
    1,
    {NULL, handler_malloc, handler_calloc, handler_realloc, handler_free},
};
