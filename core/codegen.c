/* core/codegen.c -- LLVM IR for map and map-reduce kernels (paper section 3).
 *
 * Pipeline of one kernel:
 *   1. A "row" function with one noalias pointer per operand computes the
 *      point function over a range of the innermost dimension: leaves are
 *      loaded by layout class (contiguous: p[j]; broadcast: loaded once;
 *      strided: p + j*stride), every instruction is emitted once per point
 *      in topological order, map outputs are stored.  For map-reduce the row
 *      folds the point values with the reduction's binary operator instead.
 *   2. The kernel entry decomposes each outer index over the outer dims into
 *      per-operand byte offsets and calls the row function.
 *   3. jit.c optimizes (O3, loop and SLP vectorizers, libmvec) and compiles.
 * Semantics are NumPy's, operation by operation: see the MEANING column of
 * ops.def and the comments below.  No fast-math flags are ever set, so
 * basic float operations round exactly as NumPy's loops do.
 */
#include "codegen.h"
#include "codegen_llvm.h"

#include <llvm-c/Core.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, vd;
    const GpProgram *p;
    const GpTarget *target;
    int invariant_b; /* emit_op: input 1 is the same at every point of a row */
    LLVMValueRef scan_acc[GP_MAXINSTR]; /* map-scan: accumulator (alloca) of each SCAN instruction */
    LLVMValueRef vector_fns[64]; /* libmvec declarations kept by llvm.compiler.used */
    int nvector_fns;
    LLVMValueRef invalid_acc; /* i1 alloca: some cast of this row function was out of range */
    LLVMValueRef invalid_fn;  /* the function invalid_acc belongs to */
} Cg;

int gp_op_supports(GpOp op, GpDType t)
{
    int fl = gp_dtype_is_float(t), bl = t == GP_BOOL;
    switch (op) {
    case GP_OP_TRUE_DIVIDE: case GP_OP_RECIPROCAL: case GP_OP_COPYSIGN:
        return fl;
    case GP_OP_BITWISE_AND: case GP_OP_BITWISE_OR: case GP_OP_BITWISE_XOR: case GP_OP_INVERT:
        return !fl;
    case GP_OP_LEFT_SHIFT: case GP_OP_RIGHT_SHIFT:
        return !fl && !bl;
    case GP_OP_SUBTRACT: case GP_OP_NEGATIVE: case GP_OP_POWER: case GP_OP_FLOOR_DIVIDE:
    case GP_OP_REMAINDER: case GP_OP_FMOD:
        return !bl;
    case GP_OP_MATMUL:
        return fl; /* OpenBLAS: float32 and float64 */
    default:
        if (op >= GP_OP_SQRT && op <= GP_OP_HYPOT)
            return fl;
        return 1;
    }
}

size_t gp_program_key_size(const GpProgram *p)
{
    return offsetof(GpProgram, instr) + (size_t)p->ninstr * sizeof(GpInstr);
}

/* ---- types and constants --------------------------------------------- */

static LLVMTypeRef reg_type(Cg *c, GpDType t)
{
    switch (t) {
    case GP_BOOL: return c->i1;
    case GP_INT8: case GP_UINT8: return c->i8;
    case GP_INT16: case GP_UINT16: return c->i16;
    case GP_INT32: case GP_UINT32: return c->i32;
    case GP_INT64: case GP_UINT64: return c->i64;
    case GP_FLOAT32: return c->f32;
    default: return c->f64;
    }
}

static LLVMTypeRef mem_type(Cg *c, GpDType t) { return t == GP_BOOL ? c->i8 : reg_type(c, t); }

static int bits(GpDType t) { return t == GP_BOOL ? 1 : (int)gp_dtype_size(t) * 8; }

static LLVMValueRef cint(LLVMTypeRef t, long long v) { return LLVMConstInt(t, (unsigned long long)v, 1); }
static LLVMValueRef cfp(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

/* Loads a value of dtype t from memory at p (bool bytes: nonzero is true). */
static LLVMValueRef load(Cg *c, GpDType t, LLVMValueRef p)
{
    LLVMValueRef v = LLVMBuildLoad2(c->b, mem_type(c, t), p, "");
    if (t == GP_BOOL)
        v = LLVMBuildICmp(c->b, LLVMIntNE, v, cint(c->i8, 0), "");
    return v;
}

static void store(Cg *c, GpDType t, LLVMValueRef v, LLVMValueRef p)
{
    if (t == GP_BOOL)
        v = LLVMBuildZExt(c->b, v, c->i8, "");
    LLVMBuildStore(c->b, v, p);
}

/* ---- calls ------------------------------------------------------------- */

static LLVMValueRef intrinsic(Cg *c, const char *name, LLVMTypeRef t, LLVMValueRef *args, unsigned n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef tys[1] = {t};
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, tys, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, tys, 1);
    return LLVMBuildCall2(c->b, fty, fn, args, n, "");
}

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
        LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                                 LLVMCreateStringAttribute(c->ctx, key, sizeof key - 1, variants, (unsigned)strlen(variants)));
    }
    return call;
}

static LLVMValueRef is_nan(Cg *c, LLVMValueRef v) { return LLVMBuildFCmp(c->b, LLVMRealUNO, v, v, ""); }
static LLVMValueRef sel(Cg *c, LLVMValueRef k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSelect(c->b, k, a, b, ""); }
static LLVMValueRef tanh_f32(Cg *c, LLVMValueRef xf);

/* Raises an IEEE exception at run time when cond holds, as NumPy's integer
 * loops (npy_set_floatstatus_divbyzero / _overflow) and the hardware's
 * float-to-integer conversion (invalid) do: a division 1/0, a product
 * MAX*MAX or a division 0/0 of a volatile operand, stored to a volatile
 * sink, so that no optimisation can fold or drop it. */
enum { RAISE_DIVIDE, RAISE_OVERFLOW, RAISE_INVALID };
static void raise_fpe_if(Cg *c, LLVMValueRef cond, int kind)
{
    int overflow = kind == RAISE_OVERFLOW;
    const char *gname = overflow ? "gp_fpe_huge" : "gp_fpe_zero";
    LLVMValueRef g = LLVMGetNamedGlobal(c->mod, gname);
    if (!g) {
        g = LLVMAddGlobal(c->mod, c->f64, gname);
        LLVMSetInitializer(g, cfp(c->f64, overflow ? 1.7976931348623157e308 : 0.0));
        LLVMSetLinkage(g, LLVMInternalLinkage);
    }
    LLVMValueRef sink = LLVMGetNamedGlobal(c->mod, "gp_fpe_sink");
    if (!sink) {
        sink = LLVMAddGlobal(c->mod, c->f64, "gp_fpe_sink");
        LLVMSetInitializer(sink, cfp(c->f64, 0.0));
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
                     : LLVMBuildFDiv(c->b, kind == RAISE_INVALID ? v : cfp(c->f64, 1.0), v, "");
    LLVMSetVolatile(LLVMBuildStore(c->b, r, sink), 1);
    LLVMBuildBr(c->b, cont);
    LLVMPositionBuilderAtEnd(c->b, cont);
}

static LLVMValueRef entry_alloca(Cg *c, LLVMTypeRef t, const char *name);

/* "invalid" from a conversion is ORed into a flag of the row function, a
 * reduction the vectorizer keeps in vector registers, and raised once
 * before the function returns (raise_noted): a branch per element would
 * keep the loop scalar (6x slower for a fused sin and cast). */
static void note_invalid(Cg *c, LLVMValueRef cond)
{
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(c->b));
    if (c->invalid_fn != fn) {
        c->invalid_fn = fn;
        c->invalid_acc = entry_alloca(c, c->i1, "invalid");
        LLVMValueRef next = LLVMGetNextInstruction(c->invalid_acc);
        LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
        LLVMPositionBuilderBefore(eb, next);
        LLVMBuildStore(eb, LLVMConstInt(c->i1, 0, 0), c->invalid_acc);
        LLVMDisposeBuilder(eb);
    }
    LLVMValueRef cur = LLVMBuildLoad2(c->b, c->i1, c->invalid_acc, "");
    LLVMBuildStore(c->b, LLVMBuildOr(c->b, cur, cond, ""), c->invalid_acc);
}

