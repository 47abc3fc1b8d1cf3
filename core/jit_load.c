/* core/jit_load.c -- the extension's side of the code generator (jit.h):
 * the JIT's entry points, forwarded to the library that holds it and LLVM,
 * grumpy/_grumpy_jit<EXT_SUFFIX>, loaded at the first call.
 *
 * Loading LLVM costs ~47 MiB of resident memory and 10-25 ms (measured on
 * these machines: libLLVM-19's relocations); a program that never compiles
 * a kernel -- arrays below GRUMPY_MIN_BYTES, GRUMPY_BACKEND=numpy -- never
 * pays it.  The library's undefined symbols are the core's (gp_lock,
 * gp_stats, ...): the extension is first made global (RTLD_NOLOAD |
 * RTLD_GLOBAL on itself) so that the library binds to them.  A library
 * that cannot be loaded makes every compile fail, counted, and NumPy
 * computes (DESIGN.md section 4).
 */
#include "jit.h"
#include "jit_nvptx.h"
#include "cache.h"
#include "objload.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const GpJitApi *api;
static char load_error[512];

/* The two libraries' files as found at start-up (gp_jit_note_files). */
static struct {
    int noted;
    struct stat ext, gen;
} at_start;

/* The extension's path and the code generator library's beside it
 * (objload.h).  0, or -1. */
static int library_paths(const char **ext, char *gen, size_t cap)
{
    return gp_library_paths(ext, gen, cap) == 0 ? 0 : -1;
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

void gp_jit_note_files(void)
{
    const char *ext;
    char gen[4096];
    if (!at_start.noted && library_paths(&ext, gen, sizeof gen) == 0 && stat(ext, &at_start.ext) == 0 &&
        stat(gen, &at_start.gen) == 0)
        at_start.noted = 1;
}

/* 0 when the two files are those found at start-up (or none were noted):
 * a library rebuilt or reinstalled since would not match the extension in
 * memory (programs, counters), nor would the objects its key names. */
static int files_unchanged(const char *ext, const char *gen)
{
    struct stat now_ext, now_gen;
    return !at_start.noted || (stat(ext, &now_ext) == 0 && stat(gen, &now_gen) == 0 &&
                               same_file(&now_ext, &at_start.ext) && same_file(&now_gen, &at_start.gen))
               ? 0
               : -1;
}

/* Loads the library, once (gp_jit_load): its table, or NULL with load_error. */
static const GpJitApi *load_library(void)
{
    const char *ext;
    char gen[4096];
    if (library_paths(&ext, gen, sizeof gen) < 0) {
        snprintf(load_error, sizeof load_error, "cannot load the code generator: the extension's path is unusual");
        return NULL;
    }
    /* otherwise NumPy computes */
    if (files_unchanged(ext, gen) < 0) {
        snprintf(load_error, sizeof load_error,
                 "cannot load the code generator: %.200s or %.200s changed on disk since start-up", ext, gen);
        return NULL;
    }
    void *self = dlopen(ext, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL); /* kept: the library binds to it */
    void *lib = self ? dlopen(gen, RTLD_NOW | RTLD_LOCAL) : NULL;
    const GpJitApi *(*get)(void) = lib ? (const GpJitApi *(*)(void))dlsym(lib, "gp_jit_api") : NULL;
    if (!get) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load the code generator: %.400s", why ? why : gen);
        return NULL;
    }
    return get();
}

/* A load under way (gp_jit_load), for exit() and fork() to wait for. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int loading;
} bg = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void stop_compile_thread(void);

static void load_once(void)
{
    pthread_mutex_lock(&bg.mu);
    bg.loading = 1;
    pthread_mutex_unlock(&bg.mu);
    const GpJitApi *got = load_library();
    if (got) {
        __atomic_store_n(&api, got, __ATOMIC_RELEASE);
        /* exit() runs its handlers last registered first: this one before
         * the destructors of LLVM's globals, registered as the library
         * loaded (a process that exits without Py_Finalize) */
        (void)atexit(stop_compile_thread);
    }
    pthread_mutex_lock(&bg.mu);
    bg.loading = 0;
    pthread_cond_broadcast(&bg.cv);
    pthread_mutex_unlock(&bg.mu);
}

