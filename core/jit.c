/* core/jit.c -- LLVM ORC LLJIT for the host CPU (LLVM_NOTES.md, "CPU JIT").
 *
 * 1. Once per process: -vector-library=LIBMVEC-X86, native target, a target
 *    machine for the host CPU name and features, an LLJIT built from it,
 *    and symbol generators for the process (libm) and libmvec.so.1.
 * 2. Per program: look the key up in the cache; on a miss build the module
 *    (codegen.c), verify it, run "default<O3>" with loop and SLP
 *    vectorization, hand it to LLJIT and look the kernel up.
 * Errors never exit the process: a diagnostic handler swallows backend
 * errors and every failure returns NULL so the caller falls back.
 */
#include "codegen_llvm.h"
#include "jit.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

GpConfig gp_config;

static LLVMOrcLLJITRef jit;
static LLVMTargetMachineRef tm;
static char *cpu_name, *cpu_features;
static int init_failed;

const char *gp_jit_cpu_name(void) { return cpu_name ? cpu_name : "generic"; }
const char *gp_jit_cpu_features(void) { return cpu_features ? cpu_features : ""; }

static int consume(LLVMErrorRef e, const char *what)
{
    if (!e)
        return 0;
    char *msg = LLVMGetErrorMessage(e);
    gp_set_error("%s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return -1;
}

static void on_diagnostic(LLVMDiagnosticInfoRef info, void *ctx)
{
    int *failed = ctx;
    if (LLVMGetDiagInfoSeverity(info) == LLVMDSError) {
        char *d = LLVMGetDiagInfoDescription(info);
        gp_set_error("LLVM: %s", d);
        LLVMDisposeMessage(d);
        if (failed)
            *failed = 1;
    }
}

static int jit_init(void)
{
    if (jit)
        return 0;
    if (init_failed)
        return -1;
    init_failed = 1;
    const char *argv[] = {"grumpy", "-vector-library=LIBMVEC-X86"};
    LLVMParseCommandLineOptions(2, argv, NULL);
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        gp_set_error("no native LLVM target");
        return -1;
    }
    cpu_name = LLVMGetHostCPUName();
    cpu_features = LLVMGetHostCPUFeatures();
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        gp_set_error("target: %s", err);
        LLVMDisposeMessage(err);
        LLVMDisposeMessage(triple);
        return -1;
    }
    tm = LLVMCreateTargetMachine(target, triple, cpu_name, cpu_features, LLVMCodeGenLevelAggressive,
                                 LLVMRelocPIC, LLVMCodeModelSmall);
    /* a second machine with the same settings is handed to (and owned by) LLJIT */
    LLVMTargetMachineRef jtm = LLVMCreateTargetMachine(target, triple, cpu_name, cpu_features,
                                                       LLVMCodeGenLevelAggressive, LLVMRelocPIC,
                                                       LLVMCodeModelSmall);
    LLVMDisposeMessage(triple);
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jtm));
    if (consume(LLVMOrcCreateLLJIT(&jit, builder), "LLJIT")) {
        jit = NULL;
        return -1;
    }
    LLVMOrcJITDylibRef main = LLVMOrcLLJITGetMainJITDylib(jit);
    char prefix = LLVMOrcLLJITGetGlobalPrefix(jit);
    LLVMOrcDefinitionGeneratorRef gen;
    if (!consume(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, prefix, NULL, NULL), "process symbols"))
        LLVMOrcJITDylibAddGenerator(main, gen);
    if (!consume(LLVMOrcCreateDynamicLibrarySearchGeneratorForPath(&gen, "libmvec.so.1", prefix, NULL, NULL), "libmvec"))
        LLVMOrcJITDylibAddGenerator(main, gen);
    init_failed = 0;
    return 0;
}

/* ---- the cache --------------------------------------------------------- */

typedef struct Entry {
    uint64_t hash;
    size_t keylen;
    void *fn;
    struct Entry *next;
    unsigned char key[];
} Entry;

