/* hooks/explain.c -- the hooks' half of `python -m grumpy.explain`: which
 * user line recorded each operation, and the module functions that hand
 * the planner's kernel records (core/explain.h) to grumpy/explain.py.
 *
 * A line is a site of sites.c's table, registered with op GP_NOPS for the
 * innermost frame outside NumPy and grumpy (fallbacks.c's rule, so that
 * np.mean's reduction is the line that called np.mean).  Per line:
 *   recorded   operations recorded (gp_hooks.captured) in scopes of it
 *   small      operations NumPy computed at once, result below min_bytes
 *   adaptive   operations NumPy computed at once by the adaptive rule
 * and per (line "file:line", call, reason): calls handed to NumPy, the
 * operations above (by name), and kernels the planner could not run
 * (plan failures: NumPy's evaluator computed them).
 *
 * State: one interpreter, GIL held for everything here; the line being
 * recorded and the counts charged so far are per thread (the operations
 * another thread records while this one has let go of the GIL inside a
 * scope are charged to this scope's line).  Turning explain on (_explain(True)) clears
 * what was kept; it costs nothing while off beyond one flag test per
 * capture entry point and per launch.
 */
#include "hooks.h"

#include "explain.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    int64_t recorded, small, adaptive;
} LineCounts;

static LineCounts counts[GP_MAX_SITES];
static PyObject *calls; /* {(where, call, reason): count} */
/* this thread's counts charged to lines so far, so that a scope nested in
 * another (a NumPy function calling the user's code back) charges its
 * operations to its own line and the outer scope only the rest */
static _Thread_local LineCounts charged;

#define WHY_SMALL "result smaller than GRUMPY_MIN_BYTES: NumPy computed it at once"
#define WHY_ADAPTIVE "results at this line were computed alone, never fused: NumPy computed it at once"
#define WHY_PLAN "the planner could not run it: "

static const char *const dtype_names[GP_NDTYPES] = {"bool",   "int8",   "int16",  "int32",   "int64",  "uint8",
                                                    "uint16", "uint32", "uint64", "float32", "float64"};

static void bump_call(PyObject *where, PyObject *name, PyObject *why, int64_t by)
{
    PyObject *key = where && name && why ? PyTuple_Pack(3, where, name, why) : NULL;
    PyObject *cur = key ? PyDict_GetItemWithError(calls, key) : NULL;
    PyObject *v = key && !PyErr_Occurred() ? PyLong_FromLongLong((cur ? PyLong_AsLongLong(cur) : 0) + by) : NULL;
    if (!v || PyDict_SetItem(calls, key, v) < 0)
        PyErr_Clear();
    Py_XDECREF(key);
    Py_XDECREF(v);
}

/* "file:line" of a site (new reference or NULL). */
static PyObject *where_of(int line)
{
    PyObject *w = gp_site_where(line);
    PyObject *s =
        w ? PyUnicode_FromFormat("%U:%d", PyTuple_GET_ITEM(w, 0), (int)PyLong_AsLong(PyTuple_GET_ITEM(w, 1))) : NULL;
    Py_XDECREF(w);
    return s;
}

void gp_explain_enter_slow(GpExplainScope *s)
{
    PyFrameObject *f = gp_user_frame();
    s->prev_line = gp_record_line;
    gp_record_line = f ? gp_site_of_frame(f, GP_NOPS) : 0;
    Py_XDECREF(f);
    s->captured = gp_hooks.captured - charged.recorded;
    s->eager_small = gp_hooks.eager_small - charged.small;
    s->eager_site = gp_hooks.eager_site - charged.adaptive;
}

/* The __name__ of what (a ufunc or function), or name when what is NULL.
 * New reference. */
static PyObject *name_of(PyObject *what, const char *name)
{
    if (!what)
        return PyUnicode_FromString(name ? name : "?");
    PyObject *n = PyObject_GetAttr(what, gp_hooks.str_name);
    if (n && PyUnicode_Check(n))
        return n;
    Py_XDECREF(n);
    PyErr_Clear();
    return PyUnicode_FromString("?");
}

