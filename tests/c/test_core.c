/* tests/c/test_core.c -- unit tests of core/ without Python, per file:
 * base.c (reduction identities and combining), dag.c (views of pending
 * nodes report the node they need; the DAG computes nothing), plan.c
 * (fusion, the view rewrite through gp_pending_view, reductions), guard.c
 * (reader accounting, the page guard), codegen.c / jit.c (IR verifies,
 * casts vectorize), runtime_cpu.c and backend_cpu.c (every launch kind,
 * serial and pooled), cache.c (the file format: a stored entry loads, a
 * flipped byte or another key does not), blas.c (operand layouts: a
 * transposed operand folds into the call), codegen_nvptx.c / jit_nvptx.c
 * (every program the tests compile is also compiled to PTX, with
 * GRUMPY_PTX_DIR's hook, and checked by ptxas when the toolkit is
 * installed; one program with every float math function), explain.c (a
 * kernel's record, its lines, nothing kept when off).  Exit status 0
 * when every check passes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "backend.h"
#include "cache.h"
#include "explain.h"
#include "jit.h"
#include "jit_nvptx.h"
#include "plan.h"
#include "runtime_cpu.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int failures, checks;
#define CHECK(cond)                                                                  \
    do {                                                                             \
        checks++;                                                                    \
        if (!(cond)) {                                                               \
            failures++;                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
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
    gp_node_decref(xx);
    gp_node_decref(tx);
    gp_node_decref(txy);
    gp_node_decref(yy);
    gp_node_decref(s1);
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
    gp_node_decref(z);
    gp_node_decref(X);
    gp_node_decref(Y);
    gp_node_decref(C2);
    gp_buffer_decref(bx);
    gp_buffer_decref(by);
    gp_buffer_decref(bz);
}

/* explain.c: with gp_config.explain on, a fused kernel is one record
 * whose instructions carry the line recorded with their nodes
 * (gp_record_line), its launches add up, and it costs nothing when off. */
static void test_explain(void)
{
    int64_t n = 1 << 16;
    GpBuffer *ba = gp_buffer_alloc((size_t)n * 8), *bc = NULL;
    for (int64_t i = 0; i < n; i++)
        ((double *)ba->data)[i] = (double)i;
    gp_config.explain = 1;
    gp_explain_clear();
    for (int round = 0; round < 3; round++) {
        GpNode *A = leaf1d(ba, GP_FLOAT64, n);
        gp_record_line = 7;
        GpNode *sq = binop(GP_OP_MULTIPLY, GP_FLOAT64, A, A);
        gp_record_line = 8;
        GpNode *z = binop(GP_OP_ADD, GP_FLOAT64, sq, A);
        gp_record_line = 0;
        bc = gp_buffer_alloc((size_t)n * 8);
        gp_node_set_output(z, bc);
        CHECK(sq->line == 7 && z->line == 8);
        CHECK(gp_node_materialize(z) == GP_OK);
        CHECK(((double *)bc->data)[3] == 12.0);
        gp_node_decref(sq);
        gp_node_decref(z);
        gp_node_decref(A);
        gp_buffer_decref(bc);
    }
    int nrec = 0;
    GpExplainRecord *r = gp_explain_copy(&nrec);
    CHECK(nrec == 1 && r);
    if (nrec == 1 && r) {
        CHECK(!strcmp(r->kind, "map") && r->nops == 2 && r->launches == 3);
        CHECK(r->bytes == 3 * 2 * n * 8); /* per launch: a read once (one leaf), z written */
        CHECK(r->run_ns > 0 && r->compiles + r->disk_hits + r->memory_hits == 3);
        int lines7 = 0, lines8 = 0, outputs = 0;
        for (int i = 0; i < r->ninstr; i++) {
            lines7 += r->instr[i].line == 7 && r->instr[i].op == GP_OP_MULTIPLY;
            lines8 += r->instr[i].line == 8 && r->instr[i].op == GP_OP_ADD;
            outputs += r->instr[i].output;
            CHECK(r->instr[i].op == GP_OP_LEAF ? r->instr[i].memory != 0 : r->instr[i].nd == 1);
        }
        CHECK(lines7 == 1 && lines8 == 1 && outputs == 1);
    }
    gp_explain_free(r, nrec);
    gp_explain_clear();
    gp_config.explain = 0;
    GpNode *A = leaf1d(ba, GP_FLOAT64, n), *z = binop(GP_OP_ADD, GP_FLOAT64, A, A);
    bc = gp_buffer_alloc((size_t)n * 8);
    gp_node_set_output(z, bc);
    CHECK(gp_node_materialize(z) == GP_OK);
    r = gp_explain_copy(&nrec);
    CHECK(nrec == 0 && !r);
    gp_node_decref(z);
    gp_node_decref(A);
    gp_buffer_decref(bc);
    gp_buffer_decref(ba);
}

