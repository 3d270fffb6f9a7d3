/*
 * cli_resources: `drover resources push DIR` and `drover resources list`
 * (docs/api.md "Resources").
 *
 * push walks DIR without following links: regular files are sent base64
 * encoded under their path relative to DIR (executable ones marked so),
 * directories are walked, and a symbolic link or any other kind of file is
 * refused before anything is sent. The server checks the paths and the size
 * again (400, 413): the client's check only gives an earlier, clearer error.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "cli.h"
#include "cli_http.h"
#include "xalloc.h"

static int add_file(json_t *files, const char *full, const char *rel, const struct stat *st)
{
    FILE *f = fopen(full, "rb");
    if (!f) {
        fprintf(stderr, "drover: %s: %s\n", full, strerror(errno));
        return 1;
    }
    size_t n = (size_t)st->st_size;
    unsigned char *buf = xmalloc(n + 1);
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    if (got != n) {
        fprintf(stderr, "drover: %s: short read\n", full);
        free(buf);
        return 1;
    }
    char *b64 = xmalloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)b64, buf, (int)n);
    free(buf);
    if (st->st_mode & 0111)
        json_object_set_new(files, rel, json_pack("{s:s, s:b}", "data", b64, "exec", 1));
    else
        json_object_set_new(files, rel, json_string(b64));
    free(b64);
    return 0;
}

static int walk(json_t *files, const char *root, const char *rel)
{
    char *dir = rel[0] ? xasprintf("%s/%s", root, rel) : xstrdup(root);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "drover: %s: %s\n", dir, strerror(errno));
        free(dir);
        return 1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *r = rel[0] ? xasprintf("%s/%s", rel, e->d_name) : xstrdup(e->d_name);
        char *full = xasprintf("%s/%s", root, r);
        struct stat st;
        if (lstat(full, &st) != 0) {
            fprintf(stderr, "drover: %s: %s\n", full, strerror(errno));
            rc = 1;
        } else if (S_ISLNK(st.st_mode)) {
            fprintf(stderr, "drover: %s: a symbolic link (refused: push the file itself)\n", full);
            rc = 2;
        } else if (S_ISDIR(st.st_mode)) {
            rc = walk(files, root, r);
        } else if (S_ISREG(st.st_mode)) {
            rc = add_file(files, full, r, &st);
        } else {
            fprintf(stderr, "drover: %s: not a regular file or directory\n", full);
            rc = 2;
        }
        free(r);
        free(full);
    }
    closedir(d);
    free(dir);
    return rc;
}

static const char *cell(const json_t *o, const char *k, char *buf, size_t n)
{
    const json_t *v = json_object_get(o, k);
    if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_string(v) && strcmp(k, "created_at") == 0)
        cli_fmt_time(json_string_value(v), buf, n);
    else
        snprintf(buf, n, "%s", json_is_string(v) ? json_string_value(v) : "-");
    return buf;
}

int cli_resources_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    bool push = argc == 3 && strcmp(argv[1], "push") == 0;
    bool list = argc == 2 && strcmp(argv[1], "list") == 0;
    if (!push && !list) {
        return cli_usage("resources", NULL);
    }
    json_t *body = NULL;
    if (push) {
        json_t *files = json_object();
        int rc = walk(files, argv[2], "");
        if (rc) {
            json_decref(files);
            return rc;
        }
        body = json_pack("{s:o}", "files", files);
    }
    json_t *out = NULL;
    int st = cli_call(&o, push ? "POST" : "GET", "/v1/resources", body, &out, NULL);
    json_decref(body);
    if (st < 0)
        return 1;
    if (st >= 400) {
        int rc = cli_api_error(st, out);
        json_decref(out);
        return rc;
    }
    if (o.json) {
        char *s = json_dumps(out, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("%s\n", s ? s : "null");
        free(s);
    } else if (push) {
        char a[32], b[32], c[32];
        printf("resources version %s: %s files, %s bytes, sha256 %s\n",
               cell(out, "version", a, sizeof(a)), cell(out, "files", b, sizeof(b)),
               cell(out, "size", c, sizeof(c)), json_string_value(json_object_get(out, "sha256")));
    } else {
        printf("%-8s %-10s %-6s %-20s %-16s %s\n", "VERSION", "SIZE", "FILES", "CREATED_AT",
               "CREATED_BY", "SHA256");
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(out, "items"), i, v)
        {
            char a[32], b[32], c[32], d[64], e[130], f[80];
            printf("%-8s %-10s %-6s %-20s %-16s %s\n", cell(v, "version", a, sizeof(a)),
                   cell(v, "size", b, sizeof(b)), cell(v, "files", c, sizeof(c)),
                   cell(v, "created_at", d, sizeof(d)), cell(v, "created_by", f, sizeof(f)),
                   cell(v, "sha256", e, sizeof(e)));
        }
    }
    json_decref(out);
    return 0;
}
