/* core/jit.c -- LLVM ORC LLJIT for the host CPU (LLVM_NOTES.md, "CPU JIT").
 *
 * 1. Once per process: -vector-library=LIBMVEC-X86, native target, a target
 *    machine for the host CPU name and features, an LLJIT built from it,
 *    and symbol generators for the process (libm) and libmvec.so.1.
 * 2. Per program: look the key up in the in-memory cache, then in the disk
 *    cache (cache.c); on a miss build the module (codegen.c), verify it, run
 *    "default<O2>" with loop and SLP vectorization and no loop unrolling
 *    (the vectorizer still interleaves), emit object code with the host
 *    target machine at CodeGenLevelDefault (see PIPELINE), store it on
 *    disk, hand it to LLJIT and look the kernel up.  The full key
 *    (objload.c's gp_kernel_key, which the extension uses to load cached
 *    objects without LLVM) covers what the object code depends on: the
 *    program, the host CPU and a SHA-256 of the built libraries.  The
 *    kernel's symbol is named by the key's digest, and each object is added
 *    under its own resource tracker, removed when the object fails to load,
 *    so a failed load never leaves a definition behind to collide with the
 *    recompiled kernel.
 * Errors never exit the process: a diagnostic handler swallows backend
 * errors and every failure returns NULL so the caller falls back.
 */
#include "codegen_llvm.h"
#include "jit.h"
#include "cache.h"
#include "objload.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The optimization pipeline.  Measured on tools/programs/ (24 programs
 * with kernels, 2 CPUs, 2026-11-27, each program's first run with an
 * empty cache then a second run from it): "default<O3>" with unrolling
 * and CodeGenLevelAggressive compiled its 139 kernels in 4.06 s, kernels
 * ran 3.77 s; "default<O2>", no unrolling, CodeGenLevelDefault 2.72 s and
 * 3.66 s (O2 with unrolling 4.10 s vs O3's 4.92 s in another run).  The
 * kernels are loops the vectorizer handles (interleaved), and unrolled
 * copies of them only cost compile time and code size. */
#define PIPELINE "default<O2>"
#define CODEGEN_LEVEL LLVMCodeGenLevelDefault

/* LLVM's command-line options for the host's code generation.  Loop
 * strength reduction was 27% of code generation for a one-operation map
 * kernel (llc -time-passes, 10 copies of the module: 3.3 ms a kernel),
 * and the kernels' loops gain nothing from it: the vector loop differs
 * by one lea (scaled addressing indexes every operand by the induction
 * variable already).  Without it, tools/programs' 127 kernels compiled in
 * 2.02 s instead of 2.38 s (first runs, 2 CPUs, 2026-11-27), and the
 * kernels ran 3.65 s against 3.75 s.  The options are process-wide and
 * NVPTX's code generation reads them too, where LSR is worth keeping
 * (without it, 13 kernels of shallow_water and Black-Scholes took 1226
 * registers in all under ptxas -v for sm_80, not 1024): so they are set
 * only in a process that emits no PTX (gp_config.host_code_only). */
static const char *const HOST_OPTIONS[] = {"grumpy", "-vector-library=LIBMVEC-X86", "-disable-lsr"};

/* A compiled kernel, by its program's key and target. */
typedef struct Entry {
    uint64_t hash;
    GpTargetKind kind;
    size_t keylen;
    void *fn;
    struct Entry *next;
    unsigned char key[];
} Entry;

#define NBUCKETS 1024

/* The JIT's state, for the process: under the library's compiler lock
 * (jit_api.c) where the extension calls in, on its thread or on the
 * background compile thread (jit_load.c); the C tests call in directly,
 * on one thread. */
static struct {
    LLVMOrcLLJITRef jit;
    LLVMTargetMachineRef tm;
    char *cpu_name, *cpu_features; /* the host's, as LLVM names them */
    int init_failed;
    Entry *buckets[NBUCKETS]; /* the compiled kernels, chained by hash */
} J;

const char *gp_jit_cpu_name(void) { return J.cpu_name ? J.cpu_name : "generic"; }
const char *gp_jit_cpu_features(void) { return J.cpu_features ? J.cpu_features : ""; }

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
    if (J.jit)
        return 0;
    if (J.init_failed)
        return -1;
    J.init_failed = 1;
    LLVMParseCommandLineOptions(gp_config.host_code_only ? 3 : 2, HOST_OPTIONS, NULL);
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        gp_set_error("no native LLVM target");
        return -1;
    }
    J.cpu_name = LLVMGetHostCPUName();
    J.cpu_features = LLVMGetHostCPUFeatures();
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        gp_set_error("target: %s", err);
        LLVMDisposeMessage(err);
        LLVMDisposeMessage(triple);
        return -1;
    }
    J.tm = LLVMCreateTargetMachine(target, triple, J.cpu_name, J.cpu_features, CODEGEN_LEVEL, LLVMRelocPIC,
                                   LLVMCodeModelSmall);
    /* a second machine with the same settings is handed to (and owned by) LLJIT */
    LLVMTargetMachineRef jtm = LLVMCreateTargetMachine(target, triple, J.cpu_name, J.cpu_features, CODEGEN_LEVEL,
                                                       LLVMRelocPIC, LLVMCodeModelSmall);
    LLVMDisposeMessage(triple);
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jtm));
    if (consume(LLVMOrcCreateLLJIT(&J.jit, builder), "LLJIT")) {
        J.jit = NULL;
        return -1;
    }
    LLVMOrcJITDylibRef main = LLVMOrcLLJITGetMainJITDylib(J.jit);
    char prefix = LLVMOrcLLJITGetGlobalPrefix(J.jit);
    LLVMOrcDefinitionGeneratorRef gen;
    if (!consume(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, prefix, NULL, NULL), "process symbols"))
        LLVMOrcJITDylibAddGenerator(main, gen);
    if (!consume(LLVMOrcCreateDynamicLibrarySearchGeneratorForPath(&gen, "libmvec.so.1", prefix, NULL, NULL),
                 "libmvec"))
        LLVMOrcJITDylibAddGenerator(main, gen);
    J.init_failed = 0;
    return 0;
}