/* sum(a*b) equals NumPy's pairwise order computed here in plain C. */
static double pw(const double *a, int64_t n)
{
    if (n < 8) {
        double r = -0.0;
        for (int64_t i = 0; i < n; i++)
            r += a[i];
        return r;
    }
    if (n <= 128) {
        double r[8];
        int64_t i;
        for (int k = 0; k < 8; k++)
            r[k] = a[k];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int k = 0; k < 8; k++)
                r[k] += a[i + k];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
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
    for (int64_t i = 0; i < n; i++)
        best = a[i] > best ? a[i] : best;
    CHECK(*(double *)mx->data == best);
    gp_node_decref(s);
    gp_node_decref(mx);
    gp_node_decref(A);
    gp_node_decref(B);
    gp_buffer_decref(ba);
    gp_buffer_decref(bb);
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
    a[0] = INT64_MIN;
    b[0] = -1;
    GpNode *A = leaf1d(ba, GP_INT64, n), *B = leaf1d(bb, GP_INT64, n);
    GpNode *q = binop(GP_OP_FLOOR_DIVIDE, GP_INT64, A, B);
    GpNode *r = binop(GP_OP_REMAINDER, GP_INT64, A, B);
    CHECK(gp_node_materialize(q) == GP_OK);
    CHECK(gp_node_materialize(r) == GP_OK);
    int bad = 0;
    for (int64_t i = 1; i < n; i++) {
        int64_t wq, wr;
        if (b[i] == 0) {
            wq = 0;
            wr = 0;
        } else {
            wq = a[i] / b[i];
            wr = a[i] % b[i];
            if (wr != 0 && ((wr < 0) != (b[i] < 0))) {
                wq--;
                wr += b[i];
            }
        }
        bad += ((int64_t *)q->data)[i] != wq || ((int64_t *)r->data)[i] != wr;
    }
    CHECK(bad == 0);
    CHECK(((int64_t *)q->data)[0] == INT64_MIN && ((int64_t *)r->data)[0] == 0);
    gp_node_decref(q);
    gp_node_decref(r);
    gp_node_decref(A);
    gp_node_decref(B);
    gp_buffer_decref(ba);
    gp_buffer_decref(bb);
}

