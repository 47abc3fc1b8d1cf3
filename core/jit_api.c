/* core/jit_api.c -- the code generator library's one entry: the table of
 * its functions that jit_load.c looks up with dlsym (jit.h).
 *
 * Every entry of the table runs under the compiler lock: LLVM's target
 * registry, the one host TargetMachine and LLJIT (jit.c), and the NVPTX
 * target (jit_nvptx.c) are used by one thread at a time, whether the
 * caller is the extension's thread holding the core lock or the
 * background compile thread (jit_load.c), which holds no other lock.
 * Lock order: core lock, then the compiler lock.
 */
#include "jit.h"
#include "jit_nvptx.h"
#include "objload.h"

#include <pthread.h>

static pthread_mutex_t compiler = PTHREAD_MUTEX_INITIALIZER;

static void compiler_lock(void) { pthread_mutex_lock(&compiler); }
static void compiler_unlock(void) { pthread_mutex_unlock(&compiler); }

static void *kernel(const GpProgram *p)
{
    compiler_lock();
    void *fn = gp_jit_kernel(p);
    compiler_unlock();
    return fn;
}

static void *kernel_for(const GpProgram *p, GpTargetKind kind)
{
    compiler_lock();
    void *fn = gp_jit_kernel_for(p, kind);
    compiler_unlock();
    return fn;
}

static void *kernel_counted(const GpProgram *p, GpTargetKind kind, GpJitCounts *c)
{
    compiler_lock();
    void *fn = gp_jit_kernel_counted(p, kind, c);
    compiler_unlock();
    return fn;
}

static char *ptx_compile(const GpProgram *p, const char *sm, const char *name)
{
    compiler_lock();
    char *ptx = gp_ptx_compile(p, sm, name);
    compiler_unlock();
    return ptx;
}

static const char *cpu_name(void)
{
    compiler_lock();
    const char *s = gp_jit_cpu_name();
    compiler_unlock();
    return s;
}

const GpJitApi *gp_jit_api(void)
{
    static const GpJitApi api = {kernel,         kernel_for,    ptx_compile,    cpu_name,
                                 kernel_counted, compiler_lock, compiler_unlock};
    gp_kernel_library_digest(); /* of the files as loaded, before they can be replaced on disk */
    return &api;
}

/* Linked into a program with the code generator (the C tests): nothing to
 * load, and no background thread (a program not yet compiled is compiled
 * by the caller).  The extension's own definitions are jit_load.c's. */
int gp_jit_load(void) { return 0; }
void gp_jit_wait_for_load(void) {}
void gp_jit_init_fork(void) {}
int gp_jit_compiling(void) { return 0; }
void gp_jit_collect(void) {}
int gp_jit_kernel_prefetch(const GpProgram *p, GpTargetKind kind) { return gp_jit_kernel_cached(p, kind) ? 1 : -1; }
