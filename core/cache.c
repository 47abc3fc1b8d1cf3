/* core/cache.c -- the on-disk kernel cache (DESIGN.md section 6), trusted
 * only when nobody else can write it.
 *
 * File <dir>/<hex of SHA-256(key), 32 digits>.gpk:
 *     "GPKC0002" | SHA-256 of everything after it (32 bytes)
 *     | u64 keylen | key | u64 objlen | object
 *
 * 1. trust (gp_cache_set_dir): the directory is opened once with
 *    O_DIRECTORY|O_NOFOLLOW (created mode 0700 when missing) and kept open;
 *    it must be owned by the effective user and not writable by group or
 *    others, otherwise the cache is off and the reason is returned.  Every
 *    later access is relative to that descriptor, so renaming or replacing
 *    the path afterwards changes nothing.
 * 2. load: openat(O_NOFOLLOW), the file must be a regular file owned by the
 *    effective user and not group/other writable; the whole file is read
 *    (at most GP_CACHE_MAX_FILE bytes), its digest checked before any byte
 *    is parsed, then the stored key compared with the caller's byte for
 *    byte.  A hit touches the file's times (least-recently-used order).
 * 3. store: a temporary ".tmp.<random>" created O_CREAT|O_EXCL|O_NOFOLLOW
 *    mode 0600, written whole, fsync'ed and renamed over the entry (readers
 *    see the old file or the new one); then the store is added to the
 *    directory's running total (USAGE, below), and when that passes the
 *    size bound the entries are listed and the least recently used removed
 *    until the directory holds at most the bound.
 * The digest is OpenSSL's SHA-256 (libcrypto's EVP interface).
 */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GP_CACHE_MAX_FILE ((uint64_t)64 << 20)

/* The cache's place and bound, for the process; set before the first
 * compile (the hooks' configuration), read under the core lock. */
static struct {
    int dir_fd; /* the directory, open, or -1 */
    char dir_path[1024];
    uint64_t max_bytes;
} S = {.dir_fd = -1, .max_bytes = (uint64_t)256 << 20};
static const char magic[8] = {'G', 'P', 'K', 'C', '0', '0', '0', '2'};

int gp_digest(const void *data, size_t n, unsigned char out[GP_DIGEST_BYTES])
{
    unsigned len = 0;
    return EVP_Digest(data, n, out, &len, EVP_sha256(), NULL) == 1 && len == GP_DIGEST_BYTES ? 0 : -1;
}

void gp_digest_hex(const unsigned char *digest, size_t nbytes, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[2 * nbytes] = 0;
}

/* 0 when st is owned by us and not writable by group or others. */
static int trusted(const struct stat *st, const char *what, const char *path)
{
    if (st->st_uid != geteuid()) {
        gp_set_error("%s %s is owned by uid %u, not by this user (%u)", what, path, (unsigned)st->st_uid,
                     (unsigned)geteuid());
        return -1;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        gp_set_error("%s %s is writable by group or others (mode %03o)", what, path, (unsigned)(st->st_mode & 0777));
        return -1;
    }
    return 0;
}

/* mkdir -p of the parents of path, mode 0700; errors are left to the open. */
static void make_parents(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0700);
            *p = '/';
        }
    }
}

int gp_cache_set_dir(const char *dir)
{
    if (S.dir_fd >= 0)
        close(S.dir_fd);
    S.dir_fd = -1;
    S.dir_path[0] = 0;
    if (!dir || !*dir)
        return 0;
    if (strlen(dir) >= sizeof S.dir_path) {
        gp_set_error("cache directory name too long");
        return -1;
    }
    make_parents(dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        gp_set_error("cannot create cache directory %s: %s", dir, strerror(errno));
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        gp_set_error("cannot open cache directory %s: %s", dir,
                     errno == ELOOP || errno == ENOTDIR ? "not a directory (a symbolic link?)" : strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0 || trusted(&st, "cache directory", dir) < 0) {
        close(fd);
        return -1;
    }
    S.dir_fd = fd;
    snprintf(S.dir_path, sizeof S.dir_path, "%s", dir);
    return 0;
}

void gp_cache_set_max_bytes(uint64_t n) { S.max_bytes = n; }

static void entry_name(const void *key, size_t keylen, char out[40])
{
    unsigned char d[GP_DIGEST_BYTES];
    if (gp_digest(key, keylen, d) < 0)
        memset(d, 0, sizeof d);
    gp_digest_hex(d, 16, out);
    strcat(out, ".gpk");
}

/* Reads the whole regular file `name` in the cache directory if it is
 * trusted; malloc'd bytes or NULL.  fd_out keeps the file open when
 * non-NULL (caller closes). */
static unsigned char *read_entry(const char *name, size_t *len, int *fd_out)
{
    int fd = openat(S.dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || trusted(&st, "cache file", name) < 0 || st.st_size < 56 ||
        (uint64_t)st.st_size > GP_CACHE_MAX_FILE)
        goto fail;
    buf = malloc((size_t)st.st_size);
    if (!buf)
        goto fail;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0)
            goto fail;
        got += (size_t)r;
    }
    *len = got;
    if (fd_out)
        *fd_out = fd;
    else
        close(fd);
    return buf;