/* A read of a pending buffer faults and the guard computes it. */
static void test_guard_read(void)
{
    int64_t n = 1 << 16;
    GpBuffer *ba = gp_buffer_alloc((size_t)n * 4);
    float *a = (float *)ba->data;
    for (int64_t i = 0; i < n; i++)
        a[i] = (float)i;
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
    gp_node_decref(s);
    gp_node_decref(t);
    gp_node_decref(A);
    gp_buffer_decref(ba);
    gp_buffer_decref(bs);
    gp_buffer_decref(bt);
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
                /* (a gather's table is a broadcast operand, its index an integer) */
                p.instr[i].dtype = (uint8_t)(op == GP_OP_WHERE && i == 0    ? GP_BOOL
                                             : op == GP_OP_GATHER && i >= 1 ? GP_INT64
                                                                            : t);
                p.instr[i].slot = (int16_t)i;
                p.layout[i] = (uint8_t)(op == GP_OP_GATHER && i == 0 ? GP_LAYOUT_BCAST : i % 3);
            }
            GpInstr *ins = &p.instr[nin];
            ins->op = (uint8_t)op;
            ins->nin = (uint8_t)nin;
            ins->in_dtype = (uint8_t)(op == GP_OP_WHERE ? GP_BOOL : t);
            ins->dtype = (uint8_t)t;
            for (int i = 0; i < nin; i++)
                ins->in[i] = (int16_t)i;
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
    p.instr[1] =
        (GpInstr){.op = GP_OP_SIN, .nin = 1, .in_dtype = GP_FLOAT64, .dtype = GP_FLOAT64, .in = {0}, .slot = -1};
    p.instr[2] = (GpInstr){.op = GP_OP_CAST, .nin = 1, .in_dtype = GP_FLOAT64, .dtype = GP_INT32, .in = {1}, .slot = 1};
    p.noperands = 2;
    p.ninstr = 3;
    p.layout[0] = p.layout[1] = GP_LAYOUT_CONTIG;
    char *ir = gp_jit_ir(&p, 1);
    CHECK(ir != NULL);
    CHECK(ir && (strstr(ir, "x i32>") != NULL));      /* vector conversions */
    CHECK(ir && (strstr(ir, "_ZGV") != NULL));        /* libmvec's vector sin */
    CHECK(ir && (strstr(ir, "gp_fpe_zero") != NULL)); /* the flag is raised */
    free(ir);
}

/* base.c: identities are neutral and combining is the reduction's own. */
static void test_reduction_rules(void)
{
    GpScalar id = gp_reduce_identity(GP_OP_SUM, GP_FLOAT64), v = {.f = 2.5};
    gp_reduce_combine(GP_OP_SUM, GP_FLOAT64, &id, v);
    CHECK(id.f == 2.5);
    GpScalar mx = gp_reduce_identity(GP_OP_MAX, GP_INT8), w = {.i = 0};
    w.u = (uint8_t)(int8_t)-128;
    gp_reduce_combine(GP_OP_MAX, GP_INT8, &mx, w);
    CHECK((int8_t)mx.u == -128);
    GpScalar mn = gp_reduce_identity(GP_OP_MIN, GP_UINT16), x = {.u = 65535};
    gp_reduce_combine(GP_OP_MIN, GP_UINT16, &mn, x);
    CHECK((uint16_t)mn.u == 65535);
    GpScalar nan = {.f = NAN}, acc = gp_reduce_identity(GP_OP_MAX, GP_FLOAT64), one = {.f = 1.0};
    gp_reduce_combine(GP_OP_MAX, GP_FLOAT64, &acc, nan);
    gp_reduce_combine(GP_OP_MAX, GP_FLOAT64, &acc, one);
    CHECK(isnan(acc.f)); /* NaN propagates, as NumPy's maximum.reduce */
    CHECK(gp_reduce_identity(GP_OP_PROD, GP_FLOAT32).f32 == 1.0f);
    CHECK(gp_reduce_identity(GP_OP_ALL, GP_BOOL).u == 1);
}

/* dag.c / plan.c: a view of a map over a pending broadcast operand needs
 * that operand computed first; the DAG says so instead of computing it,
 * and gp_pending_view computes it and makes the view. */