/* Before a row function returns: the noted "invalid", raised once. */
static void raise_noted(Cg *c)
{
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(c->b));
    if (c->invalid_fn == fn)
        raise_fpe_if(c, LLVMBuildLoad2(c->b, c->i1, c->invalid_acc, ""), RAISE_INVALID);
}

/* ---- casts: C semantics as NumPy's loops compile on x86-64 ------------- */

/* Float to a 32- or 64-bit signed integer as cvttsd2si: out-of-range and NaN
 * give the "integer indefinite" value INT_MIN and raise "invalid" (NumPy:
 * "invalid value encountered in cast").  *out_of_range, when given, gets
 * the condition instead of the raise (the caller decides). */
static LLVMValueRef x86_fptosi(Cg *c, LLVMValueRef v, GpDType from, int nbits, LLVMValueRef *out_of_range)
{
    LLVMValueRef d = from == GP_FLOAT32 ? LLVMBuildFPExt(c->b, v, c->f64, "") : v;
    LLVMTypeRef it = nbits == 32 ? c->i32 : c->i64;
    double lo = nbits == 32 ? -2147483649.0 : -9223372036854775808.0;
    double hi = nbits == 32 ? 2147483648.0 : 9223372036854775808.0;
    LLVMValueRef in_range = LLVMBuildAnd(
        c->b, LLVMBuildFCmp(c->b, nbits == 32 ? LLVMRealOGT : LLVMRealOGE, d, cfp(c->f64, lo), ""),
        LLVMBuildFCmp(c->b, LLVMRealOLT, d, cfp(c->f64, hi), ""), "");
    LLVMValueRef oor = LLVMBuildNot(c->b, in_range, "");
    if (out_of_range)
        *out_of_range = oor;
    else
        note_invalid(c, oor);
    LLVMValueRef safe = sel(c, in_range, d, cfp(c->f64, 0.0));
    LLVMValueRef r = LLVMBuildFPToSI(c->b, safe, it, "");
    return sel(c, in_range, r, LLVMConstInt(it, nbits == 32 ? 0x80000000ull : 0x8000000000000000ull, 0));
}

static LLVMValueRef emit_cast(Cg *c, LLVMValueRef v, GpDType from, GpDType to)
{
    LLVMTypeRef tt = reg_type(c, to);
    if (from == to)
        return v;
    if (to == GP_BOOL) {
        if (gp_dtype_is_float(from))
            return LLVMBuildFCmp(c->b, LLVMRealUNE, v, cfp(reg_type(c, from), 0.0), "");
        return LLVMBuildICmp(c->b, LLVMIntNE, v, cint(reg_type(c, from), 0), "");
    }
    if (gp_dtype_is_float(from) && gp_dtype_is_float(to))
        return to == GP_FLOAT64 ? LLVMBuildFPExt(c->b, v, tt, "") : LLVMBuildFPTrunc(c->b, v, tt, "");
    if (gp_dtype_is_float(to)) {
        if (from == GP_BOOL || gp_dtype_is_unsigned(from))
            return LLVMBuildUIToFP(c->b, v, tt, "");
        return LLVMBuildSIToFP(c->b, v, tt, "");
    }
    if (gp_dtype_is_float(from)) {
        LLVMValueRef r;
        switch (to) {
        case GP_INT8: case GP_INT16: case GP_UINT8: case GP_UINT16: case GP_INT32:
            r = x86_fptosi(c, v, from, 32, NULL);
            break;
        case GP_UINT64: {
            /* gcc's sequence: values >= 2^63 are offset by 2^63 first */
            LLVMValueRef d = from == GP_FLOAT32 ? LLVMBuildFPExt(c->b, v, c->f64, "") : v;
            LLVMValueRef big = LLVMBuildFCmp(c->b, LLVMRealOGE, d, cfp(c->f64, 9223372036854775808.0), "");
            LLVMValueRef low_oor, shifted_oor;
            LLVMValueRef lowpart = x86_fptosi(c, d, GP_FLOAT64, 64, &low_oor);
            LLVMValueRef shifted = x86_fptosi(
                c, LLVMBuildFSub(c->b, d, cfp(c->f64, 9223372036854775808.0), ""), GP_FLOAT64, 64, &shifted_oor);
            shifted = LLVMBuildXor(c->b, shifted, LLVMConstInt(c->i64, 0x8000000000000000ull, 0), "");
            r = sel(c, big, shifted, lowpart);
            note_invalid(c, sel(c, big, shifted_oor, low_oor)); /* the conversion gcc's sequence ran */
            break;
        }
        default: /* INT64, UINT32 */
            r = x86_fptosi(c, v, from, 64, NULL);
        }
        return (int)LLVMGetIntTypeWidth(LLVMTypeOf(r)) > bits(to) ? LLVMBuildTrunc(c->b, r, tt, "") : r;
    }
    /* integer to integer: truncate or extend by the source's signedness */
    if (bits(to) < bits(from))
        return LLVMBuildTrunc(c->b, v, tt, "");
    if (bits(to) == bits(from))
        return v;
    if (gp_dtype_is_signed(from))
        return LLVMBuildSExt(c->b, v, tt, "");
    return LLVMBuildZExt(c->b, v, tt, "");
}

/* ---- integer division family (NumPy: x // 0 == 0, x % 0 == 0) --------- */

static LLVMValueRef int_divmod(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b, int want_mod, int floor_sem)
{
    LLVMTypeRef it = reg_type(c, t);
    LLVMValueRef zero = cint(it, 0), one = cint(it, 1);
    LLVMValueRef bzero = LLVMBuildICmp(c->b, LLVMIntEQ, b, zero, "");
    raise_fpe_if(c, bzero, RAISE_DIVIDE); /* x // 0, x % 0: NumPy's divide-by-zero flag */
    if (!gp_dtype_is_signed(t)) {
        LLVMValueRef safe = sel(c, bzero, one, b);
        LLVMValueRef r = want_mod ? LLVMBuildURem(c->b, a, safe, "") : LLVMBuildUDiv(c->b, a, safe, "");
        return sel(c, bzero, zero, r);
    }
    LLVMValueRef minv = LLVMConstInt(it, 1ull << (bits(t) - 1), 0);
    LLVMValueRef ovf = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, a, minv, ""),
                                    LLVMBuildICmp(c->b, LLVMIntEQ, b, cint(it, -1), ""), "");
    if (!want_mod)
        raise_fpe_if(c, ovf, RAISE_OVERFLOW); /* MIN // -1: NumPy's overflow flag */
    LLVMValueRef bad = LLVMBuildOr(c->b, bzero, ovf, "");
    LLVMValueRef safe = sel(c, bad, one, b);
    LLVMValueRef q = LLVMBuildSDiv(c->b, a, safe, "");
    LLVMValueRef r = LLVMBuildSRem(c->b, a, safe, "");
    if (floor_sem) {
        /* adjust toward -inf when the remainder's sign differs from b's */
        LLVMValueRef adjust = LLVMBuildAnd(
            c->b, LLVMBuildICmp(c->b, LLVMIntNE, r, zero, ""),
            LLVMBuildICmp(c->b, LLVMIntSLT, LLVMBuildXor(c->b, r, b, ""), zero, ""), "");
        q = sel(c, adjust, LLVMBuildSub(c->b, q, one, ""), q);
        r = sel(c, adjust, LLVMBuildAdd(c->b, r, b, ""), r);
    }
    if (want_mod)
        return sel(c, bad, zero, r);
    /* MIN // -1 wraps to MIN as NumPy's loop does; x // 0 is 0 */
    return sel(c, bzero, zero, sel(c, ovf, minv, q));
}

