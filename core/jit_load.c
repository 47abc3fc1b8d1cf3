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

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const GpJitApi *api;
static char load_error[512];

/* The two libraries' files as found at start-up (gp_jit_note_files). */
static struct {
    int noted;
    struct stat ext, gen;
} at_start;

/* The extension's path and the code generator library's beside it:
 * ".../_grumpy<SUFFIX>" -> ".../_grumpy_jit<SUFFIX>".  0, or -1. */
static int library_paths(const char **ext, char *gen, size_t cap)
{
    Dl_info self;
    if (!dladdr((void *)library_paths, &self) || !self.dli_fname)
        return -1;
    const char *base = strrchr(self.dli_fname, '/');
    base = base ? base + 1 : self.dli_fname;
    if (strncmp(base, "_grumpy.", strlen("_grumpy.")) != 0)
        return -1;
    *ext = self.dli_fname;
    int n =
        snprintf(gen, cap, "%.*s_grumpy_jit%s", (int)(base - self.dli_fname), self.dli_fname, base + strlen("_grumpy"));
    return n > 0 && (size_t)n < cap ? 0 : -1;
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

/* Loads the library, once (gp_jit_load): its table, or NULL with load_error. */
static const GpJitApi *load_library(void)
{
    const char *ext;
    char gen[4096];
    struct stat now_ext, now_gen;
    if (library_paths(&ext, gen, sizeof gen) < 0) {
        snprintf(load_error, sizeof load_error, "cannot load the code generator: the extension's path is unusual");
        return NULL;
    }
    /* a library rebuilt or reinstalled since start-up would not match the
     * extension in memory (programs, counters): NumPy computes instead */
    if (at_start.noted && (stat(ext, &now_ext) != 0 || stat(gen, &now_gen) != 0 ||
                           !same_file(&now_ext, &at_start.ext) || !same_file(&now_gen, &at_start.gen))) {
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

static void load_once(void)
{
    const GpJitApi *got = load_library();
    if (got)
        __atomic_store_n(&api, got, __ATOMIC_RELEASE);
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

void *gp_jit_kernel(const GpProgram *p) { return gp_jit_load() == 0 ? api->kernel(p) : NULL; }

void *gp_jit_kernel_for(const GpProgram *p, GpTargetKind kind)
{
    return gp_jit_load() == 0 ? api->kernel_for(p, kind) : NULL;
}

char *gp_ptx_compile(const GpProgram *p, const char *sm, const char *name)
{
    return gp_jit_load() == 0 ? api->ptx_compile(p, sm, name) : NULL;
}

const char *gp_jit_cpu_name(void) { return gp_jit_load() == 0 ? api->cpu_name() : "generic"; }

const char *gp_jit_library_digest(void) { return gp_jit_load() == 0 ? api->library_digest() : NULL; }