/* ---- the cache --------------------------------------------------------- */

/* (the compiled kernels: J.buckets) */

static LLVMModuleRef build_module(const GpProgram *p, GpTargetKind kind, LLVMContextRef ctx, const char *name,
                                  int optimize)
{
    GpTarget host = {kind, gp_jit_cpu_name(), gp_jit_cpu_features()};
    LLVMModuleRef mod = gp_codegen(p, &host, ctx, name);
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMSetTarget(mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(J.tm);
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
        LLVMPassBuilderOptionsSetLoopUnrolling(opts, 0);
        LLVMErrorRef e = LLVMRunPasses(mod, PIPELINE, J.tm, opts);
        LLVMDisposePassBuilderOptions(opts);
        if (consume(e, "optimize")) {
            LLVMDisposeModule(mod);
            return NULL;
        }
        /* (the emulated device's kernels too: their scalar calls were
         * glibc's libm where the CPU back end's are libmvec's, and
         * GRUMPY_DEVICE=auto mixes the two back ends in one program) */
        if (kind == GP_TARGET_CPU || kind == GP_TARGET_HOST_GRID)
            gp_codegen_cpu_uniform_math(mod, gp_jit_cpu_features());
    }
    return mod;
}

char *gp_jit_ir(const GpProgram *p, int optimize)
{
    gp_lock();
    char *out = NULL;
    if (jit_init() == 0) {
        LLVMContextRef ctx = LLVMContextCreate();
        LLVMModuleRef mod = build_module(p, GP_TARGET_CPU, ctx, "gp_kernel", optimize);
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

/* Adds object code to the JIT (copying it) under a resource tracker of its
 * own and returns the address of `name`; NULL, with everything the object
 * defined removed again, when it fails to load. */
static void *add_object(const void *obj, size_t objlen, const char *name)
{
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, objlen, name);
    LLVMOrcJITDylibRef main = LLVMOrcLLJITGetMainJITDylib(J.jit);
    LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(main);
    LLVMOrcExecutorAddress addr = 0;
    if (consume(LLVMOrcLLJITAddObjectFileWithRT(J.jit, rt, buf), "add object") ||
        consume(LLVMOrcLLJITLookup(J.jit, &addr, name), "lookup")) {
        LLVMErrorRef e = LLVMOrcResourceTrackerRemove(rt);
        if (e)
            LLVMConsumeError(e);
        addr = 0;
    }
    LLVMOrcReleaseResourceTracker(rt);
    return (void *)(uintptr_t)addr;
}

/* Compiles p to object code (a malloc'd copy in *obj).  0 or -1. */
static int compile_object(const GpProgram *p, GpTargetKind kind, const char *name, void **obj, size_t *objlen)
{
    LLVMContextRef ctx = LLVMContextCreate();
    int failed = 0;
    LLVMContextSetDiagnosticHandler(ctx, on_diagnostic, &failed);
    LLVMModuleRef mod = build_module(p, kind, ctx, name, 1);
    int rc = -1;
    if (mod && !failed) {
        if (gp_config.dump_ir) {
            char *s = LLVMPrintModuleToString(mod);
            fprintf(stderr, "%s\n", s);
            LLVMDisposeMessage(s);
        }
        char *err = NULL;
        LLVMMemoryBufferRef buf = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(J.tm, mod, LLVMObjectFile, &err, &buf)) {
            gp_set_error("emit: %s", err ? err : "?");
            LLVMDisposeMessage(err);
        } else if (!failed) {
            *objlen = LLVMGetBufferSize(buf);
            *obj = malloc(*objlen);
            if (*obj) {
                memcpy(*obj, LLVMGetBufferStart(buf), *objlen);
                rc = 0;
            }
        }
        if (buf)
            LLVMDisposeMemoryBuffer(buf);
    }
    if (mod)
        LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return rc;
}

