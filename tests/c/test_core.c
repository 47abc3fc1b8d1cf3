/* tests/c/test_core.c -- unit tests of core/ without Python: recording,
 * planning, IR verification, kernel execution, reader accounting and the
 * page guard.  Exit status 0 when every check passes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jit.h"
#include "plan.h"
#include "runtime_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int failures, checks;
#define CHECK(cond)                                                                    \
    do {                                                                               \
        checks++;                                                                      \
        if (!(cond)) {                                                                 \
            failures++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
        }                                                                              \
    } while (0)

static GpNode *leaf1d(GpBuffer *b, GpDType t, int64_t n)
{
    int64_t shape[1] = {n}, strides[1] = {(int64_t)gp_dtype_size(t)};
    return gp_node_leaf(t, 1, shape, strides, b->data, b);
}

static GpNode *binop(GpOp op, GpDType t, GpNode *a, GpNode *b)
{
    GpNode *in[2] = {a, b};
    int64_t *shape = a->nd >= b->nd ? a->shape : b->shape;
    return gp_node_map(op, t, 2, in, a->nd >= b->nd ? a->nd : b->nd, shape);
}

/* x*x + 2*x*y + y*y over doubles (the paper's Listing 1), fused. */
static void test_listing1(void)
{
    int64_t n = 100003;
    GpBuffer *bx = gp_buffer_alloc((size_t)n * 8), *by = gp_buffer_alloc((size_t)n * 8);
    double *x = (double *)bx->data, *y = (double *)by->data;
    for (int64_t i = 0; i < n; i++) {
        x[i] = (double)i * 0.5 - 7;
        y[i] = 3.25 - (double)(i % 17);
    }
    GpNode *X = leaf1d(bx, GP_FLOAT64, n), *Y = leaf1d(by, GP_FLOAT64, n);
    GpScalar two = {.f = 2.0};
    GpNode *C2 = gp_node_const(GP_FLOAT64, two);
    GpNode *xx = binop(GP_OP_MULTIPLY, GP_FLOAT64, X, X);
    GpNode *tx = binop(GP_OP_MULTIPLY, GP_FLOAT64, C2, X);
    GpNode *txy = binop(GP_OP_MULTIPLY, GP_FLOAT64, tx, Y);
    GpNode *yy = binop(GP_OP_MULTIPLY, GP_FLOAT64, Y, Y);
    GpNode *s1 = binop(GP_OP_ADD, GP_FLOAT64, xx, txy);
    GpNode *z = binop(GP_OP_ADD, GP_FLOAT64, s1, yy);
    gp_node_decref(xx); gp_node_decref(tx); gp_node_decref(txy); gp_node_decref(yy); gp_node_decref(s1);
    GpBuffer *bz = gp_buffer_alloc((size_t)n * 8);
    gp_node_set_output(z, bz);
    CHECK(bz->prot == PROT_NONE);
    CHECK(bx->nreaders > 0 && bx->prot == PROT_READ);
    int64_t launched = gp_stats.kernels_launched;
    CHECK(gp_node_materialize(z) == GP_OK);
    CHECK(gp_stats.kernels_launched == launched + 1);
    CHECK(z->materialized && bz->prot == (PROT_READ | PROT_WRITE));
    /* read-only stays (sticky) until a write, which faults once and opens it */
    CHECK(bx->nreaders == 0 && bx->prot == PROT_READ);
    int64_t faults = gp_stats.guard_faults;
    ((volatile double *)x)[3] = x[3];
    __asm__ volatile("" ::: "memory");
    CHECK(gp_stats.guard_faults == faults + 1 && bx->prot == (PROT_READ | PROT_WRITE));
    double *zz = (double *)bz->data;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double want = x[i] * x[i] + 2 * x[i] * y[i] + y[i] * y[i];
        bad += zz[i] != want;
    }
    CHECK(bad == 0);
    CHECK(gp_dag_pending_count() == 0);
    gp_node_decref(z); gp_node_decref(X); gp_node_decref(Y); gp_node_decref(C2);
    gp_buffer_decref(bx); gp_buffer_decref(by); gp_buffer_decref(bz);
}

/* sum(a*b) equals NumPy's pairwise order computed here in plain C. */
static double pw(const double *a, int64_t n)
{
    if (n < 8) {
        double r = -0.0;
        for (int64_t i = 0; i < n; i++) r += a[i];
        return r;
    }
    if (n <= 128) {
        double r[8];
        int64_t i;
        for (int k = 0; k < 8; k++) r[k] = a[k];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int k = 0; k < 8; k++) r[k] += a[i + k];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pw(a, n2) + pw(a + n2, n - n2);
}

