/* core/codegen_cpu.c -- the host CPU as a code generation target
 * (codegen_ir.h).
 *
 *   math       llvm.* intrinsics where LLVM has them, else the C math
 *              library; float64 calls name glibc's libmvec variants so the
 *              loop vectorizer can use them (LLVM_NOTES.md)
 *   raise_fpe  a volatile division or product, so the hardware raises the
 *              flag the CPU pool collects (runtime_cpu.c)
 *   attrs      the host's target-cpu and target-features
 *   entry      void k(const int64_t *args, i64 o0, i64 o1, i64 j0, i64 j1)
 *              (map: outer indices [o0, o1), inner [j0, j1)) or
 *              void k(const int64_t *args, i64 o, i64 j0, i64 n, void *result)
 *              (map-reduce; a pairwise sum over any n, its recursion in
 *              the kernel), args packed as codegen.h describes
 */
#include "codegen_ir.h"
#include "codegen_llvm.h"

#include <stdio.h>
#include <string.h>

/* Call of the C math library function `name` (float32: name "f"). */
static LLVMValueRef libm(Cg *c, const char *name, LLVMTypeRef t, LLVMValueRef *args, unsigned n)
{
    char full[32];
    snprintf(full, sizeof full, "%s%s", name, t == c->f32 ? "f" : "");
    LLVMTypeRef params[2] = {t, t};
    LLVMTypeRef fty = LLVMFunctionType(t, params, n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, full);
    if (!fn) {
        fn = LLVMAddFunction(c->mod, full, fty);
        const char *attrs[] = {"nounwind", "willreturn", "nosync", "nofree"};
        for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
            unsigned k = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
            LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, k, 0));
        }
        /* memory(none): the math library's errno is not observable here */
        unsigned mk = LLVMGetEnumAttributeKindForName("memory", 6);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, mk, 0));
    }
    LLVMValueRef call = LLVMBuildCall2(c->b, fty, fn, args, n, "");
    if (t == c->f64) {
        /* glibc's libmvec has 2- and 4-wide versions of these (AVX2 'd',
         * SSE 'b'); LLVM 19's own table lacks most of them, so the call
         * names them (Vector Function ABI, vector-function-abi-variant) and
         * the loop vectorizer can use them.  One width only: the AVX2 one
         * where the host has AVX2, else SSE's.  Two implementations may
         * round differently, and every element must come from the same one
         * (gp_codegen_cpu_uniform_math makes the scalar calls use it too) */
        const char *vs = n == 2 ? "vv" : "v";
        int w = strstr(c->target->features, "+avx2") ? 4 : 2;
        char variants[256], vname[64];
        snprintf(vname, sizeof vname, "_ZGV%cN%d%s_%s", w == 4 ? 'd' : 'b', w, vs, full);
        snprintf(variants, sizeof variants, "_ZGV_LLVM_N%d%s_%s(%s)", w, vs, full, vname);
        if (!LLVMGetNamedFunction(c->mod, vname)) {
            LLVMTypeRef vt = LLVMVectorType(t, (unsigned)w);
            LLVMTypeRef vp[2] = {vt, vt};
            LLVMValueRef vf = LLVMAddFunction(c->mod, vname, LLVMFunctionType(vt, vp, n, 0));
            unsigned mk = LLVMGetEnumAttributeKindForName("memory", 6);
            LLVMAddAttributeAtIndex(vf, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, mk, 0));
            unsigned nk = LLVMGetEnumAttributeKindForName("nounwind", 8);
            LLVMAddAttributeAtIndex(vf, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, nk, 0));
            if (c->nvector_fns < 64)
                c->vector_fns[c->nvector_fns++] = vf;
        }
        static const char key[] = "vector-function-abi-variant";
        LLVMAddCallSiteAttribute(
            call, LLVMAttributeFunctionIndex,
            LLVMCreateStringAttribute(c->ctx, key, sizeof key - 1, variants, (unsigned)strlen(variants)));
    }
    return call;
}

/* Raises an IEEE exception at run time when cond holds, as NumPy's integer
 * loops (npy_set_floatstatus_divbyzero / _overflow) and the hardware's
 * float-to-integer conversion (invalid) do: a division 1/0, a product
 * MAX*MAX or a division 0/0 of a volatile operand, stored to a volatile
 * sink, so that no optimisation can fold or drop it. */
