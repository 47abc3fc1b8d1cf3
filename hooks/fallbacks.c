/* hooks/fallbacks.c -- why a call was handed to NumPy, and where.
 *
 * A capture path that declines an operation says why (gp_declined, the
 * first reason given wins: the most specific); when the call then goes to
 * NumPy and is counted as a fallback, the reason is counted with it, and
 * so is the user's line that made the call: the innermost Python frame
 * whose file is neither NumPy's nor grumpy's (np.mean's reduction is
 * charged to the line that called np.mean, not to NumPy's _methods.py).
 *
 *   stats()["fallbacks"]         {name: count}, as before
 *   stats()["fallback_reasons"]  {reason: count}
 *   stats()["fallback_sites"]    {"file:line": {reason: count}}, at most
 *                                MAX_SITES lines (later ones are not kept)
 *
 * GRUMPY_STRICT=1 raises NotImplementedError naming the call, the reason
 * and the line; GRUMPY_STRICT=warn gives one RuntimeWarning per line and
 * call instead and lets NumPy compute.  Per interpreter; GIL held.
 */
#include "hooks.h"

#include <string.h>

#define MAX_SITES 1000

_Thread_local const char *gp_decline;

static PyObject *reasons;  /* {reason: count} */
static PyObject *sites;    /* {"file:line": {reason: count}} */
static PyObject *warned;   /* set of "file:line name" warned under GRUMPY_STRICT=warn */
static char *skip_dirs[2]; /* NumPy's and grumpy's package directories, with a final '/' */

void gp_declined(const char *why)
{
    if (!gp_decline)
        gp_decline = why;
}

int gp_fallbacks_init(void)
{
    reasons = PyDict_New();
    sites = PyDict_New();
    warned = PySet_New(NULL);
    if (!reasons || !sites || !warned)
        return -1;
    static const char *const mods[2] = {"numpy", "grumpy"};
    for (int i = 0; i < 2; i++) {
        PyObject *m = PyImport_ImportModule(mods[i]);
        PyObject *f = m ? PyObject_GetAttrString(m, "__file__") : NULL;
        const char *path = f && PyUnicode_Check(f) ? PyUnicode_AsUTF8(f) : NULL;
        const char *slash = path ? strrchr(path, '/') : NULL;
        if (slash) {
            size_t n = (size_t)(slash - path) + 1;
            skip_dirs[i] = PyMem_RawMalloc(n + 1);
            if (skip_dirs[i]) {
                memcpy(skip_dirs[i], path, n);
                skip_dirs[i][n] = '\0';
            }
        }
        Py_XDECREF(f);
        Py_XDECREF(m);
        PyErr_Clear();
    }
    return 0;
}

static int skipped(PyObject *filename)
{
    const char *f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
    if (!f) {
        PyErr_Clear();
        return 0;
    }
    for (int i = 0; i < 2; i++)
        if (skip_dirs[i] && !strncmp(f, skip_dirs[i], strlen(skip_dirs[i])))
            return 1;
    return 0;
}

PyFrameObject *gp_user_frame(void)
{
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        int skip = skipped(code->co_filename);
        Py_DECREF(code);
        if (!skip)
            return f;
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    return NULL;
}

PyObject *gp_user_site(void)
{
    PyFrameObject *f = gp_user_frame();
    if (!f)
        return PyUnicode_FromString("<no Python frame>");
    PyCodeObject *code = PyFrame_GetCode(f);
    PyObject *s = PyUnicode_FromFormat("%U:%d", code->co_filename, PyFrame_GetLineNumber(f));
    Py_DECREF(code);
    Py_DECREF(f);
    return s;
}

const char *gp_decline_take(void)
{
    const char *why = gp_decline ? gp_decline : GP_WHY_OTHER;
    gp_decline = NULL;
    return why;
}

static void bump(PyObject *dict, PyObject *key)
{
    PyObject *cur = PyDict_GetItemWithError(dict, key);
    PyObject *v = PyLong_FromLongLong((cur ? PyLong_AsLongLong(cur) : 0) + 1);
    if (!v || PyDict_SetItem(dict, key, v) < 0)
        PyErr_Clear();
    Py_XDECREF(v);
}

void gp_count_fallback_why(const char *name, const char *why)
{
    PyObject *exc_type, *exc, *tb;
    PyErr_Fetch(&exc_type, &exc, &tb);
    PyObject *n = PyUnicode_FromString(name), *w = PyUnicode_FromString(why), *site = gp_user_site();
    if (n && w && site) {
        bump(gp_hooks.fallbacks, n);
        bump(reasons, w);
        PyObject *per = PyDict_GetItemWithError(sites, site);
        if (!per && !PyErr_Occurred() && PyDict_GET_SIZE(sites) < MAX_SITES) {
            per = PyDict_New();
            if (per && PyDict_SetItem(sites, site, per) < 0)
                Py_CLEAR(per);
            Py_XDECREF(per); /* the dict holds it */
        }
        if (per)
            bump(per, w);
        if (gp_config.explain)
            gp_explain_fallback(site, name, why);
    }
    Py_XDECREF(n);
    Py_XDECREF(w);
    Py_XDECREF(site);
    PyErr_Clear();
    PyErr_Restore(exc_type, exc, tb);
}

void gp_count_fallback(const char *name) { gp_count_fallback_why(name, gp_decline_take()); }

int gp_strict_refuses(const char *name, const char *why)
{
    if (!gp_hooks.strict)
        return 0;
    PyObject *site = gp_user_site();
    if (!site)
        return -1;
    int rc = 0;
    if (gp_hooks.strict == GP_STRICT_WARN) {
        PyObject *key = PyUnicode_FromFormat("%U %s", site, name);
        int seen = key ? PySet_Contains(warned, key) : -1;
        if (seen == 0 && PySet_Add(warned, key) == 0 &&
            PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "grumpy (GRUMPY_STRICT=warn): %s is not captured (%s) at %U",
                             name, why, site) < 0)
            rc = -1; /* the warning was made an error */
        Py_XDECREF(key);
        if (seen < 0)
            rc = -1;
    } else {
        PyErr_Format(PyExc_NotImplementedError, "grumpy (GRUMPY_STRICT=1): %s is not captured (%s) at %U", name, why,
                     site);
        rc = 1;
    }
    Py_DECREF(site);
    return rc;
}

int gp_fallbacks_into(PyObject *stats)
{
    PyObject *r = PyDict_Copy(reasons), *s = PyDict_New();
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (r && s && PyDict_Next(sites, &pos, &k, &v)) {
        PyObject *c = PyDict_Copy(v);
        if (!c || PyDict_SetItem(s, k, c) < 0) {
            Py_XDECREF(c);
            Py_CLEAR(s);
            break;
        }
        Py_DECREF(c);
    }
    int rc = r && s && PyDict_SetItemString(stats, "fallback_reasons", r) == 0 &&
                     PyDict_SetItemString(stats, "fallback_sites", s) == 0
                 ? 0
                 : -1;
    Py_XDECREF(r);
    Py_XDECREF(s);
    return rc;
}

void gp_fallbacks_reset(void)
{
    PyDict_Clear(gp_hooks.fallbacks);
    PyDict_Clear(reasons);
    PyDict_Clear(sites);
    PySet_Clear(warned);
}
