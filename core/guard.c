/* core/guard.c -- page-guarded buffers and the fault handler that keeps
 * memory coherent (DESIGN.md section 3).
 *
 * 1. gp_buffer_alloc maps whole pages (mmap), so protecting a buffer never
 *    touches memory that is not its own; large mappings get transparent huge
 *    pages as NumPy's own allocator asks for.
 * 2. The registry is an array of buffers sorted by address; lookups are a
 *    binary search under the guard's lock (a leaf: below).
 * 3. The SIGSEGV handler asks, without a lock, whether the fault address
 *    lies in a guarded buffer; if so it hands the address to the resolver
 *    thread, which calls the resolver plan.c registers (gp_core_init:
 *    compute the producer, or the pending readers before a write) in
 *    ordinary thread context, and the handler returns to retry the access.
 *    The hooks compute pending arrays before handing them to NumPy's C code
 *    (element reads, index arrays, buffer exports, every fallback), so
 *    faults come from code that reads memory without asking (C extensions,
 *    ctypes).  The handler itself only posts and waits on semaphores:
 *    a kernel that cannot be compiled is computed there by NumPy's own
 *    inner loops without the GIL (hooks/eval_loops.c), and the resolver
 *    runs whenever a buffer can fault (protect: none is deferred without
 *    it; a child after os.fork() starts its own at once).  Only grumpy's own
 *    code -- the resolver thread, or a thread holding the core lock --
 *    has its faults resolved on itself (counted: guard_faults_inline).  A
 *    fault it does not own, or one that could not be resolved, goes to
 *    the previous handler (faulthandler, or the default action).
 *
 * Why not libsigsegv: it replaces the previous handler rather than chaining
 * to it, and faulthandler must keep working for crashes that are not ours.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define POOL_SLOTS 64

/* A registry entry: a copy of a buffer's address range (below). */
typedef struct {
    char *data;
    size_t mapped;
    GpBuffer *b;
} Range;
typedef struct {
    size_t cap;
    Range r[];
} Table;

/* A mapping kept for reuse (the page cache, the spare reservations):
 * one of the kernel's mappings or a piece of one (mremap moves only
 * those), never neighbours joined (pool_put). */
typedef struct {
    char *data;
    size_t mapped;
} Mapping;

/* Freed mappings kept for reuse, oldest first, bounded in count and bytes
 * (pool_take, pool_put; under guard_lock). */
typedef struct {
    Mapping m[POOL_SLOTS];
    int len;
    size_t bytes;
} Pool;

/* A fault handed to the resolver thread, on the waiting handler's stack. */
typedef struct Request {
    void *addr;
    int ok; /* the buffer is accessible now */
    sem_t done;
    struct Request *next;
} Request;

/* At most this many pages of zeros answer accesses just outside buffers
 * (map_scratch). */
#define SCRATCH_PAGES 64

/* The guard's state, for the process (per-thread state -- in a handler, on
 * the resolver thread, the private resolve stack -- is __thread, beside
 * its code).
 *
 * guard_lock guards the registry, the page cache, the signal handlers'
 * installation and the resolver's start (the live-buffer counters are
 * atomic).
 * It is a leaf under the core lock (base.c): nothing else is locked,
 * waited for or called up while it is held, so the allocator may take it
 * on any thread, inside the core or not.  A buffer's last reference is
 * dropped under the core lock (gp_buffer_decref), so a buffer found under
 * the core lock stays valid while that lock is held. */
static struct {
    pthread_mutex_t guard_lock;
    /* under guard_lock: */
    Table *registry; /* sorted by address (the registry, below) */
    size_t registry_len;
    unsigned registry_seq;                        /* odd while the registry changes (read without a lock) */
    Pool cache;                                   /* freed populated, writable mappings */
    Pool spare;                                   /* freed reservations (address space, inaccessible, no pages) */
    struct sigaction previous_segv, previous_bus; /* the handlers ours chains to */
    int resolver_state;                           /* 0 none, 1 running, -1 could not start (read atomically) */
    int restart_in_child;                         /* the child of a fork() must start its own resolver */
    /* atomic: */
    int guard_broken;     /* a protection failed: nothing more is deferred (gp_guard_broken) */
    uint64_t prot_epochs; /* the last GpBuffer.prot_epoch given (set_prot) */
    Request *requests;    /* lock-free stack: pushed by handlers, taken whole by the resolver */
    /* set at enable, before buffers exist: */
    size_t guard_min; /* GP_GUARD_MIN_BYTES, or less for tests (gp_guard_set_min_bytes) */
    /* others: */
    size_t page_size;    /* set at the first allocation (idempotent) */
    int self_mem;        /* /proc/self/mem, or -1; opened under the core lock when a stage needs it */
    sem_t resolver_wake; /* initialised by resolver_start; posted by handlers, waited on by the resolver */
    /* atomic, changed by the fault handler (map_scratch): */
    void *scratch[SCRATCH_PAGES]; /* pages of zeros mapped next to buffers, or NULL */
    unsigned scratch_next;        /* the slot the next one takes (modulo SCRATCH_PAGES) */
} G = {
    .guard_lock = PTHREAD_MUTEX_INITIALIZER,
    .guard_min = GP_GUARD_MIN_BYTES,
    .self_mem = -1,
};

/* b's protection is now prot (its pages have it), and b->prot_epoch a
 * number no buffer had before: its contents may have changed (the
 * hooks' gather keeps an index check while the epoch of its read-only
 * index buffer stays). */
static void set_prot(GpBuffer *b, int prot)
{
    b->prot = prot;
    b->prot_epoch = __atomic_add_fetch(&G.prot_epochs, 1, __ATOMIC_RELAXED);
}

/* fork(): the guard's lock is taken before and given back after, in the
 * parent; the child gets a fresh one, closes /proc/self/mem and forgets
 * the resolver thread (below).  Registered once, by gp_core_init, outside
 * any lock (glibc before 2.36 holds its fork-handler lock while running
 * prepare handlers, and pthread_atfork takes it). */
static void self_mem_after_fork_child(void);
static void resolver_after_fork_child(void);
static void guard_lock_before_fork(void) { pthread_mutex_lock(&G.guard_lock); }
static void guard_lock_after_fork_parent(void) { pthread_mutex_unlock(&G.guard_lock); }
static void guard_lock_after_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    G.guard_lock = fresh;
    self_mem_after_fork_child();
    resolver_after_fork_child();
}
static void guard_register_fork(void)
{
    pthread_atfork(guard_lock_before_fork, guard_lock_after_fork_parent, guard_lock_after_fork_child);
}
void gp_guard_init_fork(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, guard_register_fork);
}

void (*gp_guard_resolve)(GpBuffer *b);
void (*gp_guard_before_first_fault)(void);

/* Guarded mappings of at least this many bytes start on a huge page
 * boundary and are madvised MADV_HUGEPAGE (GRUMPY_HUGEPAGES=0: not): an
 * mprotect walks every 4 KiB page table entry, ~25 us per MiB on these
 * machines (54 us for 2 MiB populated, 1.2 us as one huge page), and a
 * write captured into a populated buffer protects it twice.  NumPy
 * madvises its own allocations from 4 MiB. */
#define HUGE_BYTES ((size_t)2 << 20)