static void test_sum(void)
{
    int64_t n = 1000037;
    GpBuffer *ba = gp_buffer_alloc((size_t)n * 8), *bb = gp_buffer_alloc((size_t)n * 8);
    double *a = (double *)ba->data, *b = (double *)bb->data;
    double *prod = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) {
        a[i] = sin((double)i);
        b[i] = cos((double)i * 0.3);
        prod[i] = a[i] * b[i];
    }
    GpNode *A = leaf1d(ba, GP_FLOAT64, n), *B = leaf1d(bb, GP_FLOAT64, n);
    GpNode *m = binop(GP_OP_MULTIPLY, GP_FLOAT64, A, B);
    GpNode *s = gp_node_reduce(GP_OP_SUM, GP_FLOAT64, m, 1, 0);
    gp_node_decref(m);
    CHECK(gp_node_materialize(s) == GP_OK);
    double got = *(double *)s->data, want = 0.0 + pw(prod, n);
    CHECK(got == want);
    if (got != want)
        fprintf(stderr, "sum: got %.17g want %.17g\n", got, want);
    GpNode *mx = gp_node_reduce(GP_OP_MAX, GP_FLOAT64, A, 1, 0);
    CHECK(gp_node_materialize(mx) == GP_OK);
    double best = -INFINITY;
    for (int64_t i = 0; i < n; i++) best = a[i] > best ? a[i] : best;
    CHECK(*(double *)mx->data == best);
    gp_node_decref(s); gp_node_decref(mx); gp_node_decref(A); gp_node_decref(B);
    gp_buffer_decref(ba); gp_buffer_decref(bb);
    free(prod);
}

/* int64 floor_divide and remainder with zero and negative divisors. */
static void test_int_division(void)
{
    int64_t n = 70000;
    GpBuffer *ba = gp_buffer_alloc((size_t)n * 8), *bb = gp_buffer_alloc((size_t)n * 8);
    int64_t *a = (int64_t *)ba->data, *b = (int64_t *)bb->data;
    for (int64_t i = 0; i < n; i++) {
        a[i] = (i * 7919) % 201 - 100;
        b[i] = i % 13 - 6;
    }
    a[0] = INT64_MIN; b[0] = -1;
    GpNode *A = leaf1d(ba, GP_INT64, n), *B = leaf1d(bb, GP_INT64, n);
    GpNode *q = binop(GP_OP_FLOOR_DIVIDE, GP_INT64, A, B);
    GpNode *r = binop(GP_OP_REMAINDER, GP_INT64, A, B);
    CHECK(gp_node_materialize(q) == GP_OK);
    CHECK(gp_node_materialize(r) == GP_OK);
    int bad = 0;
    for (int64_t i = 1; i < n; i++) {
        int64_t wq, wr;
        if (b[i] == 0) {
            wq = 0; wr = 0;
        } else {
            wq = a[i] / b[i]; wr = a[i] % b[i];
            if (wr != 0 && ((wr < 0) != (b[i] < 0))) { wq--; wr += b[i]; }
        }
        bad += ((int64_t *)q->data)[i] != wq || ((int64_t *)r->data)[i] != wr;
    }
    CHECK(bad == 0);
    CHECK(((int64_t *)q->data)[0] == INT64_MIN && ((int64_t *)r->data)[0] == 0);
    gp_node_decref(q); gp_node_decref(r); gp_node_decref(A); gp_node_decref(B);
    gp_buffer_decref(ba); gp_buffer_decref(bb);
}

/* A read of a pending buffer faults and the guard computes it. */
static void test_guard_read(void)
{
    int64_t n = 1 << 16;
    GpBuffer *ba = gp_buffer_alloc((size_t)n * 4);
    float *a = (float *)ba->data;
    for (int64_t i = 0; i < n; i++) a[i] = (float)i;
    GpNode *A = leaf1d(ba, GP_FLOAT32, n);
    GpNode *in[1] = {A};
    GpNode *s = gp_node_map(GP_OP_SQRT, GP_FLOAT32, 1, in, 1, A->shape);
    GpBuffer *bs = gp_buffer_alloc((size_t)n * 4);
    gp_node_set_output(s, bs);
    int64_t faults = gp_stats.guard_faults;
    volatile float v = ((volatile float *)bs->data)[12345]; /* faults, computes */
    __asm__ volatile("" ::: "memory");
    CHECK(v == sqrtf(12345.0f));
    CHECK(gp_stats.guard_faults == faults + 1);
    CHECK(s->materialized);
    /* a write to a leaf that a pending node reads computes the reader first */
    GpNode *t = gp_node_map(GP_OP_NEGATIVE, GP_FLOAT32, 1, in, 1, A->shape);
    GpBuffer *bt = gp_buffer_alloc((size_t)n * 4);
    gp_node_set_output(t, bt);
    CHECK(ba->prot == PROT_READ);
    ((volatile float *)a)[7] = 1000.0f; /* faults, flushes t, then the write lands */
    __asm__ volatile("" ::: "memory");
    CHECK(t->materialized && ((float *)bt->data)[7] == -7.0f && a[7] == 1000.0f);
    gp_node_decref(s); gp_node_decref(t); gp_node_decref(A);
    gp_buffer_decref(ba); gp_buffer_decref(bs); gp_buffer_decref(bt);
}

