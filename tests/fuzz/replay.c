/*
 * replay: run a fuzz target over a corpus, as an ordinary test.
 *
 * Every fuzz target defines LLVMFuzzerTestOneInput(). Linked with this file
 * instead of libFuzzer, the target becomes a program that feeds it each file
 * of the directories (or files) named on its command line, so the corpus,
 * including every crash ever found, is replayed by ctest on every build and
 * under ASan + UBSan in CI. A target signals a bug by crashing or by abort();
 * the exit status is 0 when every input was handled.
 *
 * Each corpus file is also replayed with a fixed series of byte mutations
 * (flip a bit, drop a byte, duplicate a byte, at pseudo-random places seeded by
 * the file's length), so the replay explores a little around every input
 * while staying deterministic.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MUTATIONS 300

/* Run the target on data, then on MUTATIONS deterministic mutations of it. */
static unsigned long run_with_mutations(const uint8_t *data, size_t n)
{
    uint8_t *exact = xmalloc(n ? n : 1);
    if (n)
        memcpy(exact, data, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    unsigned long runs = 1;
    uint64_t x = 88172645463325252ULL ^ n;
    for (int k = 0; k < MUTATIONS && n > 0; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t pos = x % n, m = n;
        uint8_t *mut = xmalloc(n + 1);
        memcpy(mut, data, n);
        switch (k % 3) {
        case 0:
            mut[pos] ^= (uint8_t)(1u << ((x >> 32) % 8));
            break;
        case 1:
            memmove(mut + pos, mut + pos + 1, n - pos - 1);
            m = n - 1;
            break;
        default:
            memmove(mut + pos + 1, mut + pos, n - pos);
            m = n + 1;
            break;
        }
        /* An exact-size buffer, so that ASan sees reads past the end. */
        uint8_t *exact_mut = xmalloc(m ? m : 1);
        memcpy(exact_mut, mut, m);
        free(mut);
        LLVMFuzzerTestOneInput(exact_mut, m);
        free(exact_mut);
        runs++;
    }
    return runs;
}

static unsigned long total_runs;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open \"%s\"\n", path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, got;
    uint8_t chunk[4096];
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        XGROW(buf, cap, len + got);
        memcpy(buf + len, chunk, got);
        len += got;
    }
    fclose(f);
    total_runs += run_with_mutations(buf, len);
    free(buf);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such corpus \"%s\"\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i]) != 0)
                return 1;
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d)
            return 1;
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            XGROW(names, cap, n + 1);
            names[n++] = xasprintf("%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof(char *), cmp);
        for (size_t k = 0; k < n; k++) {
            if (replay_file(names[k]) != 0)
                return 1;
            files++;
            free(names[k]);
        }
        free(names);
    }
    /* Also the degenerate inputs every parser must survive. */
    LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
    printf("replay: %d files, %lu inputs handled\n", files, total_runs + 1);
    return files > 0 ? 0 : 1;
}