/* The system calls on buffers: each is a failable step (gp_fail_now,
 * GRUMPY_DEBUG_FAIL), failing as the kernel does when out of memory. */
static void *map_pages(size_t n, int prot)
{
    if (gp_fail_now()) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    __atomic_add_fetch(&gp_stats.maps, 1, __ATOMIC_RELAXED);
    if (n < HUGE_BYTES)
        return mmap(NULL, n, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* from HUGE_BYTES on, the start on a huge page boundary, so that its
     * pages can be transparent huge pages (madvised by the callers):
     * address space reserved inaccessible (not charged), the head and the
     * tail given back (a failure leaves address space only), then the
     * range opened (charged now, as a writable mmap would be) */
    size_t align = HUGE_BYTES;
    char *m = mmap(NULL, n + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return mmap(NULL, n, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t head = (align - (uintptr_t)m % align) % align;
    if (head)
        munmap(m, head);
    munmap(m + head + n, align - head);
    if (prot != PROT_NONE && mprotect(m + head, n, prot) != 0) {
        munmap(m + head, n);
        return MAP_FAILED;
    }
    return m + head;
}

/* Every protection of a buffer that can fault goes back on top of the
 * signal handlers first (two sigaction calls beside the mprotect): a
 * handler installed after ours from C (sigaction, which the Python-level
 * patches do not see) would otherwise get our faults and not pass them on. */
static int protect(void *p, size_t n, int prot)
{
    if (gp_fail_now()) {
        errno = ENOMEM;
        return -1;
    }
    if (prot != (PROT_READ | PROT_WRITE)) {
        static int prepared;
        /* a buffer that can fault needs the resolver thread: without one
         * nothing is deferred (guard_broken: the hooks compute at once) */
        if (gp_guard_install() != 0 || __atomic_load_n(&G.resolver_state, __ATOMIC_ACQUIRE) != 1) {
            __atomic_store_n(&G.guard_broken, 1, __ATOMIC_RELAXED);
            errno = EAGAIN;
            return -1;
        }
        /* a plain load first: protect runs once per result, the exchange once */
        if (gp_guard_before_first_fault && !__atomic_load_n(&prepared, __ATOMIC_RELAXED) &&
            !__atomic_exchange_n(&prepared, 1, __ATOMIC_ACQ_REL))
            gp_guard_before_first_fault();
    }
    __atomic_add_fetch(&gp_stats.protects, 1, __ATOMIC_RELAXED);
    return mprotect(p, n, prot);
}

static void *move_onto(void *from, size_t n, void *to)
{
    if (gp_fail_now()) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return mremap(from, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, to);
}

/* Set when a buffer that must become inaccessible or read-only could not
 * be made so: the hooks then compute everything pending and stop capturing
 * (a pending value no longer faults when read). */
int gp_guard_broken(void) { return __atomic_load_n(&G.guard_broken, __ATOMIC_RELAXED); }

void gp_guard_set_min_bytes(size_t n) { G.guard_min = n > 0 ? n : 1; }
size_t gp_guard_min_bytes(void) { return G.guard_min; }

/* The registry: the guarded buffers' address ranges, sorted by address.
 * Changed under the guard's lock; read by the fault handler *without* it
 * first (a fault that is not ours -- a crash in an OpenBLAS thread while
 * another thread holds the lock waiting for it -- must not wait for the
 * lock): a sequence lock, odd while a change is in progress, and tables
 * that are never freed (a grown table replaces the old one, which stays
 * readable; together at most twice the largest), each range a copy of
 * the buffer's address and length, so the unlocked read never touches a
 * buffer that may be freed meanwhile. */

static void registry_change_begin(void)
{
    __atomic_store_n(&G.registry_seq, G.registry_seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void registry_change_end(void) { __atomic_store_n(&G.registry_seq, G.registry_seq + 1, __ATOMIC_RELEASE); }

/* First index of t (len entries) whose range starts after addr. */
static size_t find_index_in(const Table *t, size_t len, const void *addr)
{
    size_t lo = 0, hi = len;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((const char *)__atomic_load_n(&t->r[mid].data, __ATOMIC_RELAXED) <= (const char *)addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t find_index(const void *addr) { return G.registry ? find_index_in(G.registry, G.registry_len, addr) : 0; }

GpBuffer *gp_buffer_lookup(const void *addr)
{
    pthread_mutex_lock(&G.guard_lock);
    GpBuffer *found = NULL;
    size_t i = find_index(addr);
    if (i > 0 && (const char *)addr < G.registry->r[i - 1].data + G.registry->r[i - 1].mapped)
        found = G.registry->r[i - 1].b;
    pthread_mutex_unlock(&G.guard_lock);
    return found;
}

/* Where addr lies, read without the core lock (the fault handler's first
 * question; async-signal-safe): ADDR_IN_BUFFER in a guarded buffer,
 * ADDR_NEXT_TO_BUFFER in the page before a guarded buffer's first byte or in
 * the page after its mapping (map_scratch), else ADDR_ELSEWHERE. */
enum { ADDR_ELSEWHERE, ADDR_IN_BUFFER, ADDR_NEXT_TO_BUFFER };

static int where_in_registry(const void *addr)
{
    const char *a = addr;
    size_t pg = __atomic_load_n(&G.page_size, __ATOMIC_RELAXED);
    for (;;) {
        unsigned seq = __atomic_load_n(&G.registry_seq, __ATOMIC_ACQUIRE);
        if (seq & 1)
            continue; /* a change in progress on another thread: a few stores */
        Table *t = __atomic_load_n(&G.registry, __ATOMIC_ACQUIRE);
        size_t len = __atomic_load_n(&G.registry_len, __ATOMIC_RELAXED);
        int where = ADDR_ELSEWHERE;
        if (t) {
            if (len > t->cap)
                len = t->cap;                       /* a table being replaced: the check below retries */
            size_t i = find_index_in(t, len, addr); /* entries [0, i) start at or below addr */
            if (i > 0) {
                const char *end = (const char *)__atomic_load_n(&t->r[i - 1].data, __ATOMIC_RELAXED) +
                                  __atomic_load_n(&t->r[i - 1].mapped, __ATOMIC_RELAXED);
                where = a < end ? ADDR_IN_BUFFER : (size_t)(a - end) < pg ? ADDR_NEXT_TO_BUFFER : where;
            }
            if (where == ADDR_ELSEWHERE && i < len &&
                (size_t)((const char *)__atomic_load_n(&t->r[i].data, __ATOMIC_RELAXED) - a) <= pg)
                where = ADDR_NEXT_TO_BUFFER;
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&G.registry_seq, __ATOMIC_RELAXED) == seq)
            return where;
    }
}

/* NumPy's buffers come from malloc, whose blocks have a header before them
 * and neighbours after them, so C code that reads one element before or
 * after an array (an off-by-one: scikit-learn 1.9's MAE criterion reads
 * `left_medians[pos - 1]` at pos 0) gets some other bytes and goes on.  A
 * guarded buffer is a mapping of its own, often with nothing mapped next to
 * it, where the same read would end the program.  So a fault on an
 * unmapped page (SEGV_MAPERR) within a page of a buffer is answered with a
 * page of zeros mapped there, readable and writable (an off-by-one write
 * lands in it), and the access is retried: 1 done, 0 not (then the fault
 * goes down the chain).  At most SCRATCH_PAGES such pages are kept, the
 * oldest unmapped to make room (an access to it faults and maps it again;
 * a value written there may then read back as 0, where malloc kept it).
 * MAP_FIXED_NOREPLACE never replaces a mapping.  Async-signal-safe. */
static int map_scratch(const void *addr)
{
    size_t pg = __atomic_load_n(&G.page_size, __ATOMIC_RELAXED);
    char *page = (char *)((uintptr_t)addr & ~(uintptr_t)(pg - 1));
    void *p = mmap(page, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        /* EEXIST: mapped since the fault (another thread's scratch page for
         * the same access): retried, the access works or faults as SEGV_ACCERR */
        return errno == EEXIST;
    if (p != page) { /* a kernel before 4.17 takes the address as a hint */
        munmap(p, pg);
        return 0;
    }
    unsigned slot = __atomic_fetch_add(&G.scratch_next, 1, __ATOMIC_RELAXED) % SCRATCH_PAGES;
    void *old = __atomic_exchange_n(&G.scratch[slot], page, __ATOMIC_ACQ_REL);
    if (old)
        munmap(old, pg);
    __atomic_add_fetch(&gp_stats.guard_scratch_pages, 1, __ATOMIC_RELAXED);
    return 1;
}

/* Stores one entry field by field with atomic stores (the unlocked reader
 * loads them atomically: a sequence lock's reads race by design). */
static void set_range(Range *dst, const Range *src)
{
    __atomic_store_n(&dst->data, src->data, __ATOMIC_RELAXED);
    __atomic_store_n(&dst->mapped, src->mapped, __ATOMIC_RELAXED);
    __atomic_store_n(&dst->b, src->b, __ATOMIC_RELAXED);
}

static int registry_add(GpBuffer *b)
{
    if (!G.registry || G.registry_len == G.registry->cap) {
        size_t cap = G.registry ? 2 * G.registry->cap : 256;
        Table *t = malloc(sizeof *t + cap * sizeof(Range));
        if (!t)
            return -1;
        t->cap = cap;
        if (G.registry)
            memcpy(t->r, G.registry->r, G.registry_len * sizeof(Range));
        /* the old table is left allocated: an unlocked reader may hold it */
        __atomic_store_n(&G.registry, t, __ATOMIC_RELEASE);
    }
    registry_change_begin();
    size_t i = find_index(b->data);
    for (size_t k = G.registry_len; k > i; k--)
        set_range(&G.registry->r[k], &G.registry->r[k - 1]);
    set_range(&G.registry->r[i], &(Range){b->data, b->mapped, b});
    __atomic_store_n(&G.registry_len, G.registry_len + 1, __ATOMIC_RELAXED);
    registry_change_end();
    return 0;
}

static void registry_remove(GpBuffer *b)
{
    size_t i = find_index(b->data);
    if (i > 0 && G.registry->r[i - 1].b == b) {
        registry_change_begin();
        for (size_t k = i - 1; k + 1 < G.registry_len; k++)
            set_range(&G.registry->r[k], &G.registry->r[k + 1]);
        __atomic_store_n(&G.registry_len, G.registry_len - 1, __ATOMIC_RELAXED);
        registry_change_end();
    }
}

/* Freed mappings kept for reuse, so a loop that allocates the same or
 * shrinking sizes every iteration does not page-fault fresh memory each
 * time: glibc's malloc reuses freed heap memory the same way below its
 * mmap threshold (which grows to 32 MiB on 64-bit as large blocks are
 * freed), and NumPy's own results come from there.  A request takes the
 * smallest cached mapping that holds it (best fit); one with more than an
 * eighth to spare is split, as malloc splits a free chunk: the tail, its
 * pages kept, goes back to the pool, so a buffer never holds more than 1/8
 * slack.  Bounded in count and bytes; the oldest
 * is unmapped first.  A pending output is given fresh address space when
 * recorded (most are never written: they are fused away) and a cached
 * mapping is moved under it with mremap when a kernel is about to write
 * it.  The pool is guarded by guard_lock, which pool_take and pool_put
 * take. */
#define CACHE_MAX_BYTES ((size_t)384 << 20)

static void pool_put(Pool *pool, char *p, size_t mapped);
static int thp_wanted(void);

/* Bytes from p to the next huge page boundary when a request of want
 * bytes starts on one (huge pages: from HUGE_BYTES, when wanted), else 0:
 * a mapping split in the pool may start anywhere. */
static size_t huge_head(const char *p, size_t want)
{
    if (want < HUGE_BYTES || !thp_wanted())
        return 0;
    return (HUGE_BYTES - (uintptr_t)p % HUGE_BYTES) % HUGE_BYTES;
}

/* Removes and returns the smallest mapping of pool that holds want bytes
 * (from its huge page boundary: huge_head), or NULL; *have is its size.
 * Under guard_lock. */
static char *list_take(Pool *pool, size_t want, size_t *have)
{
    int best = -1;
    for (int i = pool->len - 1; i >= 0; i--)
        if (pool->m[i].mapped >= want + huge_head(pool->m[i].data, want) &&
            (best < 0 || pool->m[i].mapped < pool->m[best].mapped))
            best = i;
    if (best < 0)
        return NULL;
    char *p = pool->m[best].data;
    *have = pool->m[best].mapped;
    memmove(pool->m + best, pool->m + best + 1, (size_t)(pool->len - best - 1) * sizeof *pool->m);
    pool->len--;
    pool->bytes -= *have;
    return p;
}

/* A mapping of pool of at least `want` bytes, or NULL; *got is its size.
 * A request of huge pages starts on a huge page
 * boundary (the head before it stays in the pool).  Cut at `want` when
 * it has more than max_slack bytes to spare, the rest kept in pool as a
 * mapping of its own, its pages with it (unmapping the tail, as before,
 * cost mandelbrot's shrinking arrays fresh zeroed pages: 8% of its time in
 * clear_page).  Counted in maps_reused.  Takes guard_lock. */
static char *pool_take(Pool *pool, size_t want, size_t max_slack, size_t *got)
{
    size_t have = 0;
    pthread_mutex_lock(&G.guard_lock);
    char *p = list_take(pool, want, &have);
    pthread_mutex_unlock(&G.guard_lock);
    if (!p)
        return NULL;
    size_t head = huge_head(p, want);
    if (head > 0) {
        pool_put(pool, p, head);
        p += head;
        have -= head;
    }
    if (have - want > max_slack) {
        pool_put(pool, p + want, have - want); /* (want: whole pages) */
        have = want;
    }
    __atomic_add_fetch(&gp_stats.maps_reused, 1, __ATOMIC_RELAXED);
    *got = have;
    return p;
}

/* Keeps mapping p (mapped bytes) in pool, unmapping the oldest ones past
 * POOL_SLOTS or CACHE_MAX_BYTES (a reservation is charged against the
 * commit limit too: it was mapped writable first).  Takes guard_lock. */
static void pool_put(Pool *pool, char *p, size_t mapped)
{
    if (mapped > CACHE_MAX_BYTES / 2) {
        munmap(p, mapped);
        return;
    }
    pthread_mutex_lock(&G.guard_lock);
    /* (not joined to its neighbours, as malloc coalesces free chunks: a
     * joined range may span several kernel mappings, which mremap refuses
     * to move -- before Linux 6.17 after unmapping the target -- and with
     * moves limited to unjoined ones shallow_water ran at 0.84x NumPy
     * against 1.54x, nbody 1.25x against 1.98x, side by side) */
    while (pool->len == POOL_SLOTS || (pool->len && pool->bytes + mapped > CACHE_MAX_BYTES)) {
        Mapping old = pool->m[0];
        pool->bytes -= old.mapped;
        memmove(pool->m, pool->m + 1, (size_t)(pool->len - 1) * sizeof *pool->m);
        pool->len--;
        munmap(old.data, old.mapped); /* a leaf call: nothing is waited for */
    }
    pool->m[pool->len++] = (Mapping){p, mapped};
    pool->bytes += mapped;
    pthread_mutex_unlock(&G.guard_lock);
}

/* A cached populated mapping, cut to b->mapped bytes, moved onto b's
 * range (no page faults, no zeroing); -1 if none is cached or the move
 * failed. */
static int cached_pages_onto(GpBuffer *b)
{
    size_t got;
    char *p = pool_take(&G.cache, b->mapped, 0, &got);
    if (!p)
        return -1;
    /* (cut to b->mapped in the pool: a move never cuts) */
    if (move_onto(p, b->mapped, b->data) == MAP_FAILED) {
        munmap(p, b->mapped);
        return -1;
    }
    return 0;
}

/* Freed reservations (G.spare) are kept for the next pending output: most
 * pending outputs are fused away and never written, so their range is
 * address space only (mapped writable, then made inaccessible, no page
 * touched), and a loop records the same sizes again each iteration.
 * Reusing one saves the mmap, the mprotect and the munmap of each recorded
 * result (a shallow-water step recorded ~45).  Best fit as the page cache;
 * one with more than 1/8 to spare is cut to size. */

/* GRUMPY_HUGEPAGES=0 turns transparent huge pages off for grumpy's
 * mappings (default on, as NumPy asks for them). */
static int thp_wanted(void)
{
    static int wanted = -1;
    if (wanted < 0) {
        const char *v = getenv("GRUMPY_HUGEPAGES");
        wanted = !(v && v[0] == '0');
    }
    return wanted;
}

/* np.zeros up to this size reuses a cached mapping and clears it, as
 * glibc's calloc does below its largest mmap threshold (32 MiB on 64-bit):
 * clearing pages in use is cheaper than faulting in fresh zero pages
 * (Game of Life's np.zeros per generation: 14% of its time in clear_page).
 * Larger ones are fresh mappings (untouched parts cost nothing), as there. */
#define ZEROED_REUSE_MAX ((size_t)32 << 20)

/* zero: contents must read as zero; reserve: the memory will not be
 * written until a kernel computes it (a pending output), so it gets fresh
 * address space and takes populated pages from the cache only then. */
static GpBuffer *buffer_alloc(size_t nbytes, int zero, int reserve)
{
    GpBuffer *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->refcnt = 1;
    b->nbytes = nbytes;
    set_prot(b, PROT_READ | PROT_WRITE);
    if (nbytes < G.guard_min) {
        b->data = zero ? calloc(1, nbytes ? nbytes : 1) : malloc(nbytes ? nbytes : 1);
        if (!b->data) {
            free(b);
            return NULL;
        }
        return b;
    }
    if (!G.page_size)
        G.page_size = (size_t)sysconf(_SC_PAGESIZE);
    b->mapped = (nbytes + G.page_size - 1) / G.page_size * G.page_size;
    /* whole huge pages: a tail of 4 KiB pages would cost every mprotect
     * and mremap of the buffer ~25 us per MiB of it (at most 2 MiB - 4 KiB
     * more address space, resident once touched) */
    if (b->mapped >= HUGE_BYTES && thp_wanted())
        b->mapped = (b->mapped + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
    char *p = NULL;
    size_t got;
    if (!reserve && (!zero || nbytes <= ZEROED_REUSE_MAX) &&
        (p = pool_take(&G.cache, b->mapped, b->mapped / 8, &got)) != NULL) {
        b->mapped = got; /* the whole mapping is the buffer's: at most 1/8 more, or up to a huge page boundary */
        if (zero)
            memset(p, 0, nbytes); /* as glibc's calloc clears a reused chunk */
    }
    /* a spare reservation is inaccessible already; the handlers go back on
     * top and the resolver must run, as protect() checks for a fresh one */
    if (reserve && gp_guard_install() == 0 && __atomic_load_n(&G.resolver_state, __ATOMIC_ACQUIRE) == 1 &&
        (p = pool_take(&G.spare, b->mapped, b->mapped / 8, &got)) != NULL) {
        b->mapped = got;
        set_prot(b, PROT_NONE);
    }
    /* only a reserved pending output may have its pages replaced when first
     * written: any other buffer's contents are written by its user */
    b->populated = !reserve;
    if (!p) {
        /* mapped writable, so the kernel charges it against the commit
         * limit now, as it does NumPy's own allocation: memory that could
         * never be written is NumPy's MemoryError at the statement asking
         * for it (a PROT_NONE mapping is not charged, and failed later,
         * at first use); a pending output is then made inaccessible */
        set_prot(b, PROT_READ | PROT_WRITE);
        void *m = map_pages(b->mapped, b->prot);
        if (m == MAP_FAILED) {
            free(b);
            return NULL;
        }
        if (reserve && protect(m, b->mapped, PROT_NONE) == 0) {
            set_prot(b, PROT_NONE);
        } else if (reserve && !gp_guard_broken()) {
            munmap(m, b->mapped);
            free(b);
            return NULL;
        } /* else the guard is broken (no resolver thread): nothing is deferred, nothing protected */
        p = m;
        if (b->mapped >= HUGE_BYTES && thp_wanted())
            madvise(p, b->mapped, MADV_HUGEPAGE); /* as NumPy's allocator does */
    }
    b->data = p;
    pthread_mutex_lock(&G.guard_lock);
    int rc = registry_add(b);
    if (rc == 0) {
        __atomic_add_fetch(&gp_stats.live_buffers, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&gp_stats.live_buffer_bytes, (int64_t)b->mapped, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&G.guard_lock);
    if (rc < 0) {
        munmap(p, b->mapped);
        free(b);
        return NULL;
    }
    return b;
}

GpBuffer *gp_buffer_alloc(size_t nbytes) { return buffer_alloc(nbytes, 1, 0); }
GpBuffer *gp_buffer_alloc_uninit(size_t nbytes) { return buffer_alloc(nbytes, 0, 0); }
GpBuffer *gp_buffer_reserve(size_t nbytes) { return buffer_alloc(nbytes, 0, 1); }

void gp_buffer_incref(GpBuffer *b) { __atomic_add_fetch(&b->refcnt, 1, __ATOMIC_RELAXED); }

void gp_buffer_decref(GpBuffer *b)
{
    if (!b || __atomic_sub_fetch(&b->refcnt, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    GP_EXPECT_LOCKED(); /* the last reference (gp_buffer_decref) */
    if (b->device) {
        b->dev_ops->release(b); /* core lock held */
        b->device = NULL;
    }
    if (b->mapped) {
        pthread_mutex_lock(&G.guard_lock);
        registry_remove(b);
        __atomic_sub_fetch(&gp_stats.live_buffers, 1, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&gp_stats.live_buffer_bytes, (int64_t)b->mapped, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&G.guard_lock);
        /* only populated, writable pages may be handed to the next buffer */
        int keep = b->populated &&
                   (b->prot == (PROT_READ | PROT_WRITE) || protect(b->data, b->mapped, PROT_READ | PROT_WRITE) == 0);
        if (!keep && !b->populated && b->prot == PROT_NONE && !b->device) {
            pool_put(&G.spare, b->data, b->mapped); /* address space only: never written */
        } else if (!keep) {
            munmap(b->data, b->mapped); /* pages that stay closed */
        } else {
            pool_put(&G.cache, b->data, b->mapped);
        }
    } else {
        free(b->data);
    }
    free(b);
}

void gp_buffer_sync_prot(GpBuffer *b)
{
    /* freed by NumPy and never written: no contents anyone could read,
     * so an unwritten reservation stays inaccessible (G.spare) */
    if (!b->mapped || (b->freed && !b->populated))
        return;
    int want = b->producer || b->where == GP_ON_DEVICE     ? PROT_NONE
               : b->nreaders > 0 || b->where == GP_ON_BOTH ? PROT_READ
                                                           : PROT_READ | PROT_WRITE;
    /* read-only is sticky: a buffer whose last pending reader went away
     * stays read-only until something writes it (one fault, which opens it),
     * so arrays read again and again (weights) are not re-protected each
     * time: every mprotect is a TLB shootdown on the other cores */
    if (want == (PROT_READ | PROT_WRITE) && b->prot == PROT_READ)
        return;
    if (want != b->prot) {
        if (protect(b->data, b->mapped, want) == 0)
            set_prot(b, want);
        else if (want == PROT_NONE || b->prot == (PROT_READ | PROT_WRITE))
            __atomic_store_n(&G.guard_broken, 1, __ATOMIC_RELAXED); /* left more open than it must be */
    }
}

int gp_buffer_set_device(GpBuffer *b, void *device, const GpDeviceCopyOps *ops, int keep_host)
{
    if (!b->mapped)
        return -1;
    if (b->device && b->device != device)
        b->dev_ops->release(b);
    b->device = device;
    b->dev_ops = ops;
    __atomic_store_n(&b->where, keep_host ? GP_ON_BOTH : GP_ON_DEVICE, __ATOMIC_RELEASE);
    int want = keep_host ? PROT_READ : PROT_NONE;
    if (b->prot != want && (b->producer ? PROT_NONE : want) != b->prot) {
        if (protect(b->data, b->mapped, b->producer ? PROT_NONE : want) != 0) {
            __atomic_store_n(&b->where, GP_ON_HOST, __ATOMIC_RELEASE);
            ops->release(b);
            b->device = NULL;
            return -1;
        }
        set_prot(b, b->producer ? PROT_NONE : want);
    }
    return 0;
}

int gp_buffer_to_host(GpBuffer *b)
{
    if (b->where != GP_ON_DEVICE)
        return 0;
    char *stage;
    int needs_contents;
    /* the host pages are stale: the stage's contents need not be copied */
    if (gp_buffer_stage(b, &stage, &needs_contents) != 0)
        return -1;
    if (b->dev_ops->to_host(b, stage) != 0) {
        gp_buffer_unstage(b, stage);
        return -1;
    }
    __atomic_store_n(&b->where, GP_ON_BOTH, __ATOMIC_RELEASE);
    if (gp_buffer_commit(b, stage, b->producer ? PROT_NONE : PROT_READ) != 0) {
        __atomic_store_n(&b->where, GP_ON_DEVICE, __ATOMIC_RELEASE);
        return -1;
    }
    gp_stats.device_to_host++;
    return 0;
}

void gp_buffer_mark_device(GpBuffer *b, void *device, const GpDeviceCopyOps *ops)
{
    if (b->device && b->device != device)
        b->dev_ops->release(b);
    b->device = device;
    b->dev_ops = ops;
    __atomic_store_n(&b->where, GP_ON_DEVICE, __ATOMIC_RELEASE);
}

void gp_buffer_drop_device(GpBuffer *b)
{
    if (!b->device)
        return;
    b->dev_ops->release(b);
    b->device = NULL;
    __atomic_store_n(&b->where, GP_ON_HOST, __ATOMIC_RELEASE);
}

int gp_buffer_read_only(GpBuffer *b)
{
    if (!b->mapped || b->producer || b->where != GP_ON_HOST || b->freed)
        return -1;
    if (b->prot == PROT_READ)
        return 0;
    if (b->prot != (PROT_READ | PROT_WRITE) || protect(b->data, b->mapped, PROT_READ) != 0)
        return -1;
    set_prot(b, PROT_READ);
    return 0;
}

void gp_buffer_open_for_write(GpBuffer *b)
{
    if (!b->mapped)
        return;
    if (b->device) { /* the host copy is the one written: a device copy goes stale */
        if (b->where == GP_ON_DEVICE && gp_buffer_to_host(b) != 0)
            return;
        gp_buffer_drop_device(b);
    }
    if (!b->populated) {
        /* never touched: move a cached, populated mapping of the same size
         * onto this address range (no page faults, no zeroing) */
        b->populated = 1;
        if (cached_pages_onto(b) == 0) {
            set_prot(b, PROT_READ | PROT_WRITE);
            return;
        }
    }
    if (b->prot != (PROT_READ | PROT_WRITE) && protect(b->data, b->mapped, PROT_READ | PROT_WRITE) == 0)
        set_prot(b, PROT_READ | PROT_WRITE);
}

/* ---- staging: a computation's writes stay private until complete -------
 *
 * A pending buffer is PROT_NONE, so every other thread that touches it
 * (NumPy, OpenBLAS's workers, a C extension) faults and waits on the core
 * lock until it is computed.  Opening it before the kernel writes it would
 * let those threads read half-written values (np.cov's in-place centring
 * read by OpenBLAS's second thread gave 30% errors).  So the kernel writes
 * a private mapping (the stage): cached or fresh pages for a reserved
 * buffer's first contents; for a populated one (an in-place write reads its
 * old values and keeps the bytes it does not write) its own pages, moved
 * out with MREMAP_DONTUNMAP (the range stays mapped, empty and
 * inaccessible: no hole another mmap could take), or where the kernel
 * refuses that, a copy read through /proc/self/mem (the kernel's
 * FOLL_FORCE access reads pages the process itself cannot touch).  gp_buffer_commit moves the
 * finished pages over the buffer's range in one mremap: another thread sees
 * either a fault (and waits) or every value, never an unmapped hole. */

/* A descriptor inherited over fork() reads the parent's memory: the child
 * closes it at once (pthread_atfork), before it can reuse the number. */
static void self_mem_after_fork_child(void)
{
    if (G.self_mem >= 0)
        close(G.self_mem);
    G.self_mem = -1;
}

/* /proc/self/mem of this process, opened under the core lock when a stage
 * needs it. */
static int open_self_mem(void)
{
    if (G.self_mem < 0) {
        G.self_mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
    }
    return G.self_mem;
}

int gp_buffer_read_old(const GpBuffer *b, size_t off, char *dst, size_t n)
{
    if (b->origin) {
        memcpy(dst, b->origin + off, n);
        return 0;
    }
    const char *src = b->data + off;
    int fd = G.self_mem; /* opened by gp_buffer_stage */
    if (fd < 0)
        return -1;
    while (n > 0) {
        ssize_t r = pread(fd, dst, n, (off_t)(uintptr_t)src);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        src += r;
        dst += r;
        n -= (size_t)r;
    }
    return 0;
}

int gp_buffer_read_contents(const GpBuffer *b, char *dst)
{
    GP_EXPECT_LOCKED();
    if (!b->origin && open_self_mem() < 0)
        return -1;
    return gp_buffer_read_old(b, 0, dst, b->mapped);
}

/* Moves pages moved out of b (move_pages_out) back onto b's range, with
 * b's protection.  0, or -1: the contents are lost (the kernel could not
 * find memory for page tables), and the pages are unmapped. */
static int move_back(GpBuffer *b, char *pages)
{
    mprotect(pages, b->mapped, b->prot);
    if (mremap(pages, b->mapped, b->mapped, MREMAP_MAYMOVE | MREMAP_FIXED, b->data) != MAP_FAILED)
        return 0;
    /* no memory for the move's page tables: b's range (still mapped,
     * empty) gets a copy instead */
    int rc = -1;
    if (mprotect(pages, b->mapped, PROT_READ) == 0 && mprotect(b->data, b->mapped, PROT_READ | PROT_WRITE) == 0) {
        memcpy(b->data, pages, b->nbytes);
        rc = mprotect(b->data, b->mapped, b->prot);
    }
    munmap(pages, b->mapped); /* never handed to another buffer */
    return rc;
}

/* Moves b's pages to a new private address, leaving b's range mapped,
 * empty and inaccessible (MREMAP_DONTUNMAP, Linux 5.7+; called through
 * syscall() because glibc's variadic wrapper passes an undefined new
 * address, which the kernel refuses).  The new address, or NULL. */
static char *move_pages_out(GpBuffer *b)
{
    if (gp_fail_now())
        return NULL;
    /* a buffer with huge pages goes to a range on a huge page boundary:
     * anywhere else the kernel splits them into 4 KiB pages */
    static int fixed_refused; /* a FIXED move failed otherwise than EINVAL: not tried again */
    void *to = NULL;
    int flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP;
    if (b->mapped >= HUGE_BYTES && !__atomic_load_n(&fixed_refused, __ATOMIC_RELAXED) &&
        (to = map_pages(b->mapped, PROT_NONE)) != MAP_FAILED)
        flags |= MREMAP_FIXED;
    else
        to = NULL;
    long r = syscall(SYS_mremap, b->data, b->mapped, b->mapped, flags, to);
    if (r == -1 && to) {
        /* flags a kernel refuses (EINVAL) are refused before the target is
         * touched; otherwise a failed MREMAP_FIXED may have unmapped `to`
         * already, and another thread may have mapped there since: the
         * reservation (address space only) is left, once */
        if (errno == EINVAL)
            munmap(to, b->mapped);
        else
            __atomic_store_n(&fixed_refused, 1, __ATOMIC_RELAXED);
        r = syscall(SYS_mremap, b->data, b->mapped, b->mapped, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, (void *)0);
    }
    if (r == -1)
        return NULL;
    char *p = (char *)r;
    if (protect(p, b->mapped, PROT_READ | PROT_WRITE) != 0) {
        mremap(p, b->mapped, b->mapped, MREMAP_MAYMOVE | MREMAP_FIXED, b->data);
        return NULL;
    }
    return p;
}

int gp_buffer_pages_movable(const GpBuffer *b) { return b->mapped && b->populated && b->prot == PROT_NONE; }

static int stage_pages(GpBuffer *b, char **stage, int *needs_contents, int apart)
{
    *stage = b->data;
    *needs_contents = 0;
    b->stage_moved = 0;
    if (apart && !b->mapped)
        return -1;
    if (!apart && (!b->mapped || b->prot == (PROT_READ | PROT_WRITE))) {
        b->populated = 1; /* nobody waits on it: written in place */
        return 0;
    }
    /* only an inaccessible range may be emptied: a readable one (computed
     * again while its first computation reports FP flags) would show zero
     * pages to its readers; its contents are copied instead.  Staged apart,
     * the moved-out pages are kept (b->origin) and copied into the stage
     * with memcpy, not read through /proc/self/mem (about 1 GB/s: 1 ms per
     * MiB, tools/overhead.py's `a += b; a *= 0.5` 1.7-3.5x NumPy's time) */
    int movable = gp_buffer_pages_movable(b);
    if (!apart && movable && (*stage = move_pages_out(b)) != NULL) {
        b->stage_moved = 1; /* the old contents, without a copy */
        return 0;
    }
    *stage = b->data;
    size_t got;
    char *p = pool_take(&G.cache, b->mapped, 0, &got);
    if (!p) {
        void *m = map_pages(b->mapped, PROT_READ | PROT_WRITE);
        if (m == MAP_FAILED)
            return -1;
        p = m;
        if (b->mapped >= HUGE_BYTES && thp_wanted())
            madvise(p, b->mapped, MADV_HUGEPAGE);
    }
    /* (the stage first: nothing fails once b's pages are out) */
    if (apart && movable && (b->origin = move_pages_out(b)) != NULL) {
        *needs_contents = 1; /* the caller copies b->origin where needed (gp_buffer_read_old) */
        *stage = p;
        return 0;
    }
    if (b->populated && (b->prot & PROT_READ)) {
        memcpy(p, b->data, b->nbytes);
        __atomic_add_fetch(&gp_stats.stage_copy_bytes, (int64_t)b->nbytes, __ATOMIC_RELAXED);
        *stage = p;
        return 0;
    }
    /* no MREMAP_DONTUNMAP: the caller copies the contents
     * (gp_buffer_read_old), in parallel: it has the threads */
    if (b->populated && open_self_mem() < 0) {
        pool_put(&G.cache, p, b->mapped);
        return -1;
    }
    *needs_contents = b->populated;
    *stage = p;
    return 0;
}

int gp_buffer_stage(GpBuffer *b, char **stage, int *needs_contents) { return stage_pages(b, stage, needs_contents, 0); }

int gp_buffer_stage_apart(GpBuffer *b, char **stage, int *needs_contents)
{
    return stage_pages(b, stage, needs_contents, 1);
}

int gp_buffer_commit(GpBuffer *b, char *stage, int prot)
{
    /* a kernel that left its result on the device: the host pages are
     * stale, so they must become inaccessible (or the commit fails) */
    int on_device = b->where == GP_ON_DEVICE;
    if (on_device)
        prot = PROT_NONE;
    if (stage == b->data) {
        set_prot(b, b->prot); /* (new contents: a new epoch) */
        if (on_device && b->prot != PROT_NONE) {
            if (protect(b->data, b->mapped, PROT_NONE) != 0)
                return -1;
            set_prot(b, PROT_NONE);
        }
        return 0;
    }
    if (on_device && protect(stage, b->mapped, PROT_NONE) != 0) {
        gp_buffer_unstage(b, stage);
        return -1;
    }
    if (!on_device && prot != (PROT_READ | PROT_WRITE) && protect(stage, b->mapped, prot) != 0) {
        prot = PROT_READ | PROT_WRITE; /* what the stage still has */
        __atomic_store_n(&G.guard_broken, 1, __ATOMIC_RELAXED);
    }
    if (move_onto(stage, b->mapped, b->data) == MAP_FAILED) {
        /* cannot move it: copy it (the range stays inaccessible meanwhile
         * only if mprotect can make it so; else this is the old race) */
        if (protect(stage, b->mapped, PROT_READ) != 0 || protect(b->data, b->mapped, PROT_READ | PROT_WRITE) != 0) {
            /* the values are lost; b's own pages (moved out) go back */
            gp_buffer_unstage(b, stage);
            return -1;
        }
        memcpy(b->data, stage, b->mapped);
        munmap(stage, b->mapped);
        if (prot != (PROT_READ | PROT_WRITE) && protect(b->data, b->mapped, prot) != 0) {
            set_prot(b, PROT_READ | PROT_WRITE);
            if (on_device)
                return -1; /* stale host pages left readable: the caller drops the device copy */
            prot = PROT_READ | PROT_WRITE;
            __atomic_store_n(&G.guard_broken, 1, __ATOMIC_RELAXED);
        }
    }
    set_prot(b, prot);
    b->populated = 1;
    b->stage_moved = 0;
    if (b->origin) {
        pool_put(&G.cache, b->origin, b->mapped); /* the old contents, no longer needed: populated, writable */
        b->origin = NULL;
    }
    return 0;
}

void gp_buffer_unstage(GpBuffer *b, char *stage)
{
    if (stage == b->data)
        return;
    if (b->stage_moved) {
        /* b's own pages go back, with b's protection (lost if they cannot) */
        b->stage_moved = 0;
        move_back(b, stage);
        return;
    }
    if (b->origin) {
        move_back(b, b->origin); /* the old contents, the stage's copy given up */
        b->origin = NULL;
    }
    /* a failed commit may have protected the stage: the cache hands out
     * writable pages only */
    if (mprotect(stage, b->mapped, PROT_READ | PROT_WRITE) == 0)
        pool_put(&G.cache, stage, b->mapped);
    else
        munmap(stage, b->mapped);
}

/* ---- the fault handler ------------------------------------------------- */

static __thread int in_handler;

static __thread int in_chain;

static void chain(int sig, siginfo_t *si, void *uc)
{
    struct sigaction *old = sig == SIGSEGV ? &G.previous_segv : &G.previous_bus;
    if (in_chain) {
        /* the previous handler led back here: take the default action */
        signal(sig, SIG_DFL);
        return;
    }
    in_chain = 1;
    if (old->sa_flags & SA_SIGINFO) {
        old->sa_sigaction(sig, si, uc);
    } else if (old->sa_handler == SIG_DFL || old->sa_handler == SIG_IGN) {
        /* restore the default action; returning re-executes the access,
         * which now terminates the process as it would have without us.
         * A signal sent with kill() (si_code <= 0) re-executes nothing:
         * it is raised again, and ends the process as without grumpy */
        signal(sig, SIG_DFL);
        if (si->si_code <= 0 && old->sa_handler == SIG_DFL)
            raise(sig);
    } else {
        old->sa_handler(sig);
    }
    in_chain = 0;
}

/* The handler runs on the alternate signal stack when the thread has one
 * (SA_ONSTACK: a stack overflow, which is not ours, still reaches
 * faulthandler's traceback).  That stack is small (faulthandler's is a few
 * pages), and computing a buffer runs kernels and may compile, so a fault
 * of ours taken there is resolved on a private stack of its own, mapped
 * once per thread (mmap is async-signal-safe) and entered with
 * swapcontext. */
#define RESOLVE_STACK_BYTES ((size_t)16 << 20)
static __thread char *resolve_stack;
static __thread ucontext_t resolve_ctx, fault_ctx;
static __thread GpBuffer *resolve_buffer;

static void resolve_trampoline(void) { gp_guard_resolve(resolve_buffer); }

static void resolve_on_a_full_stack(GpBuffer *b)
{
    stack_t ss;
    if (sigaltstack(NULL, &ss) != 0 || !(ss.ss_flags & SS_ONSTACK)) {
        gp_guard_resolve(b); /* already on the thread's own stack */
        return;
    }
    if (!resolve_stack) {
        void *m =
            mmap(NULL, RESOLVE_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (m == MAP_FAILED) {
            gp_guard_resolve(b);
            return;
        }
        mprotect(m, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE); /* overflow guard */
        resolve_stack = m;
    }
    if (getcontext(&resolve_ctx) != 0) {
        gp_guard_resolve(b);
        return;
    }
    resolve_ctx.uc_stack.ss_sp = resolve_stack;
    resolve_ctx.uc_stack.ss_size = RESOLVE_STACK_BYTES;
    resolve_ctx.uc_link = &fault_ctx;
    /* off the alternate stack, another SA_ONSTACK signal (SIGINT, SIGALRM)
     * would be delivered onto it, over this handler's frame: asynchronous
     * signals wait until the buffer is resolved; faults still arrive */
    sigfillset(&resolve_ctx.uc_sigmask);
    sigdelset(&resolve_ctx.uc_sigmask, SIGSEGV);
    sigdelset(&resolve_ctx.uc_sigmask, SIGBUS);
    sigdelset(&resolve_ctx.uc_sigmask, SIGILL);
    sigdelset(&resolve_ctx.uc_sigmask, SIGFPE);
    makecontext(&resolve_ctx, resolve_trampoline, 0);
    resolve_buffer = b;
    if (swapcontext(&fault_ctx, &resolve_ctx) != 0)
        gp_guard_resolve(b);
}

/* ---- the resolver thread ----------------------------------------------
 *
 * Computing a buffer plans, may compile with LLVM, read the disk cache,
 * allocate and start kernel threads: none of it is async-signal-safe, and a
 * fault can interrupt any code (DESIGN.md section 3, issue 9 point 13).  So
 * a fault is resolved on a thread of grumpy's own, in ordinary thread
 * context: the faulting thread's handler pushes a request (the fault
 * address and a semaphore, on its own stack) onto a lock-free list, posts
 * the resolver's semaphore and waits on its own -- sem_post and sem_wait
 * are async-signal-safe -- then retries the access.  The resolver thread
 * takes the core lock, finds the buffer again under it (it cannot be freed
 * meanwhile) and calls gp_guard_resolve.  It never takes the GIL (the
 * faulting thread may hold it): a kernel that fails to compile is computed
 * with NumPy's inner loops, called without Python (plan.c,
 * GpHostCallbacks.eval_without_gil).  A faulting thread that holds the core lock (the
 * resolver would wait for it) runs grumpy's own code: it resolves the
 * fault itself, as does the resolver thread (counted:
 * gp_stats.guard_faults_inline).
 *
 * Started by gp_guard_install (ordinary context, the guard's lock held) with
 * every signal blocked; after fork() a child that goes on running Python
 * starts its own before anything else (gp_guard_after_fork_child). */

static __thread int on_resolver;

/* Resolves the buffer at addr, core lock held: 1 when it is accessible
 * afterwards (or is no longer a buffer: the access is retried). */
static int resolve_locked(void *addr, int inline_resolve)
{
    GpBuffer *b = gp_buffer_lookup(addr);
    if (!b)
        return 1;
    if (inline_resolve)
        resolve_on_a_full_stack(b);
    else
        gp_guard_resolve(b);
    /* retry the access once the buffer is readable: a read goes through;
     * a write to a buffer left read-only (pending readers appeared
     * meanwhile) faults again and resolves those readers */
    int ok = b->prot != PROT_NONE || !b->mapped;
    if (ok || inline_resolve) /* a fault the resolver thread gives back is counted once, inline */
        gp_stats.guard_faults++;
    gp_stats.guard_faults_inline += inline_resolve;
    return ok;
}

static void *resolver_main(void *arg)
{
    (void)arg;
    on_resolver = 1;
    for (;;) {
        while (sem_wait(&G.resolver_wake) != 0)
            ; /* EINTR */
        Request *r = __atomic_exchange_n(&G.requests, NULL, __ATOMIC_ACQ_REL);
        while (r) {
            Request *next = r->next; /* r lives on the waiting handler's stack */
            in_handler = 1;
            gp_lock();
            r->ok = resolve_locked(r->addr, 0);
            gp_unlock();
            in_handler = 0;
            sem_post(&r->done);
            r = next;
        }
    }
    return NULL;
}

static void resolver_start(void);

static void resolver_after_fork_child(void)
{
    /* the thread did not come over; nobody waits in the child.  A thread
     * is not started here: most children of a threaded process exec at
     * once (and a thread start is not async-signal-safe there);
     * gp_guard_after_fork_child starts it */
    G.restart_in_child = G.resolver_state == 1;
    G.requests = NULL;
    G.resolver_state = 0;
}

void gp_guard_after_fork_child(void)
{
    pthread_mutex_lock(&G.guard_lock);
    if (G.restart_in_child && G.registry_len > 0)
        resolver_start(); /* buffers that can fault came over */
    G.restart_in_child = 0;
    pthread_mutex_unlock(&G.guard_lock);
}

/* Starts the resolver thread once per process (the guard's lock held).  A thread start can fail (out of
 * threads; fault injection): then nothing is ever deferred (protect). */
static void resolver_start(void)
{
    if (G.resolver_state != 0)
        return;
    /* every asynchronous signal blocked (gp_thread_create_quiet): none is
     * ever delivered to the resolver thread.  The synchronous ones stay
     * open: threads it starts inherit its mask (a BLAS library's thread
     * pool, started by the first product the resolver computes; grumpy's
     * own workers), and one of those threads that faults on a guarded
     * buffer with SIGSEGV blocked is killed by the kernel instead of
     * entering the handler */
    pthread_attr_t attr;
    pthread_t t;
    G.resolver_state = -1;
    if (gp_fail_now() || sem_init(&G.resolver_wake, 0, 0) != 0 || pthread_attr_init(&attr) != 0)
        return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, RESOLVE_STACK_BYTES);
    if (gp_thread_create_quiet(&t, &attr, resolver_main) == 0)
        G.resolver_state = 1;
    pthread_attr_destroy(&attr);
}

/* Hands addr to the resolver thread and waits: 1 resolved (retry the
 * access), 0 not (it could not be computed: the fault goes down the
 * chain).  Async-signal-safe. */
static int resolve_on_the_resolver(void *addr)
{
    if (__atomic_load_n(&G.resolver_state, __ATOMIC_ACQUIRE) != 1)
        return 0;
    Request r = {.addr = addr, .ok = 0};
    if (sem_init(&r.done, 0, 0) != 0)
        return 0;
    r.next = __atomic_load_n(&G.requests, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&G.requests, &r.next, &r, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
    sem_post(&G.resolver_wake);
    while (sem_wait(&r.done) != 0)
        ; /* EINTR */
    sem_destroy(&r.done);
    return r.ok;
}

int gp_guard_in_handler(void) { return in_handler; }
int gp_guard_on_resolver(void) { return on_resolver; }

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    /* only a fault of this thread's own access can be ours: a signal sent
     * with kill() or sigqueue() (si_code <= 0) goes down the chain */
    /* in_handler: a fault while this thread resolves one is not resolved
     * again (it would loop), except once on the resolver thread */
    static __thread int nested;
    if ((!in_handler || (on_resolver && !nested)) && si->si_code > 0 && gp_guard_resolve &&
        where_in_registry(si->si_addr) == ADDR_IN_BUFFER) {
        int ok;
        if (!on_resolver && !gp_lock_held()) {
            /* any code, grumpy's or not: only the resolver thread computes */
            ok = resolve_on_the_resolver(si->si_addr);
        } else {
            /* grumpy's own code reading memory it has not computed (the
             * resolver thread, or a thread inside the core that holds the
             * lock the resolver would wait for): on this thread, on a
             * private stack; no GIL, no Python (plan.c) */
            int was = in_handler, took = !gp_lock_held();
            nested += was;
            in_handler = 1;
            if (took) /* the resolver between requests: never, it touches no buffer there */
                gp_lock();
            ok = resolve_locked(si->si_addr, 1);
            if (took)
                gp_unlock();
            in_handler = was;
            nested -= was;
        }
        errno = saved_errno;
        if (ok)
            return;
    }
    /* never inside a buffer's own range (a hole a failed move left there) */
    if (sig == SIGSEGV && si->si_code == SEGV_MAPERR && where_in_registry(si->si_addr) == ADDR_NEXT_TO_BUFFER &&
        map_scratch(si->si_addr)) {
        errno = saved_errno;
        return;
    }
    errno = saved_errno;
    chain(sig, si, uc);
}

static int is_ours(const struct sigaction *a) { return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_fault; }

int gp_guard_uninstall(void)
{
    pthread_mutex_lock(&G.guard_lock);
    struct sigaction cur;
    int rc = 0;
    if (sigaction(SIGSEGV, NULL, &cur) == 0 && is_ours(&cur) && sigaction(SIGSEGV, &G.previous_segv, NULL) < 0)
        rc = -1;
    if (sigaction(SIGBUS, NULL, &cur) == 0 && is_ours(&cur) && sigaction(SIGBUS, &G.previous_bus, NULL) < 0)
        rc = -1;
    pthread_mutex_unlock(&G.guard_lock);
    return rc;
}

/* Puts on_fault on top of sig's current handler, which becomes the one
 * faults that are not ours go to; nothing when on_fault is on top. */
static int install_one(int sig, struct sigaction *previous)
{
    struct sigaction cur, sa;
    if (sigaction(sig, NULL, &cur) < 0)
        return -1;
    if (is_ours(&cur))
        return 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    *previous = cur;
    return sigaction(sig, &sa, NULL);
}

int gp_guard_install(void)
{
    /* (Re)install on top of whatever handler is current, signal by signal:
     * faulthandler, enabled after us, or a handler set with signal.signal
     * would otherwise see our faults first (and never pass them on). */
    pthread_mutex_lock(&G.guard_lock);
    int rc = install_one(SIGSEGV, &G.previous_segv) < 0 || install_one(SIGBUS, &G.previous_bus) < 0 ? -1 : 0;
    resolver_start();
    pthread_mutex_unlock(&G.guard_lock);
    return rc;
}