/* Every op in a representative dtype produces IR that verifies. */
static void test_ir_verifies(void)
{
    static const GpDType types[] = {GP_BOOL, GP_INT8, GP_UINT16, GP_INT32, GP_INT64, GP_UINT64, GP_FLOAT32, GP_FLOAT64};
    for (int op = GP_OP_CAST; op < GP_NOPS; op++) {
        if (gp_op_kind[op] != GP_KIND_MAP)
            continue;
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
            if (!gp_op_supports((GpOp)op, types[ti]) || (op == GP_OP_CLIP && types[ti] == GP_BOOL))
                continue;
            GpProgram p;
            memset(&p, 0, sizeof p);
            p.kind = GP_KIND_MAP;
            GpDType t = types[ti];
            int nin = gp_op_nin[op];
            for (int i = 0; i < nin; i++) {
                p.instr[i].op = GP_OP_LEAF;
                p.instr[i].dtype = (uint8_t)(op == GP_OP_WHERE && i == 0 ? GP_BOOL : t);
                p.instr[i].slot = (int16_t)i;
                p.layout[i] = (uint8_t)(i % 3);
            }
            GpInstr *ins = &p.instr[nin];
            ins->op = (uint8_t)op;
            ins->nin = (uint8_t)nin;
            ins->in_dtype = (uint8_t)(op == GP_OP_WHERE ? GP_BOOL : t);
            ins->dtype = (uint8_t)t;
            for (int i = 0; i < nin; i++) ins->in[i] = (int16_t)i;
            ins->slot = (int16_t)nin;
            p.noperands = (uint8_t)(nin + 1);
            p.ninstr = (uint16_t)(nin + 1);
            char *ir = gp_jit_ir(&p, 0);
            CHECK(ir != NULL);
            if (!ir)
                fprintf(stderr, "op %s dtype %d: %s\n", gp_op_name[op], (int)t, gp_last_error());
            free(ir);
        }
    }
}

/* A fused sin and float-to-int32 cast stays vectorized: the cast's
 * "invalid" flag is an OR-reduction raised once per row, not a branch per
 * element (which kept the loop scalar, 6x slower). */
static void test_cast_flag_vectorizes(void)
{
    GpProgram p;
    memset(&p, 0, sizeof p);
    p.kind = GP_KIND_MAP;
    p.instr[0] = (GpInstr){.op = GP_OP_LEAF, .dtype = GP_FLOAT64, .slot = 0};
    p.instr[1] = (GpInstr){.op = GP_OP_SIN, .nin = 1, .in_dtype = GP_FLOAT64, .dtype = GP_FLOAT64, .in = {0}, .slot = -1};
    p.instr[2] = (GpInstr){.op = GP_OP_CAST, .nin = 1, .in_dtype = GP_FLOAT64, .dtype = GP_INT32, .in = {1}, .slot = 1};
    p.noperands = 2;
    p.ninstr = 3;
    p.layout[0] = p.layout[1] = GP_LAYOUT_CONTIG;
    char *ir = gp_jit_ir(&p, 1);
    CHECK(ir != NULL);
    CHECK(ir && (strstr(ir, "x i32>") != NULL));     /* vector conversions */
    CHECK(ir && (strstr(ir, "_ZGV") != NULL));       /* libmvec's vector sin */
    CHECK(ir && (strstr(ir, "gp_fpe_zero") != NULL)); /* the flag is raised */
    free(ir);
}

int main(void)
{
    gp_core_init();
    gp_guard_install();
    test_listing1();
    test_sum();
    test_int_division();
    test_guard_read();
    test_ir_verifies();
    test_cast_flag_vectorizes();
    printf("test_core: %d checks, %d failures; kernels compiled %lld, launched %lld\n", checks, failures,
           (long long)gp_stats.kernels_compiled, (long long)gp_stats.kernels_launched);
    return failures != 0;
}
