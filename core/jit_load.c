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
#include <stdio.h>
#include <string.h>

static const GpJitApi *api;
static int load_failed;
static char load_error[512];

int gp_jit_load(void)
{
    if (__atomic_load_n(&api, __ATOMIC_ACQUIRE))
        return 0;
    gp_lock();
    if (!api && !load_failed) {
        Dl_info self;
        char path[4096];
        const char *dot = NULL;
        if (dladdr((void *)gp_jit_load, &self) && self.dli_fname)
            dot = strstr(self.dli_fname, "_grumpy.");
        void *ext = dot ? dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) : NULL;
        void *lib = NULL;
        if (ext && snprintf(path, sizeof path, "%.*s_grumpy_jit%s", (int)(dot - self.dli_fname), self.dli_fname,
                            dot + strlen("_grumpy")) < (int)sizeof path)
            lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        const GpJitApi *(*get)(void) = lib ? (const GpJitApi *(*)(void))dlsym(lib, "gp_jit_api") : NULL;
        if (get) {
            __atomic_store_n(&api, get(), __ATOMIC_RELEASE);
        } else {
            const char *why = dot ? dlerror() : "the extension's own path is unknown";
            snprintf(load_error, sizeof load_error, "cannot load the code generator: %s", why ? why : "no gp_jit_api");
            load_failed = 1;
        }
        /* ext is kept open: the extension stays global for the library */
    }
    int rc = api ? 0 : -1;
    if (rc < 0)
        gp_set_error("%s", load_error);
    gp_unlock();
    return rc;
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