/* NumPy's npy_divmod for floats; returns floor quotient or modulus. */
static LLVMValueRef float_divmod(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b, int want_mod)
{
    LLVMTypeRef ft = reg_type(c, t);
    LLVMValueRef zero = cfp(ft, 0.0);
    LLVMValueRef args[2] = {a, b};
    LLVMValueRef mod = LLVMBuildFRem(c->b, a, b, "");
    LLVMValueRef bzero = LLVMBuildFCmp(c->b, LLVMRealOEQ, b, zero, "");
    LLVMValueRef div = LLVMBuildFDiv(c->b, LLVMBuildFSub(c->b, a, mod, ""), b, "");
    LLVMValueRef modnz = LLVMBuildFCmp(c->b, LLVMRealUNE, mod, zero, "");
    LLVMValueRef signs_differ = LLVMBuildXor(c->b, LLVMBuildFCmp(c->b, LLVMRealOLT, b, zero, ""),
                                             LLVMBuildFCmp(c->b, LLVMRealOLT, mod, zero, ""), "");
    LLVMValueRef adj = LLVMBuildAnd(c->b, modnz, signs_differ, "");
    LLVMValueRef mod2 = sel(c, adj, LLVMBuildFAdd(c->b, mod, b, ""), mod);
    LLVMValueRef zb[2] = {zero, b};
    mod2 = sel(c, modnz, mod2, intrinsic(c, "llvm.copysign", ft, zb, 2));
    if (want_mod)
        return sel(c, bzero, mod, mod2);
    LLVMValueRef div2 = sel(c, adj, LLVMBuildFSub(c->b, div, cfp(ft, 1.0), ""), div);
    LLVMValueRef fl = intrinsic(c, "llvm.floor", ft, &div2, 1);
    LLVMValueRef up = LLVMBuildFCmp(c->b, LLVMRealOGT, LLVMBuildFSub(c->b, div2, fl, ""), cfp(ft, 0.5), "");
    fl = sel(c, up, LLVMBuildFAdd(c->b, fl, cfp(ft, 1.0), ""), fl);
    LLVMValueRef q = LLVMBuildFDiv(c->b, a, b, "");
    LLVMValueRef zq[2] = {zero, q};
    LLVMValueRef divnz = LLVMBuildFCmp(c->b, LLVMRealUNE, div2, zero, "");
    LLVMValueRef res = sel(c, divnz, fl, intrinsic(c, "llvm.copysign", ft, zq, 2));
    (void)args;
    return sel(c, bzero, q, res);
}

/* Integer a ** b for b >= 0 (the hooks only capture such exponents):
 * square-and-multiply over the bits of b, wrapping as NumPy's loop. */
static LLVMValueRef int_power(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b)
{
    LLVMTypeRef it = reg_type(c, t);
    LLVMValueRef r = cint(it, 1), base = a, e = b;
    for (int i = 0; i < bits(t); i++) {
        LLVMValueRef bit = LLVMBuildTrunc(c->b, e, c->i1, "");
        r = sel(c, bit, LLVMBuildMul(c->b, r, base, ""), r);
        base = LLVMBuildMul(c->b, base, base, "");
        e = LLVMBuildLShr(c->b, e, cint(it, 1), "");
    }
    return r;
}

/* a ** b for floats; float32 through double, rounded once. */
static LLVMValueRef float_pow(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b)
{
    if (t == GP_FLOAT32) {
        LLVMValueRef dx[2] = {LLVMBuildFPExt(c->b, a, c->f64, ""), LLVMBuildFPExt(c->b, b, c->f64, "")};
        return LLVMBuildFPTrunc(c->b, intrinsic(c, "llvm.pow", c->f64, dx, 2), c->f32, "");
    }
    LLVMValueRef x[2] = {a, b};
    return intrinsic(c, "llvm.pow", c->f64, x, 2);
}

/* ---- one instruction --------------------------------------------------- */

static LLVMValueRef max_like(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b, int is_max)
{
    if (gp_dtype_is_float(t)) {
        LLVMValueRef better = LLVMBuildFCmp(c->b, is_max ? LLVMRealOGT : LLVMRealOLT, a, b, "");
        return sel(c, is_nan(c, a), a, sel(c, better, a, b));
    }
    LLVMIntPredicate pr = gp_dtype_is_signed(t) ? (is_max ? LLVMIntSGT : LLVMIntSLT)
                                                : (is_max ? LLVMIntUGT : LLVMIntULT);
    return sel(c, LLVMBuildICmp(c->b, pr, a, b, ""), a, b);
}

static LLVMValueRef compare(Cg *c, GpOp op, GpDType t, LLVMValueRef a, LLVMValueRef b)
{
    if (gp_dtype_is_float(t)) {
        static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                               LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
        return LLVMBuildFCmp(c->b, fp[op - GP_OP_EQUAL], a, b, "");
    }
    int s = gp_dtype_is_signed(t);
    LLVMIntPredicate ip[] = {LLVMIntEQ, LLVMIntNE, s ? LLVMIntSLT : LLVMIntULT,
                             s ? LLVMIntSLE : LLVMIntULE, s ? LLVMIntSGT : LLVMIntUGT,
                             s ? LLVMIntSGE : LLVMIntUGE};
    return LLVMBuildICmp(c->b, ip[op - GP_OP_EQUAL], a, b, "");
}

static LLVMValueRef truth(Cg *c, GpDType t, LLVMValueRef v) { return emit_cast(c, v, t, GP_BOOL); }

