/*
 * replay_corpus: runs every file of a corpus directory through
 * LLVMFuzzerTestOneInput (the fuzz target, built with the normal compiler).
 * A crash, a sanitizer report or an abort fails the test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        perror(argv[1]);
        return 1;
    }
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) {
            perror(path);
            return 1;
        }
        uint8_t *buf = malloc(1 << 20);
        size_t len = fread(buf, 1, 1 << 20, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        n++;
    }
    closedir(d);
    printf("replayed %d inputs\n", n);
    return n > 0 ? 0 : 1;
}
