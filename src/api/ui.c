/*
 * ui: the dashboard's static files under /ui/ (ui.h says what and why).
 *
 * The table is a sorted array of {name, type, etag, bytes}, name being the
 * path below the directory ("app.js", "img/logo.svg"); a request's path is
 * split and checked by the API's strict splitter (no ".", "..", encoded "/"
 * or control characters), joined again with "/" and looked up by binary
 * search. "/ui" redirects to "/ui/", which is index.html.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "hex.h"
#include "http.h"
#include "ui.h"
#include "xalloc.h"

const char api_ui_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                          "img-src 'self' data:; connect-src 'self'; font-src 'self'; "
                          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

struct ui_file {
    char *name;
    const char *type;
    char etag[40]; /* "\"<32 hex>\"" */
    char *bytes;
    size_t len;
};

struct api_ui {
    struct ui_file *files;
    size_t n, cap;
    size_t total;
};

static const struct {
    const char *ext;
    const char *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
    {".woff2", "font/woff2"},
};

static const char *type_of(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        size_t e = strlen(types[i].ext);
        if (n > e && strcmp(name + n - e, types[i].ext) == 0)
            return types[i].type;
    }
    return NULL;
}

/* Letters, digits, '.', '_', '-'; not starting with '.'. */
static int good_name(const char *s)
{
    if (!*s || *s == '.')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

static void etag_of(const char *bytes, size_t len, char out[40])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(bytes, len, md, &mdlen, EVP_sha256(), NULL);
    char *p = out;
    *p++ = '"';
    hex_encode(md, 16, p);
    p += 32;
    *p++ = '"';
    *p = '\0';
}

static int read_file(int dfd, const char *name, struct ui_file *f, struct drv_err *err)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return drv_err_set(err, DRV_EIO, e, "ui file \"%s\": %s", f->name, strerror(e));
    }
    if (st.st_size > API_UI_MAX_FILE) {
        close(fd);
        return drv_err_set(err, DRV_EINVAL, 0, "ui file \"%s\": larger than %ld bytes", f->name,
                           API_UI_MAX_FILE);
    }
    f->bytes = xmalloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t k = read(fd, f->bytes + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    f->len = got;
    etag_of(f->bytes, f->len, f->etag);
    return 0;
}

static int load_dir(struct api_ui *u, int dfd, const char *prefix, int depth, struct drv_err *err)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return drv_err_set(err, DRV_EIO, errno, "ui dir \"%s\": %s", prefix, strerror(errno));
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!good_name(e->d_name))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        char *name = xasprintf("%s%s", prefix, e->d_name);
        if (S_ISDIR(st.st_mode) && depth < API_UI_MAX_DEPTH) {
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            char *p = xasprintf("%s/", name);
            rc = sub < 0 ? 0 : load_dir(u, sub, p, depth + 1, err);
            free(p);
            free(name);
            continue;
        }
        const char *type = type_of(e->d_name);
        if (!S_ISREG(st.st_mode) || !type) {
            free(name);
            continue;
        }
        if (u->n == API_UI_MAX_FILES) {
            free(name);
            rc = drv_err_set(err, DRV_EINVAL, 0, "ui dir: more than %d files", API_UI_MAX_FILES);
            break;
        }
        if (u->n == u->cap) {
            u->cap = u->cap ? u->cap * 2 : 32;
            u->files = xrealloc(u->files, u->cap * sizeof(*u->files));
        }
        struct ui_file *f = &u->files[u->n];
        memset(f, 0, sizeof(*f));
        f->name = name;
        f->type = type;
        rc = read_file(dirfd(d), e->d_name, f, err);
        if (rc) {
            free(name);
            break;
        }
        u->n++;
        u->total += f->len;
        if (u->total > API_UI_MAX_TOTAL)
            rc = drv_err_set(err, DRV_EINVAL, 0, "ui dir: more than %ld bytes", API_UI_MAX_TOTAL);
    }
    closedir(d);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct ui_file *)a)->name, ((const struct ui_file *)b)->name);
}

