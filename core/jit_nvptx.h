/* core/jit_nvptx.h -- PTX text for a program (jit_nvptx.c). */
#ifndef GP_JIT_NVPTX_H
#define GP_JIT_NVPTX_H

#include "codegen.h"

/* PTX (NUL-terminated, caller frees with free()) of program p for GPU
 * architecture sm ("sm_80", "sm_90", ...), the kernel named `name`; its
 * signature is codegen_nvptx.c's.  NULL with gp_last_error() set when LLVM
 * has no NVPTX target, libdevice cannot be read, or emission fails.
 * Core lock held. */
GP_API char *gp_ptx_compile(const GpProgram *p, const char *sm, const char *name);

#endif