static void test_view_reports_what_it_needs(void)
{
    int64_t n = 4096;
    GpBuffer *bx = gp_buffer_alloc((size_t)n * 8), *bv = gp_buffer_alloc(8 * 8);
    double *x = (double *)bx->data, *v = (double *)bv->data;
    for (int64_t i = 0; i < n; i++)
        x[i] = (double)i;
    for (int i = 0; i < 8; i++)
        v[i] = 100.0 * i;
    int64_t s2[2] = {512, 8}, st2[2] = {64, 8}, s1[1] = {8}, st1[1] = {8};
    GpNode *X = gp_node_leaf(GP_FLOAT64, 2, s2, st2, bx->data, bx);
    GpNode *V = gp_node_leaf(GP_FLOAT64, 1, s1, st1, bv->data, bv);
    GpScalar one = {.f = 1.0};
    GpNode *C = gp_node_const(GP_FLOAT64, one);
    GpNode *W = binop(GP_OP_ADD, GP_FLOAT64, V, C);      /* pending (8,) */
    GpNode *Y = binop(GP_OP_MULTIPLY, GP_FLOAT64, X, W); /* (512, 8), W broadcast */
    int64_t vs[1] = {8}, vst[1] = {8};
    GpNode *need = NULL;
    int64_t before = gp_stats.kernels_launched;
    GpNode *row = gp_node_view(Y, 3 * 64, 1, vs, vst, &need); /* Y[3] */
    CHECK(row == NULL && need == W && !W->materialized);
    CHECK(gp_stats.kernels_launched == before); /* nothing computed by the DAG */
    gp_node_decref(need);
    GpNode *r = gp_pending_view(Y, 3 * 64, 1, vs, vst);
    CHECK(r != NULL && W->materialized && !Y->materialized);
    CHECK(gp_node_materialize(r) == GP_OK);
    int bad = 0;
    for (int j = 0; r && r->materialized && j < 8; j++)
        bad += ((double *)r->data)[j] != x[3 * 8 + j] * (v[j] + 1.0);
    CHECK(bad == 0);
    if (r)
        gp_node_decref(r);
    gp_node_decref(Y);
    gp_node_decref(W);
    gp_node_decref(C);
    gp_node_decref(V);
    gp_node_decref(X);
    gp_buffer_decref(bx);
    gp_buffer_decref(bv);
}

/* backend_cpu.c / runtime_cpu.c: an outer reduction (the accumulating
 * launch, which starts its output at the identity), a scan and an
 * arg-reduction, each small (serial) and large (on the pool). */
static void test_launch_kinds(void)
{
    for (int big = 0; big < 2; big++) {
        int64_t rows = big ? 4096 : 64, cols = 512, n = rows * cols;
        GpBuffer *bx = gp_buffer_alloc((size_t)n * 8);
        double *x = (double *)bx->data;
        for (int64_t i = 0; i < n; i++)
            x[i] = (double)(i % 7) - 3.0 + (i == n / 2 ? 50.0 : 0.0);
        int64_t sh[2] = {rows, cols}, st[2] = {cols * 8, 8};
        GpNode *X = gp_node_leaf(GP_FLOAT64, 2, sh, st, bx->data, bx);
        GpScalar two = {.f = 2.0};
        GpNode *C = gp_node_const(GP_FLOAT64, two);
        int64_t serial0 = gp_stats.serial_launches;
        /* column sums of 2*x: the accumulating launch */
        GpNode *Y = binop(GP_OP_MULTIPLY, GP_FLOAT64, X, C);
        GpNode *S = gp_node_reduce(GP_OP_SUM, GP_FLOAT64, Y, 1, 0);
        CHECK(S && gp_node_materialize(S) == GP_OK);
        int bad = 0;
        for (int64_t j = 0; S && S->materialized && j < cols; j++) {
            double want = 0.0;
            for (int64_t i = 0; i < rows; i++)
                want += 2.0 * x[i * cols + j];
            bad += ((double *)S->data)[j] != want;
        }
        CHECK(bad == 0);
        /* cumulative sums along rows (map-scan) */
        GpNode *Y2 = binop(GP_OP_MULTIPLY, GP_FLOAT64, X, C);
        GpNode *Q = gp_node_scan(GP_OP_CUMSUM, GP_FLOAT64, Y2, 1);
        CHECK(Q && gp_node_materialize(Q) == GP_OK);
        bad = 0;
        for (int64_t i = 0; Q && Q->materialized && i < rows; i += rows / 8) {
            double acc = 0.0;
            for (int64_t j = 0; j < cols; j++) {
                acc += 2.0 * x[i * cols + j];
                bad += ((double *)Q->data)[i * cols + j] != acc;
            }
        }
        CHECK(bad == 0);
        /* argmax over everything: the maximum is at n/2 */
        GpNode *A = gp_node_reduce(GP_OP_ARGMAX, GP_INT64, X, 3, 0);
        CHECK(A && gp_node_materialize(A) == GP_OK && A->materialized && *(int64_t *)A->data == n / 2);
        /* small launches ran serially, large ones on the pool */
        CHECK(big ? gp_stats.serial_launches == serial0 : gp_stats.serial_launches >= serial0 + 3);
        gp_node_decref(A);
        gp_node_decref(Q);
        gp_node_decref(Y2);
        gp_node_decref(S);
        gp_node_decref(Y);
        gp_node_decref(C);
        gp_node_decref(X);
        gp_buffer_decref(bx);
    }
}

