/* core/cache.c -- on-disk kernel cache.
 *
 * File <dir>/<hash>.gpk:  "GPKC0001" | u64 keylen | key | u64 objlen | object
 * 1. load: open, check magic and that the stored key equals the caller's
 *    byte for byte (a hash collision or a stale file is a miss), read the
 *    object;
 * 2. store: mkdir -p with mode 0700, write <dir>/.tmp.<pid>.<n>, fsync-free
 *    rename over <hash>.gpk (atomic on POSIX, so readers see old or new).
 */
#include "cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char cache_dir[1024];
static const char magic[8] = {'G', 'P', 'K', 'C', '0', '0', '0', '1'};

void gp_cache_set_dir(const char *dir)
{
    if (!dir || !*dir || strlen(dir) >= sizeof cache_dir - 32)
        cache_dir[0] = 0;
    else
        snprintf(cache_dir, sizeof cache_dir, "%s", dir);
}

static void file_name(char *out, size_t n, uint64_t hash)
{
    snprintf(out, n, "%s/%016llx.gpk", cache_dir, (unsigned long long)hash);
}

void *gp_cache_load(const void *key, size_t keylen, uint64_t hash, size_t *objlen)
{
    if (!cache_dir[0])
        return NULL;
    char path[1100];
    file_name(path, sizeof path, hash);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char m[8];
    uint64_t klen = 0, olen = 0;
    void *stored = NULL, *obj = NULL;
    if (fread(m, 1, 8, f) != 8 || memcmp(m, magic, 8) || fread(&klen, 8, 1, f) != 1 || klen != keylen)
        goto miss;
    stored = malloc(keylen);
    if (!stored || fread(stored, 1, keylen, f) != keylen || memcmp(stored, key, keylen))
        goto miss;
    if (fread(&olen, 8, 1, f) != 1 || olen == 0 || olen > ((uint64_t)64 << 20))
        goto miss;
    obj = malloc(olen);
    if (!obj || fread(obj, 1, olen, f) != olen)
        goto miss;
    free(stored);
    fclose(f);
    *objlen = olen;
    return obj;
miss:
    free(stored);
    free(obj);
    fclose(f);
    return NULL;
}

static int make_dirs(const char *dir)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

void gp_cache_store(const void *key, size_t keylen, uint64_t hash, const void *obj, size_t objlen)
{
    static unsigned serial;
    if (!cache_dir[0] || make_dirs(cache_dir) < 0)
        return;
    char tmp[1100], path[1100];
    snprintf(tmp, sizeof tmp, "%s/.tmp.%ld.%u", cache_dir, (long)getpid(), serial++);
    file_name(path, sizeof path, hash);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return;
    uint64_t klen = keylen, olen = objlen;
    int ok = fwrite(magic, 1, 8, f) == 8 && fwrite(&klen, 8, 1, f) == 1 && fwrite(key, 1, keylen, f) == keylen &&
             fwrite(&olen, 8, 1, f) == 1 && fwrite(obj, 1, objlen, f) == objlen;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0)
        unlink(tmp);
}
