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

static void load_once(void)
{
    pthread_mutex_lock(&bg.mu);
    bg.loading = 1;
    pthread_mutex_unlock(&bg.mu);
    const GpJitApi *got = load_library();
    if (got)
        __atomic_store_n(&api, got, __ATOMIC_RELEASE);
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
    if (gp_config.force_jit_failure || library_paths(&ext, gen, sizeof gen) < 0 || files_unchanged(ext, gen) < 0)
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

static void before_fork(void);
static void after_fork(void);

/* gp_jit_init_fork's once: the handlers, registered outside any lock. */
static void register_fork_and_exit(void)
{
    (void)pthread_atfork(before_fork, after_fork, after_fork);
    (void)atexit(gp_jit_wait_for_load); /* a process that exits without Py_Finalize */
}

void gp_jit_wait_for_load(void)
{
    pthread_mutex_lock(&bg.mu);
    while (bg.loading)
        pthread_cond_wait(&bg.cv, &bg.mu);
    pthread_mutex_unlock(&bg.mu);
}

/* fork(): a load under way finishes first, and none starts until the
 * child exists (bg.mu held through the fork), so the child never inherits
 * a load half done. */
static void before_fork(void)
{
    pthread_mutex_lock(&bg.mu);
    while (bg.loading)
        pthread_cond_wait(&bg.cv, &bg.mu);
}

static void after_fork(void) { pthread_mutex_unlock(&bg.mu); }

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
    void *fn = from_disk(p, kind);
    if (!fn && compile && gp_jit_load() == 0)
        fn = api->kernel_for(p, kind);
    Loaded *e = fn ? malloc(sizeof *e + n) : NULL;
    if (e) { /* without it the next call asks again: slower, not wrong */
        *e = (Loaded){.hash = h, .kind = kind, .keylen = n, .fn = fn, .counted = compile, .next = *slot};
        memcpy(e->key, p, n);
        *slot = e;
    }
    return fn;
}

void *gp_jit_kernel_for(const GpProgram *p, GpTargetKind kind) { return kernel_for(p, kind, 1); }

void *gp_jit_kernel_cached(const GpProgram *p, GpTargetKind kind) { return kernel_for(p, kind, 0); }

/* PTX from the disk cache (no LLVM), else compiled by the code generator
 * and stored there.  An entry is text without NULs (the cache's digest
 * and ownership checks stand behind its bytes); anything else is
 * compiled again. */
char *gp_ptx_compile(const GpProgram *p, const char *sm, const char *name)
{
    unsigned char *key = NULL;
    size_t keylen = gp_config.force_jit_failure ? 0 : gp_ptx_key(p, sm, name, &key), len = 0;
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