/* cache.c: the file format -- an entry loads under its key only, and a
 * flipped byte anywhere in the file makes it a miss (never loaded). */
static void test_cache_format(void)
{
    char dir[] = "/tmp/gp_test_cache_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(gp_cache_set_dir(dir) == 0);
    const char key[] = "program bytes, LLVM, CPU, library digest";
    unsigned char obj[3000];
    for (size_t i = 0; i < sizeof obj; i++)
        obj[i] = (unsigned char)(i * 31 + 7);
    gp_cache_store(key, sizeof key, obj, sizeof obj);
    size_t len = 0;
    void *got = gp_cache_load(key, sizeof key, &len);
    CHECK(got && len == sizeof obj && !memcmp(got, obj, len));
    free(got);
    const char other[] = "program bytes, LLVM, CPU, library digesT";
    CHECK(gp_cache_load(other, sizeof other, &len) == NULL);
    /* flip one byte of the entry's file, at several offsets */
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512] = "";
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    CHECK(path[0] != 0);
    for (off_t off = 0; path[0] && off < 3000; off += 997) {
        int fd = open(path, O_RDWR);
        unsigned char c = 0;
        CHECK(fd >= 0 && pread(fd, &c, 1, off) == 1);
        c ^= 0x40;
        CHECK(pwrite(fd, &c, 1, off) == 1);
        close(fd);
        CHECK(gp_cache_load(key, sizeof key, &len) == NULL);
        fd = open(path, O_RDWR);
        c ^= 0x40;
        CHECK(fd >= 0 && pwrite(fd, &c, 1, off) == 1);
        close(fd);
    }
    got = gp_cache_load(key, sizeof key, &len);
    CHECK(got != NULL); /* restored: loads again */
    free(got);
    CHECK(gp_cache_clear() >= 1);
    gp_cache_set_dir(NULL);
    rmdir(dir);
}

/* blas.c: a transposed operand (a view) folds into the GEMM as a transpose
 * flag, no copy; the result is the naive product's. */
static void test_blas_layouts(void)
{
    enum { M = 37, K = 23, N = 19 };
    static double a[K][M], b[K][N], c[M][N]; /* a is stored as A^T */
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < M; i++)
            a[k][i] = (double)((i * 7 + k * 3) % 11) - 5.0;
        for (int j = 0; j < N; j++)
            b[k][j] = (double)((j * 5 + k) % 13) - 6.0;
    }
    int64_t ash[2] = {M, K}, ast[2] = {8, M * 8}; /* A = a^T: a strided view */
    int64_t bsh[2] = {K, N}, bst[2] = {N * 8, 8};
    GpBlasOperand A = {2, ash, ast, (const char *)a}, B = {2, bsh, bst, (const char *)b};
    int64_t copies = gp_stats.blas_operand_copies, gemm = gp_stats.gemm_calls;
    GpStatus st = gp_backend_cpu.matmul(GP_FLOAT64, A, B, (char *)c, NULL);
    CHECK(st == GP_OK);
    CHECK(gp_stats.gemm_calls == gemm + 1 && gp_stats.blas_operand_copies == copies);
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0.0;
            for (int k = 0; k < K; k++)
                want += a[k][i] * b[k][j];
            bad += st == GP_OK && c[i][j] != want; /* small integers: exact */
        }
    CHECK(bad == 0);
}