static LLVMValueRef emit_op(Cg *c, const GpInstr *ins, LLVMValueRef *x)
{
    GpDType t = ins->dtype, ti = ins->in_dtype;
    LLVMTypeRef rt = reg_type(c, t), it = reg_type(c, ti);
    int fl = gp_dtype_is_float(ti), sg = gp_dtype_is_signed(ti);
    LLVMValueRef a = x[0], b = x[1];
    const char *m = NULL; /* libm name */
    const char *in = NULL; /* intrinsic name */
    switch ((GpOp)ins->op) {
    case GP_OP_CAST: return emit_cast(c, a, ti, t);
    case GP_OP_ADD:
        return fl ? LLVMBuildFAdd(c->b, a, b, "") : ti == GP_BOOL ? LLVMBuildOr(c->b, a, b, "") : LLVMBuildAdd(c->b, a, b, "");
    case GP_OP_SUBTRACT: return fl ? LLVMBuildFSub(c->b, a, b, "") : LLVMBuildSub(c->b, a, b, "");
    case GP_OP_MULTIPLY:
        return fl ? LLVMBuildFMul(c->b, a, b, "") : ti == GP_BOOL ? LLVMBuildAnd(c->b, a, b, "") : LLVMBuildMul(c->b, a, b, "");
    case GP_OP_TRUE_DIVIDE: return LLVMBuildFDiv(c->b, a, b, "");
    case GP_OP_FLOOR_DIVIDE: return fl ? float_divmod(c, ti, a, b, 0) : int_divmod(c, ti, a, b, 0, 1);
    case GP_OP_REMAINDER: return fl ? float_divmod(c, ti, a, b, 1) : int_divmod(c, ti, a, b, 1, 1);
    case GP_OP_FMOD: return fl ? LLVMBuildFRem(c->b, a, b, "") : int_divmod(c, ti, a, b, 1, 0);
    case GP_OP_POWER:
        if (!fl)
            return int_power(c, ti, a, b);
        if (c->invariant_b) {
            /* NumPy's power loop with a broadcast exponent: -1, 0, 0.5, 1, 2
             * are reciprocal, one, sqrt, copy and square (no pow call) */
            LLVMValueRef r = float_pow(c, ti, a, b);
            LLVMValueRef eq[5];
            static const double special[5] = {2.0, 1.0, 0.5, 0.0, -1.0};
            for (int q = 0; q < 5; q++)
                eq[q] = LLVMBuildFCmp(c->b, LLVMRealOEQ, b, cfp(it, special[q]), "");
            r = sel(c, eq[0], LLVMBuildFMul(c->b, a, a, ""), r);
            r = sel(c, eq[1], a, r);
            r = sel(c, eq[2], intrinsic(c, "llvm.sqrt", it, &a, 1), r);
            r = sel(c, eq[3], cfp(it, 1.0), r);
            return sel(c, eq[4], LLVMBuildFDiv(c->b, cfp(it, 1.0), a, ""), r);
        }
        return float_pow(c, ti, a, b);
    case GP_OP_EQUAL: case GP_OP_NOT_EQUAL: case GP_OP_LESS: case GP_OP_LESS_EQUAL:
    case GP_OP_GREATER: case GP_OP_GREATER_EQUAL:
        return compare(c, (GpOp)ins->op, ti, a, b);
    case GP_OP_LOGICAL_AND: return LLVMBuildAnd(c->b, truth(c, ti, a), truth(c, ins->nin > 1 ? ti : ti, b), "");
    case GP_OP_LOGICAL_OR: return LLVMBuildOr(c->b, truth(c, ti, a), truth(c, ti, b), "");
    case GP_OP_LOGICAL_XOR: return LLVMBuildXor(c->b, truth(c, ti, a), truth(c, ti, b), "");
    case GP_OP_LOGICAL_NOT: return LLVMBuildNot(c->b, truth(c, ti, a), "");
    case GP_OP_BITWISE_AND: return LLVMBuildAnd(c->b, a, b, "");
    case GP_OP_BITWISE_OR: return LLVMBuildOr(c->b, a, b, "");
    case GP_OP_BITWISE_XOR: return LLVMBuildXor(c->b, a, b, "");
    case GP_OP_INVERT: return LLVMBuildNot(c->b, a, "");
    case GP_OP_LEFT_SHIFT: case GP_OP_RIGHT_SHIFT: {
        /* NumPy: a shift by >= bits (or a negative count) gives 0, or -1
         * for a negative a shifted right */
        LLVMValueRef nb = cint(it, bits(ti));
        LLVMValueRef ok = LLVMBuildICmp(c->b, LLVMIntULT, b, nb, "");
        LLVMValueRef safe = sel(c, ok, b, cint(it, 0));
        if (ins->op == GP_OP_LEFT_SHIFT)
            return sel(c, ok, LLVMBuildShl(c->b, a, safe, ""), cint(it, 0));
        if (!sg)
            return sel(c, ok, LLVMBuildLShr(c->b, a, safe, ""), cint(it, 0));
        LLVMValueRef fill = sel(c, LLVMBuildICmp(c->b, LLVMIntSLT, a, cint(it, 0), ""), cint(it, -1), cint(it, 0));
        return sel(c, ok, LLVMBuildAShr(c->b, a, safe, ""), fill);
    }
    case GP_OP_ABSOLUTE:
        if (fl)
            return intrinsic(c, "llvm.fabs", it, &a, 1);
        if (!sg)
            return a;
        return sel(c, LLVMBuildICmp(c->b, LLVMIntSLT, a, cint(it, 0), ""), LLVMBuildNeg(c->b, a, ""), a);
    case GP_OP_NEGATIVE: return fl ? LLVMBuildFNeg(c->b, a, "") : LLVMBuildNeg(c->b, a, "");
    case GP_OP_POSITIVE: return a;
    case GP_OP_SIGN:
        if (fl) {
            LLVMValueRef r = sel(c, LLVMBuildFCmp(c->b, LLVMRealOEQ, a, cfp(it, 0.0), ""), cfp(it, 0.0), a);
            r = sel(c, LLVMBuildFCmp(c->b, LLVMRealOLT, a, cfp(it, 0.0), ""), cfp(it, -1.0), r);
            return sel(c, LLVMBuildFCmp(c->b, LLVMRealOGT, a, cfp(it, 0.0), ""), cfp(it, 1.0), r);
        } else {
            LLVMValueRef pos = LLVMBuildZExt(c->b, LLVMBuildICmp(c->b, sg ? LLVMIntSGT : LLVMIntUGT, a, cint(it, 0), ""), it, "");
            if (!sg)
                return pos;
            LLVMValueRef neg = LLVMBuildZExt(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, a, cint(it, 0), ""), it, "");
            return LLVMBuildSub(c->b, pos, neg, "");
        }
    case GP_OP_SQUARE:
        return fl ? LLVMBuildFMul(c->b, a, a, "") : ti == GP_BOOL ? a : LLVMBuildMul(c->b, a, a, "");
    case GP_OP_RECIPROCAL: return LLVMBuildFDiv(c->b, cfp(it, 1.0), a, "");
    case GP_OP_SQRT: in = "llvm.sqrt"; break;
    case GP_OP_CBRT: m = "cbrt"; break;
    case GP_OP_EXP: in = "llvm.exp"; break;
    case GP_OP_EXP2: in = "llvm.exp2"; break;
    case GP_OP_EXPM1: m = "expm1"; break;
    case GP_OP_LOG: in = "llvm.log"; break;
    case GP_OP_LOG2: in = "llvm.log2"; break;
    case GP_OP_LOG10: in = "llvm.log10"; break;
    case GP_OP_LOG1P: m = "log1p"; break;
    case GP_OP_SIN: in = "llvm.sin"; break;
    case GP_OP_COS: in = "llvm.cos"; break;
    case GP_OP_TAN: m = "tan"; break;
    case GP_OP_ARCSIN: m = "asin"; break;
    case GP_OP_ARCCOS: m = "acos"; break;
    case GP_OP_ARCTAN: m = "atan"; break;
    case GP_OP_SINH: m = "sinh"; break;
    case GP_OP_COSH: m = "cosh"; break;
    case GP_OP_TANH: m = "tanh"; break;
    case GP_OP_ARCSINH: m = "asinh"; break;
    case GP_OP_ARCCOSH: m = "acosh"; break;
    case GP_OP_ARCTANH: m = "atanh"; break;
    case GP_OP_ARCTAN2: m = "atan2"; break;
    case GP_OP_HYPOT: m = "hypot"; break;
    case GP_OP_MAXIMUM: case GP_OP_MINIMUM:
        if (ti == GP_BOOL)
            return ins->op == GP_OP_MAXIMUM ? LLVMBuildOr(c->b, a, b, "") : LLVMBuildAnd(c->b, a, b, "");
        return max_like(c, ti, a, b, ins->op == GP_OP_MAXIMUM);
    case GP_OP_FMAX: case GP_OP_FMIN:
        if (fl) {
            /* NumPy's vector loops: NaN ignored, ties give the second operand
             * (isnan(b) ? a : isnan(a) ? b : a > b ? a : b for fmax) */
            LLVMValueRef better = LLVMBuildFCmp(c->b, ins->op == GP_OP_FMAX ? LLVMRealOGT : LLVMRealOLT, a, b, "");
            return sel(c, is_nan(c, b), a, sel(c, is_nan(c, a), b, sel(c, better, a, b)));
        }
        if (ti == GP_BOOL)
            return ins->op == GP_OP_FMAX ? LLVMBuildOr(c->b, a, b, "") : LLVMBuildAnd(c->b, a, b, "");
        return max_like(c, ti, a, b, ins->op == GP_OP_FMAX);
    case GP_OP_FLOOR: if (!fl) return a; in = "llvm.floor"; break;
    case GP_OP_CEIL: if (!fl) return a; in = "llvm.ceil"; break;
    case GP_OP_TRUNC: if (!fl) return a; in = "llvm.trunc"; break;
    case GP_OP_RINT: if (!fl) return a; in = "llvm.rint"; break;
    case GP_OP_ISNAN: return fl ? is_nan(c, a) : cint(c->i1, 0);
    case GP_OP_ISINF:
        return fl ? LLVMBuildFCmp(c->b, LLVMRealOEQ, intrinsic(c, "llvm.fabs", it, &a, 1), cfp(it, 1.0 / 0.0), "") : cint(c->i1, 0);
    case GP_OP_ISFINITE:
        return fl ? LLVMBuildFCmp(c->b, LLVMRealOLT, intrinsic(c, "llvm.fabs", it, &a, 1), cfp(it, 1.0 / 0.0), "") : cint(c->i1, 1);
    case GP_OP_SIGNBIT:
        if (fl) {
            LLVMTypeRef bt = ti == GP_FLOAT32 ? c->i32 : c->i64;
            return LLVMBuildICmp(c->b, LLVMIntSLT, LLVMBuildBitCast(c->b, a, bt, ""), cint(bt, 0), "");
        }
        return sg ? LLVMBuildICmp(c->b, LLVMIntSLT, a, cint(it, 0), "") : cint(c->i1, 0);
    case GP_OP_COPYSIGN: in = "llvm.copysign"; break;
    case GP_OP_WHERE: return sel(c, a, x[1], x[2]);
    case GP_OP_CLIP: {
        /* NumPy's _NPY_CLIP: min(max(x, lo), hi), a NaN x propagates */
        GpDType tv = ins->dtype;
        LLVMValueRef lo = x[1], hi = x[2], r;
        if (gp_dtype_is_float(tv)) {
            r = sel(c, is_nan(c, a), a, sel(c, LLVMBuildFCmp(c->b, LLVMRealOGT, a, lo, ""), a, lo));
            return sel(c, is_nan(c, r), r, sel(c, LLVMBuildFCmp(c->b, LLVMRealOLT, r, hi, ""), r, hi));
        }
        int s2 = gp_dtype_is_signed(tv);
        r = sel(c, LLVMBuildICmp(c->b, s2 ? LLVMIntSGT : LLVMIntUGT, a, lo, ""), a, lo);
        return sel(c, LLVMBuildICmp(c->b, s2 ? LLVMIntSLT : LLVMIntULT, r, hi, ""), r, hi);
    }
    default:
        return NULL;
    }
    (void)rt;
    unsigned n = (unsigned)gp_op_nin[ins->op];
    int exact = ins->op == GP_OP_SQRT || ins->op == GP_OP_COPYSIGN || !strncmp(in ? in : "", "llvm.floor", 10) ||
                ins->op == GP_OP_CEIL || ins->op == GP_OP_TRUNC || ins->op == GP_OP_RINT;
    if (ti == GP_FLOAT32 && ins->op == GP_OP_TANH)
        return tanh_f32(c, x[0]);
    if (ti == GP_FLOAT32 && !exact) {
        /* float32 transcendentals are evaluated in double and rounded once:
         * within 1 ULP of the exact result, so within NumPy's own bound */
        LLVMValueRef dx[2];
        for (unsigned i = 0; i < n; i++)
            dx[i] = LLVMBuildFPExt(c->b, x[i], c->f64, "");
        LLVMValueRef r = in ? intrinsic(c, in, c->f64, dx, n) : libm(c, m, c->f64, dx, n);
        return LLVMBuildFPTrunc(c->b, r, c->f32, "");
    }
    if (in)
        return intrinsic(c, in, it, x, n);
    return libm(c, m, it, x, n);
}

