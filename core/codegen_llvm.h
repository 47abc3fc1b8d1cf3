/* core/codegen_llvm.h -- the LLVM-typed entry of codegen.c, for jit.c only
 * (hooks/ and other users of codegen.h need no LLVM headers). */
#ifndef GP_CODEGEN_LLVM_H
#define GP_CODEGEN_LLVM_H

#include "codegen.h"

#include <llvm-c/Core.h>

/* Builds the IR module of p in ctx; the kernel function is called `name`.
 * Returns a new module owned by the caller. */
LLVMModuleRef gp_codegen(const GpProgram *p, LLVMContextRef ctx, const char *name);

#endif