/* blas.c gp_blas_any_nonfinite (the check of a product's result, in
 * 4-lane vectors then a scalar tail): an infinity or a NaN at every
 * position of every length up to 13 is found, in both float widths; the
 * largest finite values, subnormals and -0 are not. */
static void test_nonfinite_scan(void)
{
    double d[13];
    float f[13];
    int missed = 0, false_hits = 0;
    for (int n = 0; n <= 13; n++) {
        for (int i = 0; i < n; i++) {
            d[i] = i % 3 == 0 ? 1.7976931348623157e308 : i % 3 == 1 ? -4.9e-324 : -0.0;
            f[i] = i % 3 == 0 ? 3.4028235e38f : i % 3 == 1 ? -1.4e-45f : -0.0f;
        }
        false_hits += gp_blas_any_nonfinite(GP_FLOAT64, d, n) + gp_blas_any_nonfinite(GP_FLOAT32, f, n);
        for (int at = 0; at < n; at++)
            for (int kind = 0; kind < 2; kind++) {
                double dv = d[at];
                float fv = f[at];
                d[at] = kind ? NAN : -INFINITY;
                f[at] = kind ? NAN : INFINITY;
                missed += !gp_blas_any_nonfinite(GP_FLOAT64, d, n) + !gp_blas_any_nonfinite(GP_FLOAT32, f, n);
                d[at] = dv;
                f[at] = fv;
            }
    }
    CHECK(missed == 0 && false_hits == 0);
}

/* guard.c / plan.c residency: a buffer whose valid copy is on a "device"
 * (here a heap block standing for device memory) is inaccessible on the
 * host; a host read faults, the resolver copies the device copy over
 * (read-only, both valid); a host write then faults again and drops the
 * device copy; freeing the buffer releases a device copy. */
static int fake_to_host_calls, fake_releases;
static int fake_to_host(GpBuffer *b, char *dst)
{
    fake_to_host_calls++;
    memcpy(dst, b->device, b->nbytes);
    return 0;
}
static void fake_release(GpBuffer *b)
{
    fake_releases++;
    free(b->device);
}
static const GpDeviceCopyOps fake_device = {fake_to_host, fake_release};

static void test_residency(void)
{
    size_t n = 1 << 16;
    GpBuffer *b = gp_buffer_alloc(n * sizeof(double));
    double *dev = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        dev[i] = (double)i * 0.5;
    gp_lock();
    CHECK(gp_buffer_set_device(b, dev, &fake_device, 0) == 0);
    gp_unlock();
    CHECK(b->where == GP_ON_DEVICE && b->prot == PROT_NONE);
    int64_t d2h = gp_stats.device_to_host;
    volatile double *h = (volatile double *)b->data;
    CHECK(h[12345] == 12345 * 0.5); /* faults: copied to the host */
    CHECK(fake_to_host_calls == 1 && gp_stats.device_to_host == d2h + 1);
    CHECK(b->where == GP_ON_BOTH && b->prot == PROT_READ && b->device == dev);
    CHECK(h[n - 1] == (double)(n - 1) * 0.5 && fake_to_host_calls == 1); /* no second copy */
    h[7] = -1.0; /* faults: a write to the host copy drops the device's */
    CHECK(h[7] == -1.0 && b->where == GP_ON_HOST && b->device == NULL && fake_releases == 1);
    CHECK(b->prot == (PROT_READ | PROT_WRITE));
    /* a device copy still held when the buffer is freed is released */
    double *dev2 = malloc(n * sizeof(double));
    gp_lock();
    CHECK(gp_buffer_set_device(b, dev2, &fake_device, 1) == 0);
    gp_unlock();
    CHECK(b->where == GP_ON_BOTH && b->prot == PROT_READ && h[7] == -1.0);
    CHECK(gp_buffer_materialize(b) == GP_OK && fake_to_host_calls == 1); /* host copy valid: no copy */
    gp_buffer_decref(b);
    CHECK(fake_releases == 2);
}