static void raise_fpe_if(Cg *c, LLVMValueRef cond, int kind)
{
    int overflow = kind == CG_RAISE_OVERFLOW;
    const char *gname = overflow ? "gp_fpe_huge" : "gp_fpe_zero";
    LLVMValueRef g = LLVMGetNamedGlobal(c->mod, gname);
    if (!g) {
        g = LLVMAddGlobal(c->mod, c->f64, gname);
        LLVMSetInitializer(g, cg_cfp(c->f64, overflow ? 1.7976931348623157e308 : 0.0));
        LLVMSetLinkage(g, LLVMInternalLinkage);
    }
    LLVMValueRef sink = LLVMGetNamedGlobal(c->mod, "gp_fpe_sink");
    if (!sink) {
        sink = LLVMAddGlobal(c->mod, c->f64, "gp_fpe_sink");
        LLVMSetInitializer(sink, cg_cfp(c->f64, 0.0));
        LLVMSetLinkage(sink, LLVMInternalLinkage);
    }
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(c->b));
    LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(c->ctx, fn, "fpe");
    LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(c->ctx, fn, "fpe_done");
    LLVMBuildCondBr(c->b, cond, yes, cont);
    LLVMPositionBuilderAtEnd(c->b, yes);
    LLVMValueRef v = LLVMBuildLoad2(c->b, c->f64, g, "");
    LLVMSetVolatile(v, 1);
    LLVMValueRef r = overflow ? LLVMBuildFMul(c->b, v, v, "")
                              : LLVMBuildFDiv(c->b, kind == CG_RAISE_INVALID ? v : cg_cfp(c->f64, 1.0), v, "");
    LLVMSetVolatile(LLVMBuildStore(c->b, r, sink), 1);
    LLVMBuildBr(c->b, cont);
    LLVMPositionBuilderAtEnd(c->b, cont);
}

static void cpu_attrs(Cg *c, LLVMValueRef fn)
{
    const char *cpu = c->target->cpu, *features = c->target->features;
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(c->ctx, "target-cpu", 10, cpu, (unsigned)strlen(cpu)));
    LLVMAddAttributeAtIndex(
        fn, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(c->ctx, "target-features", 15, features, (unsigned)strlen(features)));
    cg_add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
}

static LLVMValueRef cpu_math(Cg *c, const char *in, const char *libm_name, LLVMTypeRef t, LLVMValueRef *args,
                             unsigned n)
{
    return in ? cg_intrinsic(c, in, t, args, n) : libm(c, libm_name, t, args, n);
}

/* NumPy's pairwise summation over [j0, j0+n) (pairwise_sum in
 * loops_utils.h.src) around the leaf row function: n <= 128 is one leaf,
 * else the halves [j0, j0+n2) and [j0+n2, j0+n) with n2 = n/2 rounded
 * down to a multiple of 8, their sums added.  The recursion runs in the
 * kernel, not one host call per leaf (runtime_cpu.c's pairwise).  Same
 * parameters and result as the leaf. */
static LLVMValueRef pairwise_tree(Cg *c, LLVMValueRef leaf)
{
    LLVMTypeRef fty = LLVMGlobalGetValueType(leaf);
    LLVMValueRef fn = LLVMAddFunction(c->mod, "pairwise", fty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    cpu_attrs(c, fn);
    unsigned np = LLVMCountParams(fn);
    int K = c->p->noperands;
    LLVMValueRef args[2 * GP_MAXOPERANDS + 5];
    for (unsigned i = 0; i < np; i++)
        args[i] = LLVMGetParam(fn, i);
    LLVMValueRef j0 = args[2 * K + 1], n = args[2 * K + 2];
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, fn, "entry");
    LLVMBasicBlockRef small = LLVMAppendBasicBlockInContext(c->ctx, fn, "leaf");
    LLVMBasicBlockRef split = LLVMAppendBasicBlockInContext(c->ctx, fn, "split");
    LLVMPositionBuilderAtEnd(c->b, entry);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLE, n, cg_cint(c->i64, 128), ""), small, split);
    LLVMPositionBuilderAtEnd(c->b, small);
    LLVMBuildRet(c->b, LLVMBuildCall2(c->b, fty, leaf, args, np, ""));
    LLVMPositionBuilderAtEnd(c->b, split);
    LLVMValueRef half = LLVMBuildSDiv(c->b, n, cg_cint(c->i64, 2), "");
    LLVMValueRef n2 = LLVMBuildSub(c->b, half, LLVMBuildSRem(c->b, half, cg_cint(c->i64, 8), ""), "n2");
    args[2 * K + 2] = n2;
    LLVMValueRef x = LLVMBuildCall2(c->b, fty, fn, args, np, "");
    args[2 * K + 1] = LLVMBuildAdd(c->b, j0, n2, "");
    args[2 * K + 2] = LLVMBuildSub(c->b, n, n2, "");
    LLVMValueRef y = LLVMBuildCall2(c->b, fty, fn, args, np, "");
    LLVMBuildRet(c->b, LLVMBuildFAdd(c->b, x, y, ""));
    return fn;
}