/* float32 tanh evaluated in double and rounded once (within 1 ULP of the
 * exact value): 1 - 2 / (exp(2x) + 1) for |x| >= 1/32, whose absolute
 * error (~2e-16) is below 1e-14 relative there; the odd Taylor series to
 * x^9 below 1/32 as x * (1 + x^2 p(x^2)) (truncation under 1e-17 relative;
 * the sign of -0.0 kept).
 * glibc's vector tanh is about 4x slower than vector exp, so float32 uses
 * exp, which vectorizes through libmvec; float64 keeps libm's tanh. */
static LLVMValueRef tanh_f32(Cg *c, LLVMValueRef xf)
{
    LLVMValueRef d = LLVMBuildFPExt(c->b, xf, c->f64, "");
    LLVMValueRef d2 = LLVMBuildFMul(c->b, d, d, "");
    static const double taylor[] = {-1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0};
    LLVMValueRef p = cfp(c->f64, taylor[3]);
    for (int i = 2; i >= 0; i--)
        p = LLVMBuildFAdd(c->b, cfp(c->f64, taylor[i]), LLVMBuildFMul(c->b, d2, p, ""), "");
    LLVMValueRef small = LLVMBuildFMul(c->b, d, LLVMBuildFAdd(c->b, cfp(c->f64, 1.0), LLVMBuildFMul(c->b, d2, p, ""), ""), "");
    LLVMValueRef twice = LLVMBuildFAdd(c->b, d, d, "");
    LLVMValueRef e = intrinsic(c, "llvm.exp", c->f64, &twice, 1);
    LLVMValueRef large = LLVMBuildFSub(c->b, cfp(c->f64, 1.0),
                                       LLVMBuildFDiv(c->b, cfp(c->f64, 2.0), LLVMBuildFAdd(c->b, e, cfp(c->f64, 1.0), ""), ""), "");
    LLVMValueRef ad = intrinsic(c, "llvm.fabs", c->f64, &d, 1);
    LLVMValueRef r = sel(c, LLVMBuildFCmp(c->b, LLVMRealOLT, ad, cfp(c->f64, 1.0 / 32.0), ""), small, large);
    return LLVMBuildFPTrunc(c->b, r, c->f32, "");
}

/* ---- reductions -------------------------------------------------------- */

static LLVMValueRef reduce_step(Cg *c, GpOp op, GpDType t, LLVMValueRef acc, LLVMValueRef v)
{
    int fl = gp_dtype_is_float(t);
    switch (op) {
    case GP_OP_SUM: return fl ? LLVMBuildFAdd(c->b, acc, v, "") : t == GP_BOOL ? LLVMBuildOr(c->b, acc, v, "") : LLVMBuildAdd(c->b, acc, v, "");
    case GP_OP_PROD: return fl ? LLVMBuildFMul(c->b, acc, v, "") : t == GP_BOOL ? LLVMBuildAnd(c->b, acc, v, "") : LLVMBuildMul(c->b, acc, v, "");
    case GP_OP_MIN: return t == GP_BOOL ? LLVMBuildAnd(c->b, acc, v, "") : max_like(c, t, acc, v, 0);
    case GP_OP_MAX: return t == GP_BOOL ? LLVMBuildOr(c->b, acc, v, "") : max_like(c, t, acc, v, 1);
    case GP_OP_ANY: return LLVMBuildOr(c->b, acc, v, "");
    default: return LLVMBuildAnd(c->b, acc, v, "");
    }
}

/* ---- kernel structure -------------------------------------------------- */

typedef struct {
    LLVMValueRef base[GP_MAXOPERANDS];   /* row base pointer of each operand */
    LLVMValueRef stride[GP_MAXOPERANDS]; /* inner stride, bytes */
    LLVMValueRef bval[GP_MAXINSTR];      /* broadcast leaves and constants, loaded per row */
} Row;

static LLVMValueRef reduce_step(Cg *c, GpOp op, GpDType t, LLVMValueRef acc, LLVMValueRef v);

/* Address of element j of operand slot (by its layout class). */
static LLVMValueRef element_ptr(Cg *c, Row *r, int slot, GpDType t, LLVMValueRef j)
{
    if (c->p->layout[slot] == GP_LAYOUT_CONTIG)
        return LLVMBuildGEP2(c->b, mem_type(c, t), r->base[slot], &j, 1, "");
    LLVMValueRef off = LLVMBuildMul(c->b, j, r->stride[slot], "");
    return LLVMBuildGEP2(c->b, c->i8, r->base[slot], &off, 1, "");
}

/* Emits the point function at inner index j; returns the value of the
 * reduced instruction (map-reduce) and stores map outputs. */
static LLVMValueRef emit_point(Cg *c, Row *r, LLVMValueRef j, int store_outputs)
{
    const GpProgram *p = c->p;
    LLVMValueRef val[GP_MAXINSTR];
    for (int k = 0; k < p->ninstr; k++) {
        const GpInstr *ins = &p->instr[k];
        GpDType t = ins->dtype;
        if (ins->op == GP_OP_CONST || (ins->op == GP_OP_LEAF && p->layout[ins->slot] == GP_LAYOUT_BCAST)) {
            val[k] = r->bval[k];
        } else if (ins->op == GP_OP_LEAF) {
            val[k] = load(c, t, element_ptr(c, r, ins->slot, t, j));
        } else {
            LLVMValueRef x[3] = {NULL, NULL, NULL};
            for (int i = 0; i < ins->nin; i++)
                x[i] = val[ins->in[i]];
            const GpInstr *b1 = ins->nin > 1 ? &p->instr[ins->in[1]] : NULL;
            c->invariant_b = b1 && (b1->op == GP_OP_CONST || (b1->op == GP_OP_LEAF && p->layout[b1->slot] == GP_LAYOUT_BCAST));
            if (gp_op_kind[ins->op] == GP_KIND_SCAN) {
                /* map-scan: acc := acc (op) value, stored at every point */
                LLVMTypeRef at = reg_type(c, t);
                val[k] = reduce_step(c, gp_scan_reduce_op((GpOp)ins->op), t, LLVMBuildLoad2(c->b, at, c->scan_acc[k], ""), x[0]);
                LLVMBuildStore(c->b, val[k], c->scan_acc[k]);
                if (store_outputs && ins->slot >= 0)
                    store(c, t, val[k], element_ptr(c, r, ins->slot, t, j));
                continue;
            }
            if (gp_op_kind[ins->op] == GP_KIND_REDUCE) {
                /* accumulate: out := out (op) value, in the order of the outer loop */
                LLVMValueRef ptr = element_ptr(c, r, ins->slot, t, j);
                store(c, t, reduce_step(c, (GpOp)ins->op, t, load(c, t, ptr), x[0]), ptr);
                val[k] = x[0];
                continue;
            }
            val[k] = emit_op(c, ins, x);
            if (store_outputs && ins->slot >= 0)
                store(c, t, val[k], element_ptr(c, r, ins->slot, t, j));
        }
    }
    return p->kind == GP_KIND_REDUCE ? val[p->root] : NULL;
}