void gp_explain_leave_slow(const GpExplainScope *s, PyObject *what, const char *name)
{
    int line = gp_record_line;
    gp_record_line = s->prev_line;
    /* this scope's own counts: the change since it began, less what the
     * scopes inside it charged */
    int64_t recorded = gp_hooks.captured - charged.recorded - s->captured;
    int64_t small = gp_hooks.eager_small - charged.small - s->eager_small;
    int64_t adaptive = gp_hooks.eager_site - charged.adaptive - s->eager_site;
    charged.recorded += recorded;
    charged.small += small;
    charged.adaptive += adaptive;
    if (line <= 0 || line >= GP_MAX_SITES || !calls)
        return;
    counts[line].recorded += recorded;
    counts[line].small += small;
    counts[line].adaptive += adaptive;
    if (!small && !adaptive)
        return;
    PyObject *exc_type, *exc, *tb;
    PyErr_Fetch(&exc_type, &exc, &tb);
    PyObject *where = where_of(line), *call = name_of(what, name);
    for (int i = 0; i < 2; i++) {
        int64_t by = i ? adaptive : small;
        PyObject *why = by ? PyUnicode_FromString(i ? WHY_ADAPTIVE : WHY_SMALL) : NULL;
        if (why)
            bump_call(where, call, why, by);
        Py_XDECREF(why);
    }
    Py_XDECREF(where);
    Py_XDECREF(call);
    PyErr_Clear();
    PyErr_Restore(exc_type, exc, tb);
}

void gp_explain_fallback(PyObject *site, const char *name, const char *why)
{
    if (!calls)
        return;
    PyObject *n = PyUnicode_FromString(name), *w = PyUnicode_FromString(why);
    bump_call(site, n, w, 1);
    Py_XDECREF(n);
    Py_XDECREF(w);
}

void gp_explain_plan_failure(const GpNode *n)
{
    if (!gp_config.explain || !calls)
        return;
    PyObject *exc_type, *exc, *tb;
    PyErr_Fetch(&exc_type, &exc, &tb);
    char lower[32];
    snprintf(lower, sizeof lower, "%s", gp_op_name[n->op]);
    for (char *c = lower; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    PyObject *where = where_of(n->line), *name = PyUnicode_FromString(lower);
    PyObject *why = strcmp(gp_last_error(), GP_DEFER_REASON) == 0
                        ? PyUnicode_FromString("NumPy computed it while its kernel compiled in the background")
                        : PyUnicode_FromFormat(WHY_PLAN "%s", *gp_last_error() ? gp_last_error() : "no reason given");
    bump_call(where, name, why, 1);
    Py_XDECREF(where);
    Py_XDECREF(name);
    Py_XDECREF(why);
    PyErr_Restore(exc_type, exc, tb);
}

PyObject *gp_explain_set(PyObject *self, PyObject *on)
{
    (void)self;
    int v = PyObject_IsTrue(on);
    if (v < 0)
        return NULL;
    if (v) {
        /* a fresh start: what an earlier run kept is dropped */
        Py_XSETREF(calls, PyDict_New());
        if (!calls)
            return NULL;
        memset(counts, 0, sizeof counts);
        gp_explain_clear();
    }
    gp_lock();
    gp_config.explain = v;
    gp_unlock();
    Py_RETURN_NONE;
}

/* One instruction as (op, dtype, shape, inputs, output, line, axes, value,
 * memory): op as ops.def names it ("MULTIPLY", "LEAF", "CONST"), dtype's
 * name, shape a tuple of at most GP_EXPLAIN_DIMS dims, inputs a tuple of
 * earlier instruction indexes, output 1 when written to memory, line a
 * site index, axes the reduced axes, value a CONST's NumPy scalar or None,
 * memory a LEAF's identity (GpExplainInstr.memory), else 0. */
static PyObject *instr_tuple(const GpExplainInstr *e)
{
    int nd = e->nd < GP_EXPLAIN_DIMS ? e->nd : GP_EXPLAIN_DIMS;
    PyObject *shape = PyTuple_New(nd), *in = PyTuple_New(e->nin);
    for (int d = 0; shape && d < nd; d++)
        PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(e->shape[d]));
    for (int i = 0; in && i < e->nin; i++)
        PyTuple_SET_ITEM(in, i, PyLong_FromLong(e->in[i]));
    PyObject *value = Py_None;
    Py_INCREF(value);
    if (e->op == GP_OP_CONST) {
        PyArray_Descr *d = gp_descr_from_dtype((GpDType)e->dtype);
        PyObject *scalar = d ? PyArray_Scalar((void *)&e->value, d, NULL) : NULL;
        Py_XDECREF(d);
        if (scalar)
            Py_SETREF(value, scalar);
        PyErr_Clear();
    }
    PyObject *axes = PyList_New(0);
    for (int a = 0; axes && a < 64; a++)
        if (e->axes >> a & 1) {
            PyObject *x = PyLong_FromLong(a);
            if (!x || PyList_Append(axes, x) < 0)
                Py_CLEAR(axes);
            Py_XDECREF(x);
        }
    PyObject *t = NULL;
    if (shape && in && axes)
        t = Py_BuildValue("(ssOOiiOOK)", gp_op_name[e->op], e->dtype < GP_NDTYPES ? dtype_names[e->dtype] : "?", shape,
                          in, (int)e->output, e->line, axes, value, (unsigned long long)e->memory);
    Py_XDECREF(shape);
    Py_XDECREF(in);
    Py_XDECREF(axes);
    Py_DECREF(value);
    return t;
}