/* One map program applying every unary float function of ops.def to x,
 * in float32 and float64: each lowers to an NVPTX instruction or a
 * libdevice call. */
static void test_ptx_math(const char *dir)
{
    for (int ti = 0; ti < 2; ti++) {
        GpDType t = ti ? GP_FLOAT64 : GP_FLOAT32;
        GpProgram p;
        memset(&p, 0, sizeof p);
        p.kind = GP_KIND_MAP;
        p.instr[0] = (GpInstr){.op = GP_OP_LEAF, .dtype = (uint8_t)t, .slot = 0};
        p.layout[0] = GP_LAYOUT_STRIDED;
        int n = 1, slot = 1;
        for (int op = GP_OP_SQRT; op <= GP_OP_HYPOT && slot < GP_MAXOPERANDS - 1; op++) {
            if (gp_op_nin[op] != 1)
                continue;
            p.instr[n] = (GpInstr){.op = (uint8_t)op,
                                   .nin = 1,
                                   .in_dtype = (uint8_t)t,
                                   .dtype = (uint8_t)t,
                                   .in = {0},
                                   .slot = (int16_t)slot};
            p.layout[slot++] = GP_LAYOUT_CONTIG;
            n++;
        }
        p.instr[n] = (GpInstr){.op = GP_OP_ARCTAN2,
                               .nin = 2,
                               .in_dtype = (uint8_t)t,
                               .dtype = (uint8_t)t,
                               .in = {0, n - 1},
                               .slot = (int16_t)slot};
        p.layout[slot++] = GP_LAYOUT_CONTIG;
        p.ninstr = (uint16_t)(n + 1);
        p.noperands = (uint8_t)slot;
        char *ptx = gp_ptx_compile(&p, "sm_80", ti ? "gp_math64" : "gp_math32");
        CHECK(ptx != NULL);
        if (!ptx) {
            fprintf(stderr, "math PTX: %s\n", gp_last_error());
            continue;
        }
        CHECK(strstr(ptx, ".entry gp_math") != NULL);
        CHECK(strstr(ptx, "__nv_") == NULL); /* libdevice linked and inlined, nothing left to resolve */
        char path[4200];
        snprintf(path, sizeof path, "%s/gp_math%d.ptx", dir, ti ? 64 : 32);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(ptx, f);
            fclose(f);
        }
        free(ptx);
    }
}

/* Every PTX file in dir assembles with ptxas for sm_80 (skipped, with the
 * reason, where the toolkit is not installed); no .err file (a program the
 * NVPTX code generator could not lower). */
static void test_ptx_files(const char *dir)
{
    const char *ptxas = getenv("PTXAS") ? getenv("PTXAS") : "/usr/local/cuda/bin/ptxas";
    int have = access(ptxas, X_OK) == 0, files = 0, assembled = 0;
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".err")) {
            CHECK(!"a program could not be compiled to PTX");
            fprintf(stderr, "PTX failure: %s/%s\n", dir, e->d_name);
            continue;
        }
        if (len < 5 || strcmp(e->d_name + len - 4, ".ptx"))
            continue;
        files++;
        if (!have)
            continue;
        char cmd[8400];
        snprintf(cmd, sizeof cmd, "%s -arch=sm_80 %s/%s -o /dev/null", ptxas, dir, e->d_name);
        int rc = system(cmd);
        CHECK(rc == 0);
        assembled += rc == 0;
        if (rc != 0)
            fprintf(stderr, "ptxas failed on %s/%s\n", dir, e->d_name);
    }
    if (d)
        closedir(d);
    CHECK(files >= 10);
    if (have)
        printf("test_core: %d PTX programs, %d assembled by ptxas -arch=sm_80\n", files, assembled);
    else
        printf("test_core: %d PTX programs; ptxas skipped: %s not found (CUDA toolkit not installed)\n", files, ptxas);
}

/* ---- the pool's thread count is a hard limit --------------------------- */

