/* core/program.c -- what the rest of the core asks of a GpProgram without
 * the code generator: which ops and dtypes kernels support, the program's
 * key (its bytes) and hash, and the packing of a launch's arguments
 * (codegen.h).  Kept out of codegen.c so that the library holding LLVM
 * (jit_load.c) is loaded only when a kernel is compiled.
 */
#include "codegen.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

int gp_op_supports(GpOp op, GpDType t)
{
    int fl = gp_dtype_is_float(t), bl = t == GP_BOOL;
    switch (op) {
    case GP_OP_TRUE_DIVIDE:
    case GP_OP_RECIPROCAL:
    case GP_OP_COPYSIGN: return fl;
    case GP_OP_BITWISE_AND:
    case GP_OP_BITWISE_OR:
    case GP_OP_BITWISE_XOR:
    case GP_OP_INVERT: return !fl;
    case GP_OP_LEFT_SHIFT:
    case GP_OP_RIGHT_SHIFT: return !fl && !bl;
    case GP_OP_SUBTRACT:
    case GP_OP_NEGATIVE:
    case GP_OP_POWER:
    case GP_OP_FLOOR_DIVIDE:
    case GP_OP_REMAINDER:
    case GP_OP_FMOD: return !bl;
    case GP_OP_MATMUL: return fl; /* OpenBLAS: float32 and float64 */
    default:
        if (op >= GP_OP_SQRT && op <= GP_OP_HYPOT)
            return fl;
        return 1;
    }
}

int gp_exponent_class(double b)
{
    for (int cls = GP_EXPONENT_TWO; cls <= GP_EXPONENT_FOUR; cls++)
        if (b == gp_exponent_value[cls])
            return cls;
    return isfinite(b) && b != floor(b) ? GP_EXPONENT_FRACTION : GP_EXPONENT_OTHER;
}

size_t gp_program_key_size(const GpProgram *p)
{
    return offsetof(GpProgram, instr) + (size_t)p->ninstr * sizeof(GpInstr);
}

uint64_t gp_program_hash(const GpProgram *p)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0, n = gp_program_key_size(p); i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

int gp_jit_fail_forced(const GpProgram *p)
{
    int64_t every = gp_config.force_jit_failure;
    if (every <= 1)
        return every == 1;
    uint64_t h = gp_program_hash(p);
    return (h >> 32 ^ h) % (uint64_t)every == 0; /* FNV-1a's low bits alone are weak */
}

int gp_program_compares_floats(const GpProgram *p)
{
    if (p->kind == GP_KIND_REDUCE && gp_op_compares_floats((GpOp)p->reduce_op, (GpDType)p->instr[p->root].dtype))
        return 1;
    for (int k = 0; k < p->ninstr; k++)
        if (gp_op_compares_floats((GpOp)p->instr[k].op, (GpDType)p->instr[k].in_dtype))
            return 1;
    return 0;
}

void gp_divisor_magic(GpDType t, uint64_t d, uint64_t *mul, uint64_t *shifts)
{
    typedef unsigned __int128 u128;
    int bits = (int)gp_dtype_size(t) * 8;
    uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    d &= mask;
    if (gp_dtype_is_signed(t) && d >> (bits - 1))
        d = (0 - d) & mask;                           /* |d|; MIN's is 2^(N-1) */
    int l = d <= 1 ? 0 : 64 - __builtin_clzll(d - 1); /* ceil(log2 |d|) */
    if (!gp_dtype_is_signed(t)) {
        /* m = floor(2^N (2^l - d) / d) + 1 < 2^N; sh1 = min(l, 1), sh2 = max(l - 1, 0) */
        *mul = (uint64_t)(((((u128)1 << l) - d) << bits) / d + 1) & mask;
        *shifts = (uint64_t)(l < 1 ? l : 1) | (uint64_t)(l > 1 ? l - 1 : 0) << 8;
    } else {
        /* l >= 1; m = floor(2^(N+l-1) / |d|) + 1, taken mod 2^N (as the signed m - 2^N) */
        l = l < 1 ? 1 : l;
        *mul = (uint64_t)(((u128)1 << (bits + l - 1)) / d + 1) & mask;
        *shifts = (uint64_t)(l - 1);
    }
}

size_t gp_kernel_args_slots(const GpProgram *p, int64_t nd)
{
    return (size_t)(1 + nd + p->noperands + p->noperands * nd + p->nconsts);
}

void gp_kernel_args_pack(const GpProgram *p, const GpKernelArgs *a, int64_t *out)
{
    int64_t nd = a->nd, K = p->noperands;
    out[0] = nd;
    memcpy(out + 1, a->shape, (size_t)nd * sizeof *out);
    int64_t *data = out + 1 + nd, *strides = data + K;
    for (int64_t k = 0; k < K; k++) {
        memcpy(&data[k], &a->data[k], sizeof *data);
        memcpy(strides + k * nd, a->strides[k], (size_t)nd * sizeof *out);
    }
    memcpy(strides + K * nd, a->consts, (size_t)p->nconsts * sizeof *out);
}

GpStatus gp_kernel_args_fill_identity(const GpProgram *p, GpKernelArgs *args, GpOp op, GpDType t)
{
    int slot = -1;
    for (int i = 0; i < p->ninstr && slot < 0; i++)
        if (gp_op_kind[p->instr[i].op] == GP_KIND_REDUCE)
            slot = p->instr[i].slot;
    if (slot < 0) {
        gp_set_error("accumulating launch without a folding instruction");
        return GP_EUNSUPPORTED;
    }
    /* the output is C-contiguous over its kept dims (its nonzero strides):
     * that many elements from its first */
    GpScalar id = gp_reduce_identity(op, t);
    size_t e = gp_dtype_size(t);
    int64_t count = 1;
    for (int d = 0; d < args->nd; d++)
        if (args->strides[slot][d] != 0)
            count *= args->shape[d];
    for (int64_t i = 0; i < count; i++)
        memcpy(args->data[slot] + i * (int64_t)e, &id, e);
    return GP_OK;
}