/* A counted loop for (i = start; i < end; i += step) around body(); the
 * counter lives in an alloca that SROA turns into a phi. */
/* An alloca in the entry block of the current function, where SROA can
 * promote it to SSA values. */
static LLVMValueRef entry_alloca(Cg *c, LLVMTypeRef t, const char *name)
{
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(c->b);
    LLVMValueRef fn = LLVMGetBasicBlockParent(cur);
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first)
        LLVMPositionBuilderBefore(eb, first);
    else
        LLVMPositionBuilderAtEnd(eb, entry);
    LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
    LLVMDisposeBuilder(eb);
    return a;
}

typedef struct {
    LLVMValueRef var;
    LLVMBasicBlockRef cond, body, exit;
    LLVMValueRef step;
} Loop;

static Loop loop_begin(Cg *c, LLVMValueRef fn, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step, LLVMValueRef *i)
{
    Loop l;
    l.var = entry_alloca(c, c->i64, "i");
    l.step = step;
    LLVMBuildStore(c->b, start, l.var);
    l.cond = LLVMAppendBasicBlockInContext(c->ctx, fn, "cond");
    l.body = LLVMAppendBasicBlockInContext(c->ctx, fn, "body");
    l.exit = LLVMAppendBasicBlockInContext(c->ctx, fn, "exit");
    LLVMBuildBr(c->b, l.cond);
    LLVMPositionBuilderAtEnd(c->b, l.cond);
    LLVMValueRef cur = LLVMBuildLoad2(c->b, c->i64, l.var, "");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, cur, end, ""), l.body, l.exit);
    LLVMPositionBuilderAtEnd(c->b, l.body);
    *i = LLVMBuildLoad2(c->b, c->i64, l.var, "");
    return l;
}

static void loop_end(Cg *c, Loop *l)
{
    LLVMValueRef cur = LLVMBuildLoad2(c->b, c->i64, l->var, "");
    LLVMBuildStore(c->b, LLVMBuildAdd(c->b, cur, l->step, ""), l->var);
    LLVMBuildBr(c->b, l->cond);
    LLVMPositionBuilderAtEnd(c->b, l->exit);
}

static void add_attr(Cg *c, LLVMValueRef fn, unsigned idx, const char *name)
{
    unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(c->ctx, k, 0));
}

static void cpu_attrs(Cg *c, LLVMValueRef fn)
{
    const char *cpu = c->target->cpu, *features = c->target->features;
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(c->ctx, "target-cpu", 10, cpu, (unsigned)strlen(cpu)));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(c->ctx, "target-features", 15, features, (unsigned)strlen(features)));
    add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
}

#define RED_CHUNK 128 /* points per map-reduce chunk; NumPy's PW_BLOCKSIZE */

static LLVMValueRef load_tmp(Cg *c, LLVMValueRef tmp, LLVMTypeRef at, LLVMValueRef i)
{
    return LLVMBuildLoad2(c->b, at, LLVMBuildGEP2(c->b, at, tmp, &i, 1, ""), "");
}

/* tmp[i] := point(j + i) for i in [0, m): the map part of a map-reduce as
 * a plain loop the vectorizer handles like any map kernel. */
static void fill_tmp(Cg *c, LLVMValueRef fn, Row *r, LLVMValueRef tmp, LLVMTypeRef at, LLVMValueRef j, LLVMValueRef m)
{
    LLVMValueRef i;
    Loop l = loop_begin(c, fn, cint(c->i64, 0), m, cint(c->i64, 1), &i);
    LLVMValueRef v = emit_point(c, r, LLVMBuildAdd(c->b, j, i, ""), 1);
    LLVMBuildStore(c->b, v, LLVMBuildGEP2(c->b, at, tmp, &i, 1, ""));
    loop_end(c, &l);
}

/* for (c0 = j0; c0 < end; c0 += RED_CHUNK) with tmp[0..m) := the points
 * of the chunk; close with loop_end. */
static Loop chunk_begin(Cg *c, LLVMValueRef fn, Row *r, LLVMValueRef tmp, LLVMTypeRef at, LLVMValueRef j0,
                        LLVMValueRef end, LLVMValueRef *c0, LLVMValueRef *m)
{
    Loop outer = loop_begin(c, fn, j0, end, cint(c->i64, RED_CHUNK), c0);
    LLVMValueRef rest = LLVMBuildSub(c->b, end, *c0, "");
    *m = sel(c, LLVMBuildICmp(c->b, LLVMIntSLT, rest, cint(c->i64, RED_CHUNK), ""), rest, cint(c->i64, RED_CHUNK));
    fill_tmp(c, fn, r, tmp, at, *c0, *m);
    return outer;
}