int gp_jit_load(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (__atomic_load_n(&api, __ATOMIC_ACQUIRE))
        return 0;
    pthread_once(&once, load_once);
    if (__atomic_load_n(&api, __ATOMIC_ACQUIRE))
        return 0;
    gp_set_error("%s", load_error);
    return -1;
}

/* The kernels this process has, by program and kind: loaded from the disk
 * cache without the code generator (objload.h), or given by it.  Under the
 * core lock, as the code generator's own table (gp_jit_kernel's callers
 * hold it). */
typedef struct Loaded {
    uint64_t hash;
    GpTargetKind kind;
    size_t keylen;
    void *fn;
    int counted; /* 0: loaded from disk by gp_jit_kernel_cached, whose launch's compile hit is no cache hit */
    struct Loaded *next;
    unsigned char key[];
} Loaded;

#define LOADED_BUCKETS 256
static Loaded *loaded[LOADED_BUCKETS];

/* p's kernel from the disk cache, loaded by gp_objload; NULL on a miss,
 * or for an object the loader refuses (the code generator loads it then). */
static void *from_disk(const GpProgram *p, GpTargetKind kind)
{
    const char *ext;
    char gen[4096];
    if (gp_jit_fail_forced(p) || library_paths(&ext, gen, sizeof gen) < 0 || files_unchanged(ext, gen) < 0)
        return NULL;
    int64_t t0 = gp_now_ns();
    unsigned char *key = NULL;
    size_t keylen = gp_kernel_key(p, kind, &key), objlen = 0;
    char name[38];
    void *obj = keylen && gp_kernel_symbol(key, keylen, kind, name) == 0 ? gp_cache_load(key, keylen, &objlen) : NULL;
    void *fn = obj ? gp_objload(obj, objlen, name) : NULL;
    free(obj);
    free(key);
    if (fn) {
        gp_stats.disk_cache_hits++;
        gp_stats.disk_objects_loaded++;
        gp_stats.compile_ns += gp_now_ns() - t0;
    }
    return fn;
}

/* ---- the background compile thread -------------------------------------
 *
 * Programs queued by gp_jit_kernel_prefetch are compiled in turn on one
 * thread, while the planner's thread goes on (NumPy computes the launches
 * whose kernels are not ready: DESIGN.md section 6).  The thread holds no
 * lock of the core's: W.mu to take a job and to hand its kernel back, the
 * library's compiler lock (jit_api.c) while it compiles.  Its kernels
 * reach the table `loaded` on the thread that asks for them next, under
 * the core lock, with their counts (take_done).
 * Lock order: core lock, then W.mu, then bg.mu, then the compiler lock;
 * the thread never holds W.mu while it loads or compiles.
 * fork(): the prepare handler waits until the thread is between jobs and
 * holds W.mu, bg.mu and the compiler lock through the fork; the child has
 * no thread: its queued jobs are dropped (a program asked for again is
 * queued again, and a thread started anew).
 * exit: gp_jit_wait_for_load stops the thread once the compile under way
 * is done (LLVM's destructors must not run under it); queued jobs are
 * dropped. */
enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_FAILED };

typedef struct Job {
    GpTargetKind kind;
    int state;          /* JOB_* */
    void *fn;           /* DONE: the kernel */
    GpJitCounts counts; /* what the compile did, added to gp_stats once (take_done) */
    uint64_t hash;      /* gp_program_hash + kind, as the tables' */
    size_t keylen;
    struct Job *next;
    GpProgram prog; /* a copy (the planner's is rewritten by every plan) */
} Job;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    int started;      /* a thread exists (not in a child of fork()) */
    int busy;         /* it is loading or compiling (a job RUNNING) */
    int stopping;     /* exit: no job starts, none is queued */
    int paused;       /* fork() under way: no job starts */
    int waiting;      /* threads compiling on their own (kernel_for): no job starts meanwhile, so
                     that the compiler lock goes to them after the job under way */
    pthread_t thread; /* when started */
    Job *jobs;        /* QUEUED and RUNNING jobs oldest first, then kept FAILED ones */
} W = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

