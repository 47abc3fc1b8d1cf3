/* hooks/sites.c -- call sites and the adaptive eager rule ("do no harm").
 *
 * grumpy gains where it fuses: a kernel that computes several operations
 * in one pass over memory.  A result recorded lazily and then computed by a
 * kernel of its own (`c = a + b; c.sum()` on computed operands) gains
 * nothing and pays for laziness: a reserved result whose pages are moved
 * into place when the kernel writes them, about 15-20 us at 1-2 MiB, where
 * NumPy's whole statement takes 30-60 us (tools/overhead.py: 1.65x NumPy's
 * time at 1 MiB, 1.28x at 2 MiB, faster from 4 MiB).  Whether a result will
 * be fused is not known when it is recorded, but a Python program repeats
 * itself: the same line of code, in a loop, records the same kind of
 * result again and again.  So, as tracing JITs blacklist the loops whose
 * traces abort (LuaJIT's hot-loop penalties), grumpy remembers per call
 * site -- a code object, an instruction offset and the operation -- how its results were
 * computed (the planner counts it: gp_sites in core/gp.h) and hands an
 * operation at a site whose results were computed alone, and never fused,
 * to NumPy at once, as it does for results below GRUMPY_MIN_BYTES.  The 16th such
 * operation is recorded anyway (a probe), then the 48th, the 112th, ...
 * (the wait doubles, up to 1024), so a site whose results come to be
 * fused again is seen.  A map-reduce whose one map is written out anyway
 * ((a*b).sum(): the product's array is alive) counts as computed alone.
 *
 * Only maps over computed operands with a fresh result below
 * gp_config.lone_max_bytes are candidates: operations on pending values
 * are always recorded (they fuse), and larger results gain from the
 * kernel's threads.  GRUMPY_ADAPTIVE=0 turns the rule off (capture at
 * every size, GRUMPY_MIN_BYTES below 64 KiB, turns it off too: those runs
 * test the kernels).
 *
 * The table also names where NumPy would have given an operation's
 * warnings -- the innermost Python frame that called it, registered with
 * op GP_NOPS when it is recorded (GpNode.where) -- so that a warning from a
 * fused kernel is given at that line (gp_site_warn, evaluate.c).  A kernel
 * whose IEEE flags an error state watches is replayed by NumPy for its
 * warnings (core/plan.c report_fpe): NumPy's whole time again, on top of
 * the kernel's, for an np.sqrt(x - c) or a log of zeros that warns at
 * every pass of a loop.  So the same rule applies to warnings: an
 * operation at a line whose operation the replay found warning is NumPy's
 * at once, which gives its warning itself (gp_site_warns), with the same
 * probes: a probe that no longer warns makes the line captured again.
 * A replay in which NumPy warned nowhere (the kernel's flags were its
 * own: float32 tanh overflows inside its exp) makes the lines of all the
 * replayed operations NumPy's at once in the same way (gp_site_replay_end).
 * GRUMPY_ADAPTIVE=0 turns this rule off as well.
 *
 * The table also names lines for `python -m grumpy.explain`
 * (hooks/explain.c): the user's frame of each operation is registered with
 * op GP_NOPS, an index the adaptive rule never asks about (and a site it
 * cannot use once the table is full).
 *
 * State: the table below, one interpreter, GIL held for every call.  The
 * code objects are held (a strong reference), so an address is never
 * reused for another code object while its entry lives.
 */
#include "hooks.h"

#include <stdint.h>

#define EAGER_AFTER 2  /* lone launches, none fused, before a site is NumPy's */
#define PROBE_FIRST 16 /* operations handed to NumPy before the first probe */
#define PROBE_MAX 1024 /* the longest wait between probes */

/* A rule's probes at one site: the calls it applied to, and the value of
 * asked at the next probe and the wait before it (doubling up to
 * PROBE_MAX); all 0 before the rule first answers yes. */
typedef struct {
    int64_t asked, next_probe, probe_wait;
} Probes;

typedef struct {
    PyObject *code;   /* owned, or NULL: a free entry */
    PyObject *module; /* owned: the frame's globals' __name__ (str), or NULL */
    int lasti;
    GpOp op;       /* one line may run several ufuncs (`uf(x)` for each uf) */
    Probes lone;   /* the lone rule's (operations it applied to, the probes among them) */
    int64_t eager; /* operations it handed to NumPy at once */
    /* the warnings rule, for a GP_NOPS site (a line's frame) */
    int64_t warned;    /* warnings given here by replays since the last probe */
    Probes fpe;        /* its probes */
    int64_t fpe_eager; /* operations it handed to NumPy at once */
} Site;