/* The row function: (ptr base_0.., i64 stride_0.., ptr consts, i64 j0, i64 j1|n). */
static LLVMValueRef emit_row(Cg *c, const char *name)
{
    const GpProgram *p = c->p;
    int K = p->noperands;
    LLVMTypeRef params[2 * GP_MAXOPERANDS + 4];
    for (int k = 0; k < K; k++) {
        params[k] = c->ptr;
        params[K + k] = c->i64;
    }
    params[2 * K] = c->ptr;
    params[2 * K + 1] = c->i64;
    params[2 * K + 2] = c->i64;
    int red = p->kind == GP_KIND_REDUCE;
    int arg = red && gp_op_is_arg((GpOp)p->reduce_op);
    GpDType rt = red ? (GpDType)p->instr[p->root].dtype : GP_BOOL;
    params[2 * K + 3] = c->ptr; /* arg-reductions: where the best value goes */
    LLVMTypeRef ret = arg ? c->i64 : red ? reg_type(c, rt) : c->vd;
    LLVMTypeRef fty = LLVMFunctionType(ret, params, (unsigned)(2 * K + 3 + arg), 0);
    LLVMValueRef fn = LLVMAddFunction(c->mod, name, fty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    cpu_attrs(c, fn);
    for (int k = 0; k <= K; k++)
        add_attr(c, fn, (unsigned)(k == K ? 2 * K + 1 : k + 1), "noalias");
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(c->b, entry);
    Row r;
    for (int k = 0; k < K; k++) {
        r.base[k] = LLVMGetParam(fn, (unsigned)k);
        r.stride[k] = LLVMGetParam(fn, (unsigned)(K + k));
    }
    LLVMValueRef consts = LLVMGetParam(fn, (unsigned)(2 * K));
    LLVMValueRef j0 = LLVMGetParam(fn, (unsigned)(2 * K + 1));
    LLVMValueRef j1 = LLVMGetParam(fn, (unsigned)(2 * K + 2));
    for (int k = 0; k < p->ninstr; k++) {
        const GpInstr *ins = &p->instr[k];
        if (ins->op == GP_OP_CONST) {
            LLVMValueRef off = cint(c->i64, 8 * ins->slot);
            r.bval[k] = load(c, ins->dtype, LLVMBuildGEP2(c->b, c->i8, consts, &off, 1, ""));
        } else if (ins->op == GP_OP_LEAF && p->layout[ins->slot] == GP_LAYOUT_BCAST) {
            r.bval[k] = load(c, ins->dtype, r.base[ins->slot]);
        }
    }
    LLVMValueRef j;
    if (!red) {
        for (int k = 0; k < p->ninstr; k++) {
            const GpInstr *ins = &p->instr[k];
            if (gp_op_kind[ins->op] != GP_KIND_SCAN)
                continue;
            /* each row starts from the identity; -0.0 for a float sum, so that
             * the first element is copied exactly as NumPy's accumulate does */
            LLVMTypeRef at = reg_type(c, ins->dtype);
            GpScalar id = gp_reduce_identity(gp_scan_reduce_op((GpOp)ins->op), ins->dtype);
            LLVMValueRef idv = ins->dtype == GP_FLOAT32   ? cfp(at, ins->op == GP_OP_CUMSUM ? -0.0 : id.f32)
                               : ins->dtype == GP_FLOAT64 ? cfp(at, ins->op == GP_OP_CUMSUM ? -0.0 : id.f)
                                                          : LLVMConstInt(at, id.u, 0);
            c->scan_acc[k] = entry_alloca(c, at, "scan");
            LLVMBuildStore(c->b, idv, c->scan_acc[k]);
        }
        Loop l = loop_begin(c, fn, j0, j1, cint(c->i64, 1), &j);
        emit_point(c, &r, j, 1);
        loop_end(c, &l);
        raise_noted(c);
        LLVMBuildRetVoid(c->b);
        return fn;
    }
    GpOp rop = (GpOp)p->reduce_op;
    LLVMTypeRef at = reg_type(c, rt);
    LLVMTypeRef tmp_t = LLVMArrayType2(at, RED_CHUNK);
    LLVMValueRef tmp = entry_alloca(c, tmp_t, "tmp");
    LLVMValueRef n = j1, end = LLVMBuildAdd(c->b, j0, n, "");
    LLVMValueRef acc = entry_alloca(c, at, "acc");
    if (arg) {
        /* NumPy's argmin/argmax: the first extreme value; a NaN wins and the
         * first NaN stays (isnan(acc) ? keep : isnan(v) || v < acc ? take : keep) */
        LLVMValueRef best = entry_alloca(c, c->i64, "best");
        LLVMBuildStore(c->b, cint(c->i64, -1), best);
        LLVMValueRef c0, m;
        Loop outer = chunk_begin(c, fn, &r, tmp, at, j0, end, &c0, &m);
        LLVMValueRef i;
        Loop l = loop_begin(c, fn, cint(c->i64, 0), m, cint(c->i64, 1), &i);
        LLVMValueRef v = load_tmp(c, tmp, at, i), cur = LLVMBuildLoad2(c->b, at, acc, "");
        LLVMValueRef bi = LLVMBuildLoad2(c->b, c->i64, best, "");
        LLVMValueRef first = LLVMBuildICmp(c->b, LLVMIntSLT, bi, cint(c->i64, 0), "");
        int is_min = rop == GP_OP_ARGMIN;
        LLVMValueRef better;
        if (gp_dtype_is_float(rt)) {
            better = LLVMBuildFCmp(c->b, is_min ? LLVMRealOLT : LLVMRealOGT, v, cur, "");
            better = LLVMBuildOr(c->b, better, is_nan(c, v), "");
            better = LLVMBuildAnd(c->b, better, LLVMBuildNot(c->b, is_nan(c, cur), ""), "");
        } else if (rt == GP_BOOL) {
            better = is_min ? LLVMBuildAnd(c->b, cur, LLVMBuildNot(c->b, v, ""), "") : LLVMBuildAnd(c->b, v, LLVMBuildNot(c->b, cur, ""), "");
        } else {
            int sg = gp_dtype_is_signed(rt);
            better = LLVMBuildICmp(c->b, is_min ? (sg ? LLVMIntSLT : LLVMIntULT) : (sg ? LLVMIntSGT : LLVMIntUGT), v, cur, "");
        }
        better = LLVMBuildOr(c->b, better, first, "");
        LLVMBuildStore(c->b, sel(c, better, v, cur), acc);
        LLVMBuildStore(c->b, sel(c, better, LLVMBuildAdd(c->b, c0, i, ""), bi), best);
        loop_end(c, &l);
        loop_end(c, &outer);
        store(c, rt, LLVMBuildLoad2(c->b, at, acc, ""), LLVMGetParam(fn, (unsigned)(2 * K + 3)));
        raise_noted(c);
        LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, c->i64, best, ""));
        return fn;
    }
    if (!p->pairwise) {
        /* chunks of RED_CHUNK points: a vectorizable map loop fills tmp,
         * then tmp is folded into acc in order */
        GpScalar id = gp_reduce_identity(rop, rt);
        LLVMValueRef idv = rt == GP_FLOAT32 ? cfp(at, id.f32) : rt == GP_FLOAT64 ? cfp(at, id.f) : LLVMConstInt(at, id.u, 0);
        LLVMBuildStore(c->b, idv, acc);
        LLVMValueRef c0, m;
        Loop outer = chunk_begin(c, fn, &r, tmp, at, j0, end, &c0, &m);
        LLVMValueRef i;
        Loop l = loop_begin(c, fn, cint(c->i64, 0), m, cint(c->i64, 1), &i);
        LLVMValueRef v = load_tmp(c, tmp, at, i);
        LLVMBuildStore(c->b, reduce_step(c, rop, rt, LLVMBuildLoad2(c->b, at, acc, ""), v), acc);
        loop_end(c, &l);
        loop_end(c, &outer);
        raise_noted(c);
        LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, at, acc, ""));
        return fn;
    }
    /* NumPy's pairwise leaf (n <= PW_BLOCK = RED_CHUNK): the map values go to
     * tmp first, as NumPy's own temporary; then n < 8 is summed sequentially
     * from -0.0, else with eight accumulators over blocks of 8 combined as
     * ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the remainder in order. */
    fill_tmp(c, fn, &r, tmp, at, j0, n);
    LLVMBasicBlockRef small = LLVMAppendBasicBlockInContext(c->ctx, fn, "small");
    LLVMBasicBlockRef big = LLVMAppendBasicBlockInContext(c->ctx, fn, "big");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, n, cint(c->i64, 8), ""), small, big);
    LLVMPositionBuilderAtEnd(c->b, small);
    LLVMBuildStore(c->b, cfp(at, -0.0), acc);
    LLVMValueRef i;
    Loop l = loop_begin(c, fn, cint(c->i64, 0), n, cint(c->i64, 1), &i);
    LLVMBuildStore(c->b, LLVMBuildFAdd(c->b, LLVMBuildLoad2(c->b, at, acc, ""), load_tmp(c, tmp, at, i), ""), acc);
    loop_end(c, &l);
    raise_noted(c);
    LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, at, acc, ""));

    LLVMPositionBuilderAtEnd(c->b, big);
    LLVMValueRef racc[8];
    for (int q = 0; q < 8; q++) {
        racc[q] = entry_alloca(c, at, "r");
        LLVMBuildStore(c->b, load_tmp(c, tmp, at, cint(c->i64, q)), racc[q]);
    }
    LLVMValueRef nblk = LLVMBuildSub(c->b, n, LLVMBuildSRem(c->b, n, cint(c->i64, 8), ""), "");
    l = loop_begin(c, fn, cint(c->i64, 8), nblk, cint(c->i64, 8), &i);
    for (int q = 0; q < 8; q++) {
        LLVMValueRef iq = LLVMBuildAdd(c->b, i, cint(c->i64, q), "");
        LLVMBuildStore(c->b, LLVMBuildFAdd(c->b, LLVMBuildLoad2(c->b, at, racc[q], ""), load_tmp(c, tmp, at, iq), ""), racc[q]);
    }
    loop_end(c, &l);
    LLVMValueRef rv[8];
    for (int q = 0; q < 8; q++)
        rv[q] = LLVMBuildLoad2(c->b, at, racc[q], "");
    LLVMValueRef s01 = LLVMBuildFAdd(c->b, rv[0], rv[1], ""), s23 = LLVMBuildFAdd(c->b, rv[2], rv[3], "");
    LLVMValueRef s45 = LLVMBuildFAdd(c->b, rv[4], rv[5], ""), s67 = LLVMBuildFAdd(c->b, rv[6], rv[7], "");
    LLVMValueRef res = LLVMBuildFAdd(c->b, LLVMBuildFAdd(c->b, s01, s23, ""), LLVMBuildFAdd(c->b, s45, s67, ""), "");
    LLVMBuildStore(c->b, res, acc);
    l = loop_begin(c, fn, nblk, n, cint(c->i64, 1), &i);
    LLVMBuildStore(c->b, LLVMBuildFAdd(c->b, LLVMBuildLoad2(c->b, at, acc, ""), load_tmp(c, tmp, at, i), ""), acc);
    loop_end(c, &l);
    raise_noted(c);
    LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, at, acc, ""));
    return fn;
}