static int same_job(const Job *j, const GpProgram *p, GpTargetKind kind, uint64_t h, size_t n)
{
    return j->hash == h && j->kind == kind && j->keylen == n && memcmp(&j->prog, p, n) == 0;
}

static void *compile_thread(void *arg)
{
    (void)arg;
    gp_fail_points_off(); /* GRUMPY_DEBUG_FAIL counts the planner's steps, in an order tests can repeat */
    pthread_mutex_lock(&W.mu);
    for (;;) {
        Job *j = W.jobs;
        while (j && j->state != JOB_QUEUED)
            j = j->next;
        if (W.stopping)
            break;
        if (!j || W.waiting || W.paused) {
            pthread_cond_wait(&W.work, &W.mu);
            continue;
        }
        j->state = JOB_RUNNING;
        __atomic_store_n(&W.busy, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&W.mu);
        GpJitCounts c = {0, 0, 0, 0, 0};
        void *fn = gp_jit_load() == 0 ? api->kernel_counted(&j->prog, j->kind, &c) : NULL;
        if (!fn)
            c.jit_failures += c.jit_failures == 0; /* a library that would not load */
        pthread_mutex_lock(&W.mu);
        j->fn = fn;
        j->counts = c;
        j->state = fn ? JOB_DONE : JOB_FAILED;
        __atomic_store_n(&W.busy, 0, __ATOMIC_RELAXED);
        pthread_cond_broadcast(&W.idle);
    }
    __atomic_store_n(&W.busy, 0, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&W.idle);
    pthread_mutex_unlock(&W.mu);
    return NULL;
}

/* Starts the thread (W.mu held): 0, or -1. */
static int start_thread(void)
{
    if (W.started)
        return 0;
    /* signals are the planner's thread's (Python's handlers); the guard's
     * faults on guarded memory, which this thread never touches, stay open */
    if (gp_thread_create_quiet(&W.thread, NULL, compile_thread) != 0)
        return -1;
    pthread_detach(W.thread);
    W.started = 1;
    return 0;
}

static void table_add(const GpProgram *p, GpTargetKind kind, uint64_t h, size_t n, void *fn, int counted);

/* The background compiles that finished, taken in (core lock held): each
 * DONE job's kernel goes in the table `loaded` and leaves the list; each
 * finished job's counts are added to gp_stats once; FAILED jobs stay
 * listed, so that they are not queued again.  Returns p's job's state: 1
 * DONE (its kernel in *fn), -1 FAILED, 0 QUEUED or RUNNING, -2 none (or p
 * NULL: every finished job taken in, none asked for). */
static int take_done(const GpProgram *p, GpTargetKind kind, uint64_t h, size_t n, void **fn)
{
    int r = -2;
    pthread_mutex_lock(&W.mu);
    for (Job **pj = &W.jobs; *pj;) {
        Job *j = *pj;
        int mine = p && same_job(j, p, kind, h, n);
        if (mine)
            r = j->state == JOB_DONE ? 1 : j->state == JOB_FAILED ? -1 : 0;
        if (j->state == JOB_DONE || j->state == JOB_FAILED) {
            gp_jit_counts_add(&j->counts);
            gp_stats.compiles_in_background += j->counts.kernels_compiled;
            memset(&j->counts, 0, sizeof j->counts);
        }
        if (j->state == JOB_DONE) {
            if (mine)
                *fn = j->fn;
            else
                table_add(&j->prog, j->kind, j->hash, j->keylen, j->fn, 0);
            *pj = j->next;
            free(j);
        } else {
            pj = &j->next;
        }
    }
    pthread_mutex_unlock(&W.mu);
    return r;
}

int gp_jit_compiling(void) { return __atomic_load_n(&W.busy, __ATOMIC_RELAXED); }

/* Stops the thread after the job under way: no job starts after this.
 * Called by exit() on the compile thread itself (LLVM reporting a fatal
 * error), it does not wait for itself. */
static void stop_compile_thread(void)
{
    pthread_mutex_lock(&W.mu);
    W.stopping = 1;
    pthread_cond_broadcast(&W.work);
    int self = W.started && pthread_equal(W.thread, pthread_self());
    while (W.busy && !self)
        pthread_cond_wait(&W.idle, &W.mu);
    pthread_mutex_unlock(&W.mu);
}

