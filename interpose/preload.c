/* interpose/preload.c - LD_PRELOAD shim that turns grumpy on in a whole
 * process tree (libgrumpy_preload.so).
 *
 * Purpose: `LD_PRELOAD=/path/build/libgrumpy_preload.so cmd ...` (or
 * `interpose/grumpy-exec cmd ...`) makes every Python process that cmd
 * starts - subprocesses, multiprocessing workers, interpreters embedded in
 * other programs - run with grumpy, without changing any command line.
 *
 * How, in the order the constructor does it (before main, in every process
 * that loads the shim, Python or not):
 *   1. GRUMPY=1 is set unless GRUMPY is already set (GRUMPY=0 keeps grumpy
 *      off); grumpy.pth in site-packages then imports grumpy._startup, which
 *      calls grumpy.enable().
 *   2. The repository root is prepended to PYTHONPATH, so that `grumpy`
 *      imports even in an interpreter whose site-packages does not have it:
 *      $GRUMPY_HOME if set and non-empty, else the directory two levels above
 *      this .so (found with dladdr; the build puts it at
 *      <root>/build/libgrumpy_preload.so), used only if <root>/grumpy is a
 *      directory.  Nothing is added if the root is already a PYTHONPATH entry,
 *      so nested processes do not grow the variable, nor when the root is
 *      the site-packages directory pip installed grumpy into (it holds
 *      grumpy.pth; the shim is then grumpy/_preload*.so, which the
 *      `grumpy-exec` console script preloads: grumpy/_exec.py).  (For grumpy.pth itself
 *      to run, it must be installed in the interpreter's site-packages;
 *      python -E / -I ignore PYTHONPATH.)
 *   3. Nothing else: children inherit LD_PRELOAD and the environment, so the
 *      shim reaches the whole tree by itself.
 *
 * Errors: none are reported; a step that cannot be done (path too long,
 * out of memory) is skipped and the process runs unchanged.  The shim never
 * includes Python.h and is not tied to any interpreter version.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* An object inside this .so whose address dladdr can map back to its path. */
static const char gp_preload_anchor = 0;

/* Remove the last path component of `path` in place ("/a/b" -> "/a").
 * Returns 0, or -1 if there is no component to remove. */
static int strip_last_component(char *path)
{
    char *slash = strrchr(path, '/');
    if (slash == NULL)
        return -1;
    if (slash == path) /* "/x" -> "/" */
        slash[1] = '\0';
    else
        *slash = '\0';
    return 0;
}

/* Write the repository root into `root` (PATH_MAX bytes).
 * Returns 0, or -1 when it cannot be found. */
static int find_root(char root[PATH_MAX])
{
    const char *home = getenv("GRUMPY_HOME");
    if (home != NULL && home[0] != '\0') {
        size_t len = strlen(home);
        if (len >= PATH_MAX)
            return -1;
        memcpy(root, home, len + 1);
        return 0;
    }

    Dl_info info;
    if (dladdr(&gp_preload_anchor, &info) == 0 || info.dli_fname == NULL)
        return -1;
    if (realpath(info.dli_fname, root) == NULL) /* <root>/build/lib....so */
        return -1;
    if (strip_last_component(root) != 0 || strip_last_component(root) != 0)
        return -1;

    /* Only a tree that holds the grumpy package is worth putting on the path. */
    char package[PATH_MAX];
    size_t len = strlen(root);
    static const char suffix[] = "/grumpy";
    if (len + sizeof suffix > sizeof package)
        return -1;
    memcpy(package, root, len);
    memcpy(package + len, suffix, sizeof suffix);
    struct stat st;
    if (stat(package, &st) != 0 || !S_ISDIR(st.st_mode))
        return -1;
    return 0;
}

/* 1 if `entry` is one of the ':'-separated entries of `list`, else 0. */
static int has_entry(const char *list, const char *entry)
{
    size_t len = strlen(entry);
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, entry, len) == 0)
            return 1;
        if (end == NULL)
            return 0;
        p = end + 1;
    }
}

/* Prepend `root` to PYTHONPATH unless it is already an entry. */
static void prepend_pythonpath(const char *root)
{
    const char *old = getenv("PYTHONPATH");
    if (old == NULL || old[0] == '\0') {
        setenv("PYTHONPATH", root, 1);
        return;
    }
    if (has_entry(old, root))
        return;
    size_t root_len = strlen(root);
    size_t old_len = strlen(old);
    char *value = malloc(root_len + 1 + old_len + 1);
    if (value == NULL)
        return;
    memcpy(value, root, root_len);
    value[root_len] = ':';
    memcpy(value + root_len + 1, old, old_len + 1);
    setenv("PYTHONPATH", value, 1); /* setenv copies value */
    free(value);
}

/* 1 if root is a site-packages directory that pip installed grumpy into
 * (it holds grumpy.pth): that interpreter enables grumpy by itself, and
 * other interpreters must not be given its packages. */
static int is_site_packages(const char *root)
{
    char pth[PATH_MAX];
    static const char suffix[] = "/grumpy.pth";
    size_t len = strlen(root);
    if (len + sizeof suffix > sizeof pth)
        return 0;
    memcpy(pth, root, len);
    memcpy(pth + len, suffix, sizeof suffix);
    struct stat st;
    return stat(pth, &st) == 0 && S_ISREG(st.st_mode);
}

__attribute__((constructor)) static void gp_preload_init(void)
{
    setenv("GRUMPY", "1", 0); /* 0: an explicit GRUMPY=... wins */

    char root[PATH_MAX];
    if (find_root(root) == 0 && !is_site_packages(root))
        prepend_pythonpath(root);
}