/* GEP to a field of GpKernelArgs at byte offset off (+ idx*8 when idx). */
static LLVMValueRef args_field(Cg *c, LLVMValueRef a, size_t off, LLVMValueRef idx)
{
    LLVMValueRef o = cint(c->i64, (long long)off);
    if (idx)
        o = LLVMBuildAdd(c->b, o, LLVMBuildMul(c->b, idx, cint(c->i64, 8), ""), "");
    return LLVMBuildGEP2(c->b, c->i8, a, &o, 1, "");
}

/* Entry: decomposes outer index o into operand offsets and calls the row. */
static void emit_call_row(Cg *c, LLVMValueRef fn, LLVMValueRef row, LLVMValueRef a, LLVMValueRef o,
                          LLVMValueRef j0, LLVMValueRef j1, LLVMValueRef result)
{
    const GpProgram *p = c->p;
    int K = p->noperands;
    LLVMValueRef nd = LLVMBuildLoad2(c->b, c->i64, args_field(c, a, offsetof(GpKernelArgs, nd), NULL), "nd");
    LLVMValueRef inner = LLVMBuildSub(c->b, nd, cint(c->i64, 1), "");
    LLVMValueRef off[GP_MAXOPERANDS];
    for (int k = 0; k < K; k++) {
        off[k] = entry_alloca(c, c->i64, "off");
        LLVMBuildStore(c->b, cint(c->i64, 0), off[k]);
    }
    LLVMValueRef rem = entry_alloca(c, c->i64, "rem");
    LLVMBuildStore(c->b, o, rem);
    /* for (q = 0; q < nd-1; q++) with d = nd-2-q, innermost outer dim first */
    LLVMValueRef q;
    Loop l = loop_begin(c, fn, cint(c->i64, 0), inner, cint(c->i64, 1), &q);
    LLVMValueRef d = LLVMBuildSub(c->b, LLVMBuildSub(c->b, inner, cint(c->i64, 1), ""), q, "");
    LLVMValueRef size = LLVMBuildLoad2(c->b, c->i64, args_field(c, a, offsetof(GpKernelArgs, shape), d), "");
    LLVMValueRef rv = LLVMBuildLoad2(c->b, c->i64, rem, "");
    LLVMValueRef idx = LLVMBuildURem(c->b, rv, size, "");
    LLVMBuildStore(c->b, LLVMBuildUDiv(c->b, rv, size, ""), rem);
    for (int k = 0; k < K; k++) {
        LLVMValueRef si = LLVMBuildAdd(c->b, cint(c->i64, k * GP_MAXDIMS), d, "");
        LLVMValueRef st = LLVMBuildLoad2(c->b, c->i64, args_field(c, a, offsetof(GpKernelArgs, strides), si), "");
        LLVMValueRef cur = LLVMBuildLoad2(c->b, c->i64, off[k], "");
        LLVMBuildStore(c->b, LLVMBuildAdd(c->b, cur, LLVMBuildMul(c->b, idx, st, ""), ""), off[k]);
    }
    loop_end(c, &l);
    LLVMValueRef args[2 * GP_MAXOPERANDS + 4];
    for (int k = 0; k < K; k++) {
        LLVMValueRef base = LLVMBuildLoad2(c->b, c->ptr, args_field(c, a, offsetof(GpKernelArgs, data) + 8 * (size_t)k, NULL), "");
        LLVMValueRef ofs = LLVMBuildLoad2(c->b, c->i64, off[k], "");
        args[k] = LLVMBuildGEP2(c->b, c->i8, base, &ofs, 1, "");
        LLVMValueRef si = LLVMBuildAdd(c->b, cint(c->i64, k * GP_MAXDIMS), inner, "");
        args[K + k] = LLVMBuildLoad2(c->b, c->i64, args_field(c, a, offsetof(GpKernelArgs, strides), si), "");
    }
    args[2 * K] = args_field(c, a, offsetof(GpKernelArgs, consts), NULL);
    args[2 * K + 1] = j0;
    args[2 * K + 2] = j1;
    int arg = result && gp_op_is_arg((GpOp)p->reduce_op);
    if (arg) {
        LLVMValueRef voff = cint(c->i64, (long long)offsetof(GpArgResult, value));
        args[2 * K + 3] = LLVMBuildGEP2(c->b, c->i8, result, &voff, 1, "");
    }
    LLVMValueRef v = LLVMBuildCall2(c->b, LLVMGlobalGetValueType(row), row, args, (unsigned)(2 * K + 3 + arg), "");
    if (arg) {
        LLVMBuildStore(c->b, v, result); /* GpArgResult.index */
    } else if (result) {
        GpDType rt = (GpDType)p->instr[p->root].dtype;
        store(c, rt, v, result);
    }
}

LLVMModuleRef gp_codegen(const GpProgram *p, const GpTarget *t, LLVMContextRef ctx, const char *name)
{
    Cg c;
    memset(&c, 0, sizeof c);
    c.target = t;
    c.ctx = ctx;
    c.p = p;
    c.mod = LLVMModuleCreateWithNameInContext(name, ctx);
    c.b = LLVMCreateBuilderInContext(ctx);
    c.i1 = LLVMInt1TypeInContext(ctx);
    c.i8 = LLVMInt8TypeInContext(ctx);
    c.i16 = LLVMInt16TypeInContext(ctx);
    c.i32 = LLVMInt32TypeInContext(ctx);
    c.i64 = LLVMInt64TypeInContext(ctx);
    c.f32 = LLVMFloatTypeInContext(ctx);
    c.f64 = LLVMDoubleTypeInContext(ctx);
    c.ptr = LLVMPointerTypeInContext(ctx, 0);
    c.vd = LLVMVoidTypeInContext(ctx);

    char rowname[96];
    snprintf(rowname, sizeof rowname, "%s_row", name);
    LLVMValueRef row = emit_row(&c, rowname);

    int red = p->kind == GP_KIND_REDUCE;
    LLVMTypeRef params[5] = {c.ptr, c.i64, c.i64, c.i64, red ? c.ptr : c.i64};
    LLVMValueRef fn = LLVMAddFunction(c.mod, name, LLVMFunctionType(c.vd, params, 5, 0));
    cpu_attrs(&c, fn);
    LLVMPositionBuilderAtEnd(c.b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    LLVMValueRef a = LLVMGetParam(fn, 0);
    if (red) {
        emit_call_row(&c, fn, row, a, LLVMGetParam(fn, 1), LLVMGetParam(fn, 2), LLVMGetParam(fn, 3),
                      LLVMGetParam(fn, 4));
    } else {
        LLVMValueRef o;
        Loop l = loop_begin(&c, fn, LLVMGetParam(fn, 1), LLVMGetParam(fn, 2), cint(c.i64, 1), &o);
        emit_call_row(&c, fn, row, a, o, LLVMGetParam(fn, 3), LLVMGetParam(fn, 4), NULL);
        loop_end(&c, &l);
    }
    LLVMBuildRetVoid(c.b);
    LLVMDisposeBuilder(c.b);
    if (c.nvector_fns) {
        /* the vectorizer only uses variants declared in the module: keep them */
        LLVMTypeRef at = LLVMArrayType2(c.ptr, (uint64_t)c.nvector_fns);
        LLVMValueRef used = LLVMAddGlobal(c.mod, at, "llvm.compiler.used");
        LLVMSetLinkage(used, LLVMAppendingLinkage);
        LLVMSetSection(used, "llvm.metadata");
        LLVMSetInitializer(used, LLVMConstArray2(c.ptr, c.vector_fns, (uint64_t)c.nvector_fns));
    }
    return c.mod;
}