void gp_jit_collect(void)
{
    void *fn = NULL;
    (void)take_done(NULL, GP_TARGET_CPU, 0, 0, &fn);
}

static void before_fork(void);
static void after_parent_fork(void);
static void after_child_fork(void);

/* gp_jit_init_fork's once: the handlers, registered outside any lock. */
static void register_fork_and_exit(void)
{
    (void)pthread_atfork(before_fork, after_parent_fork, after_child_fork);
    (void)atexit(gp_jit_wait_for_load); /* a process that exits without Py_Finalize */
}

void gp_jit_wait_for_load(void)
{
    stop_compile_thread();
    pthread_mutex_lock(&bg.mu);
    while (bg.loading)
        pthread_cond_wait(&bg.cv, &bg.mu);
    pthread_mutex_unlock(&bg.mu);
}

/* fork(): a background compile and a load under way finish first, and
 * none starts until the child exists (W.mu, bg.mu and the compiler lock
 * held through the fork), so the child never inherits one half done. */
static const GpJitApi *api_at_fork;

static void before_fork(void)
{
    pthread_mutex_lock(&W.mu);
    W.paused = 1; /* the job under way finishes; no other starts */
    while (W.busy)
        pthread_cond_wait(&W.idle, &W.mu);
    pthread_mutex_lock(&bg.mu);
    while (bg.loading)
        pthread_cond_wait(&bg.cv, &bg.mu);
    if ((api_at_fork = __atomic_load_n(&api, __ATOMIC_ACQUIRE)) != NULL)
        api_at_fork->lock();
}

static void after_parent_fork(void)
{
    if (api_at_fork)
        api_at_fork->unlock();
    pthread_mutex_unlock(&bg.mu);
    W.paused = 0;
    pthread_cond_broadcast(&W.work);
    pthread_mutex_unlock(&W.mu);
}

/* The child: no compile thread; its queued jobs are dropped (DONE and
 * FAILED ones stay: their kernels are mapped in the child too).  The
 * mutexes and condition variables are made anew: the parent's compile
 * thread, waiting on W.work when the fork happened, does not exist here,
 * and a condition variable with a waiter that never wakes blocks its
 * next signal (glibc's groups). */
static void after_child_fork(void)
{
    for (Job **pj = &W.jobs; *pj;) {
        Job *j = *pj;
        if (j->state == JOB_QUEUED || j->state == JOB_RUNNING) {
            *pj = j->next;
            free(j);
        } else {
            pj = &j->next;
        }
    }
    W.started = 0;
    W.paused = 0;
    __atomic_store_n(&W.busy, 0, __ATOMIC_RELAXED);
    if (api_at_fork)
        api_at_fork->unlock();
    pthread_mutex_t fresh_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cv = PTHREAD_COND_INITIALIZER;
    W.mu = fresh_mu;
    bg.mu = fresh_mu;
    W.work = fresh_cv;
    W.idle = fresh_cv;
    bg.cv = fresh_cv;
}

void gp_jit_init_fork(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_and_exit);
}

void *gp_jit_kernel(const GpProgram *p) { return gp_jit_kernel_for(p, GP_TARGET_CPU); }

/* The table first, then the disk cache through the loader, then (compile
 * set) the code generator (its own table, the disk cache through LLVM, a
 * compile); what is found goes in the table. */
static void *kernel_for(const GpProgram *p, GpTargetKind kind, int compile)
{
    size_t n = gp_program_key_size(p);
    uint64_t h = gp_program_hash(p) + (uint64_t)kind;
    Loaded **slot = &loaded[h % LOADED_BUCKETS];
    for (Loaded *e = *slot; e; e = e->next)
        if (e->hash == h && e->kind == kind && e->keylen == n && memcmp(e->key, p, n) == 0) {
            if (compile && e->counted) /* (the launch that loaded it from disk counted a disk hit) */
                gp_stats.cache_hits++;
            e->counted |= compile;
            return e->fn;
        }
    void *fn = NULL;
    int job = take_done(p, kind, h, n, &fn);
    if (job == 0 && !compile)
        return NULL; /* compiling in the background (the disk may hold its object before the job is done) */
    if (job != 1)
        fn = from_disk(p, kind);
    if (!fn && compile && gp_jit_load() == 0) {
        pthread_mutex_lock(&W.mu);
        W.waiting++;
        pthread_mutex_unlock(&W.mu);
        fn = api->kernel_for(p, kind);
        pthread_mutex_lock(&W.mu);
        if (--W.waiting == 0)
            pthread_cond_signal(&W.work);
        pthread_mutex_unlock(&W.mu);
    }
    if (fn)
        table_add(p, kind, h, n, fn, compile);
    return fn;
}