void *gp_jit_kernel(const GpProgram *p) { return gp_jit_kernel_for(p, GP_TARGET_CPU); }

/* (the C tests' link of the code generator: the table only) */
void *gp_jit_kernel_cached(const GpProgram *p, GpTargetKind kind)
{
    size_t n = gp_program_key_size(p);
    uint64_t h = gp_program_hash(p) + (uint64_t)kind;
    for (Entry *e = J.buckets[h % NBUCKETS]; e; e = e->next)
        if (e->hash == h && e->kind == kind && e->keylen == n && memcmp(e->key, p, n) == 0)
            return e->fn;
    return NULL;
}

void *gp_jit_kernel_counted(const GpProgram *p, GpTargetKind kind, GpJitCounts *c)
{
    size_t n = gp_program_key_size(p);
    uint64_t h = gp_program_hash(p) + (uint64_t)kind;
    Entry **slot = &J.buckets[h % NBUCKETS];
    void *hit = gp_jit_kernel_cached(p, kind);
    if (hit) {
        c->cache_hits++;
        return hit;
    }
    if (gp_jit_fail_forced(p)) {
        gp_set_error("JIT failure forced by GRUMPY_DEBUG_JIT_FAIL");
        c->jit_failures++;
        return NULL;
    }
    if (jit_init() < 0) {
        c->jit_failures++;
        return NULL;
    }
    int64_t t0 = gp_now_ns();
    unsigned char *key = NULL;
    size_t keylen = gp_kernel_key(p, kind, &key); /* objload.c's: the loader's key too */
    /* the symbol is named by the key (or by the program when no key could
     * be made): one name per kernel, the same in every process */
    char name[38];
    if (gp_kernel_symbol(key ? key : (const unsigned char *)p, key ? keylen : n, kind, name) < 0) {
        free(key);
        gp_set_error("SHA-256 failed");
        c->jit_failures++;
        return NULL;
    }
    size_t objlen = 0;
    void *fn = NULL;
    /* already in the JIT (its in-memory entry could not be allocated) */
    LLVMOrcExecutorAddress found = 0;
    LLVMErrorRef le = LLVMOrcLLJITLookup(J.jit, &found, name);
    if (le)
        LLVMConsumeError(le);
    else
        fn = (void *)(uintptr_t)found;
    void *obj = key && !fn ? gp_cache_load(key, keylen, &objlen) : NULL;
    if (obj) {
        fn = add_object(obj, objlen, name);
        if (fn)
            c->disk_cache_hits++;
        free(obj);
        obj = NULL;
    }
    if (!fn && gp_fail_now())
        gp_set_error("compile failure injected by GRUMPY_DEBUG_FAIL");
    else if (!fn && compile_object(p, kind, name, &obj, &objlen) == 0) {
        fn = add_object(obj, objlen, name);
        if (fn) {
            c->kernels_compiled++;
            if (key)
                gp_cache_store(key, keylen, obj, objlen);
        }
    }
    free(obj);
    free(key);
    c->compile_ns += gp_now_ns() - t0;
    if (!fn) {
        c->jit_failures++;
        return NULL;
    }
    Entry *e = malloc(sizeof *e + n);
    if (e) {
        e->hash = h;
        e->kind = kind;
        e->keylen = n;
        e->fn = fn;
        memcpy(e->key, p, n);
        e->next = *slot;
        *slot = e;
    }
    return fn;
}

void *gp_jit_kernel_for(const GpProgram *p, GpTargetKind kind)
{
    GpJitCounts c = {0, 0, 0, 0, 0};
    void *fn = gp_jit_kernel_counted(p, kind, &c);
    gp_jit_counts_add(&c);
    return fn;
}