static Site sites[GP_MAX_SITES]; /* index 0 is "no site" */
static int64_t warnings_given;   /* gp_site_warn calls, for gp_site_replay_end */
static int nsites = 1;
/* open addressing over (code, lasti): indexes into sites, 0 = empty */
#define SLOTS (2 * GP_MAX_SITES)
static int16_t slots[SLOTS];

static size_t slot_of(PyObject *code, int lasti, GpOp op)
{
    uintptr_t h = (uintptr_t)code * 0x9E3779B97F4A7C15ull ^ (uintptr_t)(lasti * 256 + (int)op) * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h >> 17) % SLOTS;
}

int gp_site_current(GpOp op)
{
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
    return f ? gp_site_of_frame(f, op) : 0;
}

int gp_site_of_frame(PyFrameObject *f, GpOp op)
{
    PyCodeObject *code = PyFrame_GetCode(f); /* new reference */
    int lasti = PyFrame_GetLasti(f);
    int found = 0;
    for (size_t s = slot_of((PyObject *)code, lasti, op), probes = 0; probes < SLOTS; s = (s + 1) % SLOTS, probes++) {
        int i = slots[s];
        if (i == 0) {
            if (nsites < GP_MAX_SITES) {
                found = nsites++;
                sites[found].code = (PyObject *)code; /* the reference is the table's */
                /* the module's name, not its globals: a namespace given to
                 * exec() must not be kept alive with the arrays it holds */
                PyObject *globals = PyFrame_GetGlobals(f);
                PyObject *name = globals ? PyDict_GetItemString(globals, "__name__") : NULL;
                if (name && PyUnicode_Check(name)) {
                    Py_INCREF(name);
                    sites[found].module = name;
                }
                Py_XDECREF(globals);
                sites[found].lasti = lasti;
                sites[found].op = op;
                slots[s] = (int16_t)found;
                return found;
            }
            break;
        }
        if (sites[i].code == (PyObject *)code && sites[i].lasti == lasti && sites[i].op == op) {
            found = i;
            break;
        }
    }
    Py_DECREF(code);
    return found;
}

PyObject *gp_site_where(int site)
{
    if (site <= 0 || site >= nsites)
        return Py_BuildValue("(si)", "<unknown>", 0);
    PyCodeObject *code = (PyCodeObject *)sites[site].code;
    return Py_BuildValue("(Oi)", code->co_filename, PyCode_Addr2Line(code, sites[site].lasti));
}

int gp_site_warn(int site, PyObject *category, PyObject *message)
{
    if (site <= 0 || site >= nsites) {
        const char *text = PyUnicode_AsUTF8(message);
        return text ? PyErr_WarnEx(category, text, 1) : -1;
    }
    /* as warnings.warn does for the frame: its module's __name__ and the
     * __warningregistry__ of that module's dict (made when missing); a
     * module no longer in sys.modules gives no registry (shown each time) */
    PyObject *module = sites[site].module, *registry = NULL, *owner = NULL;
    PyObject *mod = module ? PyImport_GetModule(module) : NULL;
    PyObject *dict = mod && PyModule_Check(mod) ? PyModule_GetDict(mod) : NULL; /* borrowed */
    PyErr_Clear();
    if (dict) {
        registry = PyDict_GetItemString(dict, "__warningregistry__");
        if (registry) {
            Py_INCREF(registry);
        } else if ((registry = PyDict_New()) && PyDict_SetItemString(dict, "__warningregistry__", registry) < 0) {
            Py_CLEAR(registry);
            PyErr_Clear();
        }
        owner = registry;
    }
    if (gp_hooks.adaptive)
        sites[site].warned++; /* what the rule learns, only while it is on */
    warnings_given++;
    PyCodeObject *code = (PyCodeObject *)sites[site].code;
    int rc = PyErr_WarnExplicitObject(category, message, code->co_filename, PyCode_Addr2Line(code, sites[site].lasti),
                                      module, registry && PyDict_Check(registry) ? registry : NULL);
    Py_XDECREF(owner);
    Py_XDECREF(mod);
    return rc;
}

/* Counts a call a rule applies to; 1 when it is a probe (recorded anyway:
 * the 16th call, then the 48th, the 112th, ...; the wait doubles at each,
 * up to PROBE_MAX). */
static int probe_now(Probes *p)
{
    if (!p->next_probe)
        p->next_probe = p->probe_wait = PROBE_FIRST;
    if (++p->asked < p->next_probe)
        return 0;
    p->probe_wait = p->probe_wait * 2 < PROBE_MAX ? p->probe_wait * 2 : PROBE_MAX;
    p->next_probe = p->asked + p->probe_wait;
    return 1;
}