#define NBUCKETS 1024
static Entry *buckets[NBUCKETS];
static unsigned long kernel_serial;

static uint64_t fnv1a(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static LLVMModuleRef build_module(const GpProgram *p, LLVMContextRef ctx, const char *name, int optimize)
{
    LLVMModuleRef mod = gp_codegen(p, ctx, name);
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMSetTarget(mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, td);
    LLVMDisposeTargetData(td);
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        gp_set_error("invalid IR: %.200s", msg);
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(mod);
        return NULL;
    }
    LLVMDisposeMessage(msg);
    if (optimize) {
        LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
        LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
        LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
        LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
        LLVMErrorRef e = LLVMRunPasses(mod, "default<O3>", tm, opts);
        LLVMDisposePassBuilderOptions(opts);
        if (consume(e, "optimize")) {
            LLVMDisposeModule(mod);
            return NULL;
        }
    }
    return mod;
}

char *gp_jit_ir(const GpProgram *p, int optimize)
{
    gp_lock();
    char *out = NULL;
    if (jit_init() == 0) {
        LLVMContextRef ctx = LLVMContextCreate();
        LLVMModuleRef mod = build_module(p, ctx, "gp_kernel", optimize);
        if (mod) {
            char *s = LLVMPrintModuleToString(mod);
            out = strdup(s);
            LLVMDisposeMessage(s);
            LLVMDisposeModule(mod);
        }
        LLVMContextDispose(ctx);
    }
    gp_unlock();
    return out;
}

void *gp_jit_kernel(const GpProgram *p)
{
    size_t n = gp_program_key_size(p);
    uint64_t h = fnv1a(p, n);
    Entry **slot = &buckets[h % NBUCKETS];
    for (Entry *e = *slot; e; e = e->next) {
        if (e->hash == h && e->keylen == n && memcmp(e->key, p, n) == 0) {
            gp_stats.cache_hits++;
            return e->fn;
        }
    }
    if (gp_config.force_jit_failure) {
        gp_set_error("JIT failure forced by GRUMPY_DEBUG_JIT_FAIL");
        gp_stats.jit_failures++;
        return NULL;
    }
    if (jit_init() < 0) {
        gp_stats.jit_failures++;
        return NULL;
    }
    int64_t t0 = gp_now_ns();
    char name[64];
    snprintf(name, sizeof name, "gp_k%lu_%016llx", ++kernel_serial, (unsigned long long)h);
    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
    int failed = 0;
    LLVMContextSetDiagnosticHandler(ctx, on_diagnostic, &failed);
    LLVMModuleRef mod = build_module(p, ctx, name, 1);
    void *fn = NULL;
    if (mod && !failed) {
        if (gp_config.dump_ir) {
            char *s = LLVMPrintModuleToString(mod);
            fprintf(stderr, "%s\n", s);
            LLVMDisposeMessage(s);
        }
        LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
        LLVMOrcJITDylibRef main = LLVMOrcLLJITGetMainJITDylib(jit);
        if (consume(LLVMOrcLLJITAddLLVMIRModule(jit, main, tsm), "add module")) {
            LLVMOrcDisposeThreadSafeModule(tsm);
        } else {
            LLVMOrcExecutorAddress addr = 0;
            if (!consume(LLVMOrcLLJITLookup(jit, &addr, name), "lookup") && !failed)
                fn = (void *)(uintptr_t)addr;
        }
    } else if (mod) {
        LLVMDisposeModule(mod);
    }
    LLVMOrcDisposeThreadSafeContext(tsc);
    gp_stats.compile_ns += gp_now_ns() - t0;
    if (!fn) {
        gp_stats.jit_failures++;
        return NULL;
    }
    gp_stats.kernels_compiled++;
    Entry *e = malloc(sizeof *e + n);
    if (e) {
        e->hash = h;
        e->keylen = n;
        e->fn = fn;
        memcpy(e->key, p, n);
        e->next = *slot;
        *slot = e;
    }
    return fn;
}