/* Adds p's kernel to the table, unless it is there (a background compile
 * of a program the calling thread compiled meanwhile). */
static void table_add(const GpProgram *p, GpTargetKind kind, uint64_t h, size_t n, void *fn, int counted)
{
    Loaded **slot = &loaded[h % LOADED_BUCKETS];
    for (Loaded *x = *slot; x; x = x->next)
        if (x->hash == h && x->kind == kind && x->keylen == n && memcmp(x->key, p, n) == 0)
            return;
    Loaded *e = malloc(sizeof *e + n);
    if (e) { /* without it the next call asks again: slower, not wrong */
        *e = (Loaded){.hash = h, .kind = kind, .keylen = n, .fn = fn, .counted = counted, .next = *slot};
        memcpy(e->key, p, n);
        *slot = e;
    }
}

void *gp_jit_kernel_for(const GpProgram *p, GpTargetKind kind) { return kernel_for(p, kind, 1); }

void *gp_jit_kernel_cached(const GpProgram *p, GpTargetKind kind) { return kernel_for(p, kind, 0); }

int gp_jit_kernel_prefetch(const GpProgram *p, GpTargetKind kind)
{
    if (kernel_for(p, kind, 0))
        return 1;
    size_t n = gp_program_key_size(p);
    uint64_t h = gp_program_hash(p) + (uint64_t)kind;
    int r = -1;
    pthread_mutex_lock(&W.mu);
    Job **tail = &W.jobs;
    for (; *tail; tail = &(*tail)->next)
        if (same_job(*tail, p, kind, h, n)) {
            r = (*tail)->state == JOB_FAILED || W.stopping ? -1 : 0;
            break;
        }
    /* a new job, but never under fault injection (its failable steps would
     * land at times no test can repeat) */
    Job *j = !*tail && !W.stopping && !gp_fail_at && !gp_config.force_jit_failure ? malloc(sizeof *j) : NULL;
    if (j) {
        memset(j, 0, sizeof *j);
        j->kind = kind;
        j->state = JOB_QUEUED;
        j->hash = h;
        j->keylen = n;
        memcpy(&j->prog, p, n);
        *tail = j; /* the last: jobs run in the order they are asked for */
        if (start_thread() == 0) {
            pthread_cond_signal(&W.work);
            r = 0;
        } else {
            *tail = NULL;
            free(j);
        }
    }
    pthread_mutex_unlock(&W.mu);
    return r;
}

/* PTX from the disk cache (no LLVM), else compiled by the code generator
 * and stored there.  An entry is text without NULs (the cache's digest
 * and ownership checks stand behind its bytes); anything else is
 * compiled again. */
char *gp_ptx_compile(const GpProgram *p, const char *sm, const char *name)
{
    unsigned char *key = NULL;
    size_t keylen = gp_jit_fail_forced(p) ? 0 : gp_ptx_key(p, sm, name, &key), len = 0;
    char *text = keylen ? gp_cache_load(key, keylen, &len) : NULL;
    char *ptx = text && len > 0 && !memchr(text, '\0', len) ? malloc(len + 1) : NULL;
    if (ptx) {
        memcpy(ptx, text, len);
        ptx[len] = '\0';
        gp_stats.ptx_disk_hits++;
    }
    free(text);
    if (!ptx && gp_jit_load() == 0 && (ptx = api->ptx_compile(p, sm, name)) != NULL && keylen)
        gp_cache_store(key, keylen, ptx, strlen(ptx));
    free(key);
    return ptx;
}

const char *gp_jit_cpu_name(void) { return gp_jit_load() == 0 ? api->cpu_name() : "generic"; }
