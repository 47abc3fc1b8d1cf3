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
 *              (map-reduce), args packed as codegen.h describes
 */
#include "codegen_ir.h"

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
         * the loop vectorizer can use them */
        const char *vs = n == 2 ? "vv" : "v";
        char variants[256], v4[64], v2[64];
        snprintf(v4, sizeof v4, "_ZGVdN4%s_%s", vs, full);
        snprintf(v2, sizeof v2, "_ZGVbN2%s_%s", vs, full);
        snprintf(variants, sizeof variants, "_ZGV_LLVM_N4%s_%s(%s),_ZGV_LLVM_N2%s_%s(%s)", vs, full, v4, vs, full, v2);
        for (int w = 4; w >= 2; w -= 2) {
            const char *vname = w == 4 ? v4 : v2;
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

static void cpu_entry(Cg *c, LLVMValueRef row, const char *name)
{
    int red = c->p->kind == GP_KIND_REDUCE;
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