struct api_ui *api_ui_load(const char *dir, struct drv_err *err)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        drv_err_set(err, DRV_ENOENT, errno, "ui dir \"%s\": %s", dir, strerror(errno));
        return NULL;
    }
    struct api_ui *u = xcalloc(1, sizeof(*u));
    if (load_dir(u, dfd, "", 0, err) != 0) {
        api_ui_free(u);
        return NULL;
    }
    if (u->n)
        qsort(u->files, u->n, sizeof(*u->files), by_name);
    return u;
}

void api_ui_free(struct api_ui *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->n; i++) {
        free(u->files[i].name);
        free(u->files[i].bytes);
    }
    free(u->files);
    free(u);
}

size_t api_ui_count(const struct api_ui *u)
{
    return u ? u->n : 0;
}

int api_ui_path(const char *path)
{
    return strcmp(path, "/ui") == 0 || strncmp(path, "/ui/", 4) == 0;
}

static const struct ui_file *find(const struct api_ui *u, const char *name)
{
    if (!u || !u->n)
        return NULL;
    struct ui_file key = {.name = (char *)name};
    return bsearch(&key, u->files, u->n, sizeof(*u->files), by_name);
}

/* Does an If-None-Match value name etag (or "*")? Weak validators compare equal. */
static int etag_matches(const char *inm, const char *etag)
{
    if (!inm)
        return 0;
    if (strcmp(inm, "*") == 0)
        return 1;
    return strstr(inm, etag) != NULL;
}

static void fail(struct api_ui_reply *out, int status, const char *code, const char *msg)
{
    out->status = status;
    out->code = code;
    snprintf(out->msg, sizeof(out->msg), "%s", msg);
}

void api_ui_answer(const struct api_ui *u, int method, const char *path, const char *if_none_match,
                   struct api_ui_reply *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->headers, sizeof(out->headers),
             "Content-Security-Policy: %s\r\nX-Content-Type-Options: nosniff\r\n"
             "X-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\n",
             api_ui_csp);
    if (method == API_M_UNKNOWN)
        return fail(out, 501, "not-implemented", "method not implemented");
    if (method != API_M_GET && method != API_M_HEAD) {
        strcat(out->headers, "Allow: GET, HEAD\r\n");
        return fail(out, 405, "method-not-allowed", "only GET and HEAD are allowed here");
    }
    if (strcmp(path, "/ui") == 0) {
        out->status = 301;
        strcat(out->headers, "Location: /ui/\r\n");
        return;
    }
    char name[512];
    if (strlen(path) >= sizeof(name)) /* longer than any name in the table */
        return fail(out, 404, "not-found", "no such file");
    if (strcmp(path, "/ui/") == 0) {
        snprintf(name, sizeof(name), "index.html");
    } else {
        char *segbuf = NULL, *seg[API_UI_MAX_DEPTH + 2], why[160];
        int nseg = 0;
        int st = api__http_split_path(path, &segbuf, seg, API_UI_MAX_DEPTH + 2, &nseg, why);
        if (st) {
            free(segbuf);
            return fail(out, st, st == 404 ? "not-found" : "malformed",
                        st == 404 ? "no such file" : why);
        }
        name[0] = '\0';
        for (int i = 1; i < nseg; i++)
            snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s%s", i > 1 ? "/" : "",
                     seg[i]);
        free(segbuf);
    }
    const struct ui_file *f = find(u, name);
    if (!f)
        return fail(out, 404, "not-found", u ? "no such file" : "the dashboard is not installed");
    size_t n = strlen(out->headers);
    snprintf(out->headers + n, sizeof(out->headers) - n, "ETag: %s\r\nCache-Control: no-cache\r\n",
             f->etag);
    out->type = f->type;
    if (etag_matches(if_none_match, f->etag)) {
        out->status = 304;
        return;
    }
    out->status = 200;
    out->body = f->bytes;
    out->len = f->len;
}
