/* core/jit_api.c -- the code generator library's one entry: the table of
 * its functions that jit_load.c looks up with dlsym (jit.h).
 */
#include "jit.h"
#include "jit_nvptx.h"
#include "objload.h"

const GpJitApi *gp_jit_api(void)
{
    static const GpJitApi api = {gp_jit_kernel, gp_jit_kernel_for, gp_ptx_compile, gp_jit_cpu_name};
    gp_kernel_library_digest(); /* of the files as loaded, before they can be replaced on disk */
    return &api;
}

/* Linked into a program with the code generator (the C tests): nothing to
 * load.  The extension's own gp_jit_load is jit_load.c's. */
int gp_jit_load(void) { return 0; }
void gp_jit_wait_for_load(void) {}
void gp_jit_init_fork(void) {}