static PyObject *record_dict(const GpExplainRecord *r)
{
    PyObject *nodes = PyList_New(r->ninstr);
    for (int i = 0; nodes && i < r->ninstr; i++) {
        PyObject *t = instr_tuple(&r->instr[i]);
        if (!t) {
            Py_CLEAR(nodes);
            break;
        }
        PyList_SET_ITEM(nodes, i, t);
    }
    PyObject *d = NULL;
    if (nodes)
        d = Py_BuildValue("{sssisLsLsLsLsLsLsLsO}", "kind", r->kind, "ops", r->nops, "launches", (long long)r->launches,
                          "run_ns", (long long)r->run_ns, "bytes", (long long)r->bytes, "compiles",
                          (long long)r->compiles, "disk_hits", (long long)r->disk_hits, "memory_hits",
                          (long long)r->memory_hits, "compile_ns", (long long)r->compile_ns, "nodes", nodes);
    Py_XDECREF(nodes);
    return d;
}

/* Adds {site: (file, line, recorded, small, adaptive)} to out for site
 * (a no-op for 0 or one already there).  0 or -1. */
static int line_into(PyObject *out, int site)
{
    if (site <= 0 || site >= GP_MAX_SITES)
        return 0;
    PyObject *k = PyLong_FromLong(site);
    int had = k ? PyDict_Contains(out, k) : -1;
    PyObject *w = had == 0 ? gp_site_where(site) : NULL;
    PyObject *v =
        w ? Py_BuildValue("(OOLLL)", PyTuple_GET_ITEM(w, 0), PyTuple_GET_ITEM(w, 1), (long long)counts[site].recorded,
                          (long long)counts[site].small, (long long)counts[site].adaptive)
          : NULL;
    int rc = had != 0 ? had : v ? PyDict_SetItem(out, k, v) : -1;
    Py_XDECREF(k);
    Py_XDECREF(w);
    Py_XDECREF(v);
    return rc < 0 ? -1 : 0;
}

/* Every site counted here or named by an instruction of a record. */
static int lines_into(PyObject *out, const GpExplainRecord *recs, int n)
{
    for (int i = 1; i < GP_MAX_SITES; i++)
        if ((counts[i].recorded || counts[i].small || counts[i].adaptive) && line_into(out, i) < 0)
            return -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < recs[i].ninstr; j++)
            if (line_into(out, recs[i].instr[j].line) < 0)
                return -1;
    return 0;
}

PyObject *gp_explain_report(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int n = 0;
    GpExplainRecord *recs = gp_explain_copy(&n); /* the Python objects are made without the core lock */
    PyObject *kernels = PyList_New(0), *lines = PyDict_New(), *out = NULL;
    for (int i = 0; kernels && i < n; i++) {
        PyObject *d = record_dict(&recs[i]);
        if (!d || PyList_Append(kernels, d) < 0)
            Py_CLEAR(kernels);
        Py_XDECREF(d);
    }
    if (kernels && lines && lines_into(lines, recs, n) == 0)
        out = Py_BuildValue("{sOsOsOsL}", "kernels", kernels, "lines", lines, "calls", calls ? calls : Py_None,
                            "dropped", (long long)gp_explain_dropped);
    gp_explain_free(recs, n);
    Py_XDECREF(kernels);
    Py_XDECREF(lines);
    return out;
}