typedef struct {
    pthread_mutex_t mu;
    pthread_t seen[16];
    int nseen;
} Threads;

static void note_thread(void *ctx, int64_t t)
{
    (void)t;
    Threads *th = ctx;
    usleep(2000); /* long enough that every awake thread takes tasks */
    pthread_t me = pthread_self();
    pthread_mutex_lock(&th->mu);
    int known = 0;
    for (int i = 0; i < th->nseen; i++)
        known |= pthread_equal(th->seen[i], me);
    if (!known && th->nseen < 16)
        th->seen[th->nseen++] = me;
    pthread_mutex_unlock(&th->mu);
}

static int threads_running(int64_t ntasks)
{
    Threads th = {.mu = PTHREAD_MUTEX_INITIALIZER};
    gp_lock();
    gp_pool_run(note_thread, &th, ntasks);
    gp_unlock();
    return th.nseen;
}

/* A count lowered after the workers started (threadpoolctl's
 * threadpool_limits(2) in a 4-thread pool) is what runs: the others stay
 * asleep.  Before, every started worker took tasks. */
static void test_pool_limit(void)
{
    int before = gp_pool_threads();
    gp_pool_set_threads(4);
    CHECK(threads_running(64) <= 4); /* starts 3 workers */
    gp_pool_set_threads(2);
    CHECK(threads_running(64) <= 2);
    gp_pool_set_threads(1);
    CHECK(threads_running(16) == 1);
    gp_pool_set_threads(4);
    CHECK(threads_running(64) <= 4);
    gp_pool_set_threads(before);
}

/* The core lock (base.c): not recursive.  A second gp_lock on the same
 * thread is counted and survived as a nested hold; gp_lock_release_all
 * lets go of every hold and gp_lock_reacquire restores them; a function
 * that expects the lock counts a call without it. */
static void test_core_lock(void)
{
    int64_t re = gp_stats.lock_reentries, unheld = gp_stats.lock_unheld;
    CHECK(gp_lock_held() == 0);
    gp_lock();
    CHECK(gp_lock_held() == 1 && gp_stats.lock_reentries == re);
    gp_lock(); /* the bug the counter catches */
    CHECK(gp_stats.lock_reentries == re + 1);
    int held = gp_lock_release_all();
    CHECK(held == 2 && gp_lock_held() == 0);
    gp_lock_reacquire(held);
    CHECK(gp_lock_held() == 1);
    gp_unlock();
    CHECK(gp_lock_held() == 1); /* the nested hold */
    GP_EXPECT_LOCKED();
    CHECK(gp_stats.lock_unheld == unheld);
    gp_unlock();
    CHECK(gp_lock_held() == 0);
    GP_EXPECT_LOCKED();
    CHECK(gp_stats.lock_unheld == unheld + 1);
    gp_stats.lock_reentries = re;
    gp_stats.lock_unheld = unheld;
}

int main(void)
{
    char ptx_dir[] = "/tmp/grumpy_ptx_XXXXXX";
    if (mkdtemp(ptx_dir))
        gp_config.dump_ptx = ptx_dir;
    gp_core_init(NULL);
    gp_guard_install();
    test_core_lock();
    test_listing1();
    test_sum();
    test_int_division();
    test_guard_read();
    test_ir_verifies();
    test_cast_flag_vectorizes();
    test_reduction_rules();
    test_view_reports_what_it_needs();
    test_launch_kinds();
    test_cache_format();
    test_blas_layouts();
    test_nonfinite_scan();
    test_residency();
    test_explain();
    test_pool_limit();
    if (gp_config.dump_ptx) {
        gp_config.dump_ptx = NULL;
        test_ptx_math(ptx_dir);
        test_ptx_files(ptx_dir);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf %s", ptx_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", ptx_dir);
    }
    printf("test_core: %d checks, %d failures; kernels compiled %lld, launched %lld\n", checks, failures,
           (long long)gp_stats.kernels_compiled, (long long)gp_stats.kernels_launched);
    return failures != 0;
}