static void cpu_entry(Cg *c, LLVMValueRef row, const char *name)
{
    int red = c->p->kind == GP_KIND_REDUCE;
    if (red && c->p->pairwise)
        row = pairwise_tree(c, row);
    LLVMTypeRef params[5] = {c->ptr, c->i64, c->i64, c->i64, red ? c->ptr : c->i64};
    LLVMValueRef fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(c->vd, params, 5, 0));
    cpu_attrs(c, fn);
    LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(c->ctx, fn, "entry"));
    LLVMValueRef a = LLVMGetParam(fn, 0);
    if (red) {
        cg_call_row(c, fn, row, a, LLVMGetParam(fn, 1), LLVMGetParam(fn, 2), LLVMGetParam(fn, 3), LLVMGetParam(fn, 4));
    } else {
        LLVMValueRef o;
        CgLoop l = cg_loop_begin(c, fn, LLVMGetParam(fn, 1), LLVMGetParam(fn, 2), cg_cint(c->i64, 1), &o);
        cg_call_row(c, fn, row, a, o, LLVMGetParam(fn, 3), LLVMGetParam(fn, 4), NULL);
        cg_loop_end(c, &l);
    }
    LLVMBuildRetVoid(c->b);
}

/* The vectorizer only uses variants declared in the module: keep them. */
static void cpu_finish(Cg *c)
{
    if (!c->nvector_fns)
        return;
    LLVMTypeRef at = LLVMArrayType2(c->ptr, (uint64_t)c->nvector_fns);
    LLVMValueRef used = LLVMAddGlobal(c->mod, at, "llvm.compiler.used");
    LLVMSetLinkage(used, LLVMAppendingLinkage);
    LLVMSetSection(used, "llvm.metadata");
    LLVMSetInitializer(used, LLVMConstArray2(c->ptr, c->vector_fns, (uint64_t)c->nvector_fns));
}

const CgTargetOps cg_cpu_target = {cpu_attrs, cpu_math, raise_fpe_if, cpu_entry, cpu_finish, 0, 0};

/* glibc's libmvec (x86-64, 2.35 and later): the double functions it has
 * in every width. */
static const char *const libmvec_names[] = {
    "acos",  "acosh", "asin",  "asinh", "atan", "atan2", "atanh", "cbrt", "cos", "cosh", "erf",  "erfc", "exp",
    "exp10", "exp2",  "expm1", "hypot", "log",  "log10", "log1p", "log2", "pow", "sin",  "sinh", "tan",  "tanh"};

/* The one libmvec variant every double call of the math function `callee`
 * is to use (declared in mod when missing), or NULL for other callees.
 * callee: libm's name, LLVM's intrinsic llvm.<name>.f64 (the optimiser
 * turns libm calls into those), or a libmvec variant (the loop
 * vectorizer's choice from LLVM's own table, of either width). */