int gp_site_wants_eager(int site)
{
    if (site <= 0 || site >= nsites)
        return 0;
    gp_lock();
    GpSiteCounts c = gp_sites[site];
    gp_unlock();
    if (c.fused > 0 || c.lone < EAGER_AFTER)
        return 0;
    /* a probe: does it still run alone?  (It pays the kernel and the
     * staged result, about twice NumPy's time; one that fuses makes the
     * site captured.) */
    if (probe_now(&sites[site].lone))
        return 0;
    sites[site].eager++;
    return 1;
}

int gp_site_warns(int site)
{
    if (site <= 0 || site >= nsites || !sites[site].warned || !gp_hooks.adaptive)
        return 0;
    Site *st = &sites[site];
    if (probe_now(&st->fpe)) {
        /* warned again only if a replay of its kernel finds NumPy warning
         * here again */
        st->warned = 0;
        return 0;
    }
    st->fpe_eager++;
    gp_hooks.eager_site++;
    return 1;
}

int64_t gp_site_replay_begin(void) { return warnings_given; }

void gp_site_replay_end(int64_t begin, GpNode *const *nodes, int n)
{
    if (warnings_given != begin)
        return;
    /* a compare of NaNs (x86's signal "invalid" where NumPy's are quiet):
     * from now on kernels compare quietly, and the lines get another go */
    if (!__atomic_load_n(&gp_config.quiet_compares, __ATOMIC_RELAXED))
        for (int i = 0; i < n; i++)
            if (gp_op_compares_floats((GpOp)nodes[i]->op, nodes[i]->nin > 0 && nodes[i]->in[0]
                                                              ? (GpDType)nodes[i]->in[0]->dtype
                                                              : (GpDType)nodes[i]->dtype)) {
                __atomic_store_n(&gp_config.quiet_compares, 1, __ATOMIC_RELAXED);
                return;
            }
    if (!gp_hooks.adaptive)
        return;
    /* flags NumPy does not raise (an overflow inside float32 tanh's exp):
     * the kernel would replay at every pass, for nothing */
    for (int i = 0; i < n; i++)
        if (nodes[i]->where > 0 && nodes[i]->where < nsites)
            sites[nodes[i]->where].warned++;
}

PyObject *gp_sites_report(void)
{
    PyObject *out = PyDict_New();
    for (int i = 1; out && i < nsites; i++) {
        int fpe = sites[i].fpe_eager > 0; /* a line's frame (GP_NOPS): the warnings rule */
        if (sites[i].eager == 0 && !fpe)
            continue;
        PyCodeObject *code = (PyCodeObject *)sites[i].code;
        gp_lock();
        GpSiteCounts c = gp_sites[i];
        gp_unlock();
        /* two sites of one line and op (x*x + z*z) share a key: summed */
        PyObject *key = PyUnicode_FromFormat("%U:%d %s", code->co_filename, PyCode_Addr2Line(code, sites[i].lasti),
                                             fpe ? "warnings" : gp_op_name[sites[i].op]);
        PyObject *had = key ? PyDict_GetItemWithError(out, key) : NULL;
        long long lone = c.lone, fused = c.fused, eager = fpe ? sites[i].fpe_eager : sites[i].eager;
        if (had) {
            PyObject *v;
            lone += (v = PyDict_GetItemString(had, "lone")) ? PyLong_AsLongLong(v) : 0;
            fused += (v = PyDict_GetItemString(had, "fused")) ? PyLong_AsLongLong(v) : 0;
            eager += (v = PyDict_GetItemString(had, "eager")) ? PyLong_AsLongLong(v) : 0;
        }
        const char *reason = fpe ? "NumPy warned here (IEEE flags of its kernel): NumPy's at once, with its warnings"
                                 : "results computed alone, nothing fused: NumPy's at once";
        PyObject *v = !key || PyErr_Occurred()
                          ? NULL
                          : Py_BuildValue("{sLsLsLss}", "lone", lone, "fused", fused, "eager", eager, "reason", reason);
        if (!key || !v || PyDict_SetItem(out, key, v) < 0)
            Py_CLEAR(out);
        Py_XDECREF(key);
        Py_XDECREF(v);
    }
    return out;
}

void gp_sites_reset(void)
{
    for (int i = 1; i < nsites; i++) {
        sites[i].eager = sites[i].fpe_eager = 0;
        sites[i].lone = sites[i].fpe = (Probes){0, 0, 0};
    }
}
