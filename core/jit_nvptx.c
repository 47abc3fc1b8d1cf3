/* core/jit_nvptx.c -- PTX for a program: the GPU's compiler (LLVM_NOTES.md,
 * "NVPTX").
 *
 * Per program: the module for target nvptx64-nvidia-cuda (codegen_rows.c
 * with codegen_nvptx.c), libdevice linked in when the module calls an
 * __nv_* function (parsed from the toolkit's libdevice.10.bc for each
 * such compile, 45-60 ms; kernels are cached by the back end), every
 * function but the kernel internalized so that "globaldce" drops the rest
 * of libdevice, PIPELINE, then PTX text from the NVPTX target machine.
 * The driver (runtime_gpu.c) JIT-compiles the PTX for its
 * device; `ptxas` checks it where no device exists (tests).
 *
 * Needs LLVM only (no CUDA driver): it runs on the development machines.
 * Call with the core lock held (LLVM's target registry is initialized
 * once, under it).
 */
#include "jit_nvptx.h"
#include "objload.h"
#include "codegen_llvm.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Error.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdio.h>
#include <stdlib.h>

/* "default<O2>", as the CPU's (jit.c).  Measured on an H100 (two runs
 * each, interleaved, fresh kernel caches): Black-Scholes 10M float64 a
 * pricing 1.944 / 2.075 ms at O2 vs 2.124 / 2.173 ms at O3, the whole
 * process with its compiles 1.77 / 1.56 s vs 2.30 / 1.77 s; the Jacobi
 * loop's kernel seconds within 5% either way (816 kernels at 1024^2:
 * 0.0260 / 0.0263 s vs 0.0243 / 0.0254 s; 136 at 4096^2: 0.0254 / 0.0256
 * vs 0.0262 / 0.0263 s). */
#define PIPELINE "globaldce,default<O2>"
#include <string.h>
#include <unistd.h>

#define TRIPLE "nvptx64-nvidia-cuda"
/* the data layout LLVM's NVPTX back end uses for 64-bit pointers */

static LLVMTargetRef nvptx_target(void)
{
    static int done;
    static LLVMTargetRef target;
    if (!done) {
        done = 1;
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
        char *err = NULL;
        if (LLVMGetTargetFromTriple(TRIPLE, &target, &err)) {
            gp_set_error("NVPTX target: %s", err ? err : "?");
            target = NULL;
        }
        LLVMDisposeMessage(err);
    }
    if (!target)
        gp_set_error("LLVM has no NVPTX target");
    return target;
}

static int uses_libdevice(LLVMModuleRef mod)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        if (LLVMIsDeclaration(f) && len > 5 && !strncmp(name, "__nv_", 5))
            return 1;
    }
    return 0;
}

/* Links libdevice into mod; every function but `keep` becomes internal. */
static int link_libdevice(LLVMContextRef ctx, LLVMModuleRef mod, const char *keep)
{
    LLVMMemoryBufferRef buf;
    char *msg = NULL;
    if (LLVMCreateMemoryBufferWithContentsOfFile(gp_libdevice_path(), &buf, &msg)) {
        gp_set_error("libdevice %s: %s", gp_libdevice_path(), msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMModuleRef lib;
    int bad = LLVMParseBitcodeInContext2(ctx, buf, &lib);
    LLVMDisposeMemoryBuffer(buf);
    if (bad) {
        gp_set_error("libdevice %s: not bitcode", gp_libdevice_path());
        return -1;
    }
    LLVMSetTarget(lib, TRIPLE);
    LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
    if (LLVMLinkModules2(mod, lib)) { /* lib is destroyed either way */
        gp_set_error("linking libdevice failed");
        return -1;
    }
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        const char *name = LLVMGetValueName2(f, &(size_t){0});
        if (!LLVMIsDeclaration(f) && strcmp(name, keep))
            LLVMSetLinkage(f, LLVMInternalLinkage);
    }
    return 0;
}

char *gp_ptx_compile(const GpProgram *p, const char *sm, const char *name)
{
    LLVMTargetRef target = nvptx_target();
    if (!target)
        return NULL;
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, TRIPLE, sm, "+ptx80", LLVMCodeGenLevelAggressive,
                                                      LLVMRelocDefault, LLVMCodeModelDefault);
    if (!tm) {
        gp_set_error("no NVPTX machine for %s", sm);
        return NULL;
    }
    char *ptx = NULL, *msg = NULL;
    LLVMContextRef ctx = LLVMContextCreate();
    GpTarget t = {GP_TARGET_NVPTX, sm, "+ptx80"};
    LLVMModuleRef mod = gp_codegen(p, &t, ctx, name);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, td);
    LLVMDisposeTargetData(td);
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        gp_set_error("invalid NVPTX IR: %.200s", msg);
        goto out;
    }
    if (uses_libdevice(mod) && link_libdevice(ctx, mod, name) != 0)
        goto out;
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(mod, PIPELINE, tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (e) {
        char *em = LLVMGetErrorMessage(e);
        gp_set_error("NVPTX optimize: %s", em);
        LLVMDisposeErrorMessage(em);
        goto out;
    }
    LLVMMemoryBufferRef out;
    LLVMDisposeMessage(msg);
    msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &out)) {
        gp_set_error("PTX emission: %s", msg ? msg : "?");
        goto out;
    }
    size_t n = LLVMGetBufferSize(out);
    ptx = malloc(n + 1);
    if (ptx) {
        memcpy(ptx, LLVMGetBufferStart(out), n);
        ptx[n] = 0;
    }
    LLVMDisposeMemoryBuffer(out);
out:
    LLVMDisposeMessage(msg);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    return ptx;
}