static LLVMValueRef canonical_variant(LLVMModuleRef mod, LLVMValueRef callee, unsigned nargs, int width)
{
    size_t len;
    const char *name = LLVMGetValueName2(callee, &len);
    char base[32], vname[64];
    const char *us = len > 4 && strncmp(name, "_ZGV", 4) == 0 ? strchr(name, '_') : NULL;
    if (us && (us = strchr(name + 4, '_')) != NULL && strlen(us + 1) < sizeof base) {
        strcpy(base, us + 1); /* _ZGVdN4v_exp -> exp */
    } else if (len > 9 && strncmp(name, "llvm.", 5) == 0 && strcmp(name + len - 4, ".f64") == 0 &&
               len - 9 < sizeof base) {
        memcpy(base, name + 5, len - 9);
        base[len - 9] = 0;
    } else if (len > 0 && len < sizeof base) {
        memcpy(base, name, len);
        base[len] = 0;
    } else {
        return NULL;
    }
    int known = 0;
    for (size_t i = 0; i < sizeof libmvec_names / sizeof *libmvec_names; i++)
        known |= strcmp(base, libmvec_names[i]) == 0;
    if (!known || nargs < 1 || nargs > 2)
        return NULL;
    snprintf(vname, sizeof vname, "_ZGV%cN%d%s_%s", width == 4 ? 'd' : 'b', width, nargs == 2 ? "vv" : "v", base);
    LLVMValueRef f = LLVMGetNamedFunction(mod, vname);
    if (!f) {
        LLVMContextRef ctx = LLVMGetModuleContext(mod);
        LLVMTypeRef vt = LLVMVectorType(LLVMDoubleTypeInContext(ctx), (unsigned)width), vp[2] = {vt, vt};
        f = LLVMAddFunction(mod, vname, LLVMFunctionType(vt, vp, nargs, 0));
        unsigned mk = LLVMGetEnumAttributeKindForName("memory", 6);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, mk, 0));
        unsigned nk = LLVMGetEnumAttributeKindForName("nounwind", 8);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, nk, 0));
    }
    return f;
}

/* v (a double, or a vector of n doubles) as a vector of w doubles: lanes
 * 0 .. n-1 are v's, the others repeat lane 0 (a real argument: no flag
 * a padding lane could raise that a real one does not). */
static LLVMValueRef to_width(LLVMBuilderRef b, LLVMValueRef v, unsigned n, unsigned w)
{
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(v));
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    if (n == 0) { /* a scalar */
        v = LLVMBuildInsertElement(b, LLVMGetUndef(LLVMVectorType(LLVMTypeOf(v), 1)), v, LLVMConstInt(i32, 0, 0), "");
        n = 1;
    }
    LLVMValueRef mask[8];
    for (unsigned l = 0; l < w; l++)
        mask[l] = LLVMConstInt(i32, l < n ? l : 0, 0);
    return LLVMBuildShuffleVector(b, v, LLVMGetUndef(LLVMTypeOf(v)), LLVMConstVector(mask, w), "");
}

int gp_codegen_cpu_uniform_math(LLVMModuleRef mod, const char *features)
{
    int width = features && strstr(features, "+avx2") ? 4 : 2;
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMTypeRef f64 = LLVMDoubleTypeInContext(ctx), i32 = LLVMInt32TypeInContext(ctx);
    int rewritten = 0;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
            LLVMValueRef next;
            for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = next) {
                next = LLVMGetNextInstruction(in);
                if (LLVMGetInstructionOpcode(in) != LLVMCall)
                    continue;
                LLVMTypeRef rt = LLVMTypeOf(in);
                int vec = LLVMGetTypeKind(rt) == LLVMVectorTypeKind;
                unsigned n = vec ? LLVMGetVectorSize(rt) : 0;
                if ((vec ? LLVMGetElementType(rt) : rt) != f64 || n > (unsigned)width)
                    continue;
                LLVMValueRef callee = LLVMGetCalledValue(in);
                unsigned nargs = LLVMGetNumArgOperands(in);
                LLVMValueRef vf = LLVMIsAFunction(callee) ? canonical_variant(mod, callee, nargs, width) : NULL;
                if (!vf || vf == callee)
                    continue;
                LLVMPositionBuilderBefore(b, in);
                LLVMValueRef args[2];
                for (unsigned k = 0; k < nargs; k++)
                    args[k] = to_width(b, LLVMGetOperand(in, k), n, (unsigned)width);
                LLVMValueRef call = LLVMBuildCall2(b, LLVMGlobalGetValueType(vf), vf, args, nargs, "");
                LLVMValueRef r;
                if (!vec) {
                    r = LLVMBuildExtractElement(b, call, LLVMConstInt(i32, 0, 0), "");
                } else {
                    LLVMValueRef mask[8];
                    for (unsigned l = 0; l < n; l++)
                        mask[l] = LLVMConstInt(i32, l, 0);
                    r = LLVMBuildShuffleVector(b, call, LLVMGetUndef(LLVMTypeOf(call)), LLVMConstVector(mask, n), "");
                }
                LLVMReplaceAllUsesWith(in, r);
                LLVMInstructionEraseFromParent(in);
                rewritten++;
            }
        }
    LLVMDisposeBuilder(b);
    return rewritten;
}