fail:
    free(buf);
    close(fd);
    return NULL;
}

void *gp_cache_load(const void *key, size_t keylen, size_t *objlen)
{
    if (S.dir_fd < 0 || gp_fail_now())
        return NULL;
    char name[40];
    entry_name(key, keylen, name);
    size_t len = 0;
    int fd = -1;
    unsigned char *buf = read_entry(name, &len, &fd);
    if (!buf)
        return NULL;
    unsigned char d[GP_DIGEST_BYTES];
    uint64_t klen, olen;
    void *obj = NULL;
    if (memcmp(buf, magic, 8) || gp_digest(buf + 40, len - 40, d) < 0 || memcmp(d, buf + 8, GP_DIGEST_BYTES))
        goto done; /* corrupt: a miss; the next store rewrites it */
    memcpy(&klen, buf + 40, 8);
    if (klen != keylen || len - 48 < klen + 8 || memcmp(buf + 48, key, keylen))
        goto done;
    memcpy(&olen, buf + 48 + klen, 8);
    if (olen == 0 || olen != len - 56 - klen)
        goto done;
    obj = malloc(olen);
    if (obj) {
        memcpy(obj, buf + 56 + klen, olen);
        *objlen = olen;
        futimens(fd, NULL); /* most recently used */
    }
done:
    free(buf);
    close(fd);
    return obj;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

typedef struct {
    char name[64];
    int64_t mtime_ns;
    uint64_t bytes;
} Listed;

static int by_age(const void *a, const void *b)
{
    int64_t x = ((const Listed *)a)->mtime_ns, y = ((const Listed *)b)->mtime_ns;
    return x < y ? -1 : x > y;
}

/* Lists the entries (and, when tmp_too, temporary files) of the cache
 * directory that this user owns.  Returns a malloc'd array, count in *n. */
static Listed *list_entries(size_t *n, int tmp_too)
{
    *n = 0;
    /* the directory opened again, not dup'ed: a listing of its own read
     * position (the background compile thread evicts as it stores) */
    int fd = openat(S.dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    rewinddir(d);
    size_t cap = 0;
    Listed *out = NULL;
    struct dirent *e;
    uid_t me = geteuid();
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        int is_entry = l > 4 && l < 64 && strcmp(e->d_name + l - 4, ".gpk") == 0;
        int is_tmp = l < 64 && strncmp(e->d_name, ".tmp.", 5) == 0;
        struct stat st;
        if (!(is_entry || (tmp_too && is_tmp)) || fstatat(S.dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != me)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            Listed *grown = realloc(out, cap * sizeof *out);
            if (!grown)
                break;
            out = grown;
        }
        memcpy(out[*n].name, e->d_name, l + 1); /* l < 64: checked above */
        out[*n].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        out[*n].bytes = (uint64_t)st.st_size;
        (*n)++;
    }
    closedir(d);
    return out;
}

/* Removes least recently used entries, when the entries hold more than
 * max_bytes, until they hold at most 7/8 of it (so that the running total
 * below passes the bound again only after an eighth of it is stored, not
 * at the next store); returns the bytes the remaining entries hold. */
static uint64_t evict(void)
{
    size_t n;
    Listed *l = list_entries(&n, 1);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t stale = ((int64_t)now.tv_sec - 3600) * 1000000000; /* a temporary a crashed writer left */
    for (size_t i = 0; i < n; i++) {
        if (strncmp(l[i].name, ".tmp.", 5) == 0) {
            if (l[i].mtime_ns < stale)
                unlinkat(S.dir_fd, l[i].name, 0);
            l[i--] = l[--n];
        }
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += l[i].bytes;
    if (total > S.max_bytes) {
        uint64_t low = S.max_bytes - S.max_bytes / 8;
        qsort(l, n, sizeof *l, by_age);
        for (size_t i = 0; i < n && total > low; i++)
            if (unlinkat(S.dir_fd, l[i].name, 0) == 0)
                total -= l[i].bytes;
    }
    free(l);
    return total;
}

/* The directory's running total, so that a store need not list the
 * directory: USAGE holds two uint64 (host order), the bytes its entries
 * held when last listed plus the bytes stored since, and the stores since
 * that listing.  Each store adds itself under an exclusive flock; the
 * entries are listed (evict) when the total passes the bound, when the
 * file is new or unreadable, and every RECOUNT stores (the total drifts:
 * an entry stored over an older one is counted twice, `rm` of entries is
 * not counted).  Listing is one fstatat per entry: 0.1 s a store for the
 * 41663 entries (210 MB) a user's cache held here, the whole of a
 * kernel's compile time several times over (2026-11-27).  A listing
 * removes entries down to 7/8 of the bound (evict), so that a full cache
 * is listed once an eighth of it is stored, not at every store.  A USAGE
 * that is not a regular file of this user, writable by no one else, is
 * not used: every store lists the entries; one another process holds
 * locked for more than ~10 ms is skipped: that store goes uncounted until
 * the next listing (a stopped process must not stall the others). */
#define USAGE ".usage"
#define RECOUNT 256

/* USAGE open, trusted and locked (exclusively, without waiting more than
 * about 10 ms: a process stopped while it holds the lock must not stall
 * every other process's compiles), or -1. */
static int lock_usage(void)
{
    int fd = openat(S.dir_fd, USAGE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        close(fd);
        return -1;
    }
    for (int tries = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; tries++) {
        if (errno != EWOULDBLOCK || tries == 10) {
            close(fd);
            return -2;
        }
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return fd;
}

static void add_to_usage(uint64_t bytes)
{
    int fd = lock_usage();
    if (fd == -2)
        return; /* busy: this store goes uncounted until the next listing */
    if (fd < 0) {
        evict(); /* no usable USAGE: listed at every store */
        return;
    }
    uint64_t u[2] = {0, 0}; /* bytes, stores since the entries were listed */
    int known = pread(fd, u, sizeof u, 0) == (ssize_t)sizeof u;
    if (!known || u[1] + 1 >= RECOUNT || u[0] > S.max_bytes || bytes > S.max_bytes - u[0]) {
        u[0] = evict(); /* also a USAGE that is short, corrupt or past the bound */
        u[1] = 0;
    } else {
        u[0] += bytes;
        u[1]++;
    }
    if (pwrite(fd, u, sizeof u, 0) != (ssize_t)sizeof u && ftruncate(fd, 0) < 0)
        unlinkat(S.dir_fd, USAGE, 0); /* unreadable either way: the next store lists the entries */
    close(fd);                        /* and the lock released */
}

void gp_cache_store(const void *key, size_t keylen, const void *obj, size_t objlen)
{
    if (S.dir_fd < 0 || 56 + keylen + objlen > GP_CACHE_MAX_FILE)
        return;
    size_t len = 56 + keylen + objlen;
    unsigned char *buf = malloc(len);
    if (!buf)
        return;
    uint64_t klen = keylen, olen = objlen;
    memcpy(buf, magic, 8);
    memcpy(buf + 40, &klen, 8);
    memcpy(buf + 48, key, keylen);
    memcpy(buf + 48 + keylen, &olen, 8);
    memcpy(buf + 56 + keylen, obj, objlen);
    unsigned char rnd[12];
    char tmp[40], name[40];
    if (gp_digest(buf + 40, len - 40, buf + 8) < 0 || getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        free(buf);
        return;
    }
    memcpy(tmp, ".tmp.", 5);
    gp_digest_hex(rnd, sizeof rnd, tmp + 5);
    entry_name(key, keylen, name);
    int fd = openat(S.dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        int ok = write_all(fd, buf, len) == 0 && fsync(fd) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || renameat(S.dir_fd, tmp, S.dir_fd, name) < 0)
            unlinkat(S.dir_fd, tmp, 0);
        else
            add_to_usage(len);
    }
    free(buf);
}

const char *gp_cache_dir(void) { return S.dir_fd >= 0 ? S.dir_path : NULL; }

uint64_t gp_cache_max_bytes(void) { return S.max_bytes; }

int gp_cache_usage(uint64_t *files, uint64_t *bytes)
{
    *files = *bytes = 0;
    if (S.dir_fd < 0)
        return -1;
    size_t n;
    Listed *l = list_entries(&n, 0);
    for (size_t i = 0; i < n; i++)
        *bytes += l[i].bytes;
    *files = n;
    free(l);
    return 0;
}

int64_t gp_cache_clear(void)
{
    if (S.dir_fd < 0)
        return -1;
    size_t n;
    Listed *l = list_entries(&n, 1);
    int64_t removed = 0;
    for (size_t i = 0; i < n; i++)
        removed += unlinkat(S.dir_fd, l[i].name, 0) == 0;
    free(l);
    /* the directory left empty: USAGE removed too, under its lock (a store
     * waiting on it then counts into the removed file, and the next store
     * lists the entries) */
    int fd = lock_usage();
    unlinkat(S.dir_fd, USAGE, 0);
    if (fd >= 0)
        close(fd);
    return removed;
}
