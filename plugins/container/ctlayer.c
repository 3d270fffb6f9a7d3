/*
 * ctlayer: what the root container plugin writes into a node's own file tree, written so
 * that nothing in that tree can send it elsewhere (issue 32, docs/security.md "Container
 * nodes").
 *
 * A node's writable layer (<container.root>/<id>/upper) is the node's: its root (host uid
 * 1000000) made every link in it. The plugin runs as the host's root, and before a node
 * starts again (a resume) it writes the node's host key, authorized_keys, /etc/hostname and
 * /etc/hosts there and sets owners and modes. Done with the shell's redirections, mkdir,
 * chown and chmod, an absolute symbolic link the node planted (etc/hostname ->
 * /etc/shadow, root/.ssh -> /root/.ssh) resolved on the host: root on the host for the
 * node's root. Every path here is resolved by openat2(2) from the layer's root with
 * RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV: a link, a
 * "..", a mount point anywhere on the way is an error, never followed.
 *
 *   ctlayer LAYER mkdir PATH MODE UID:GID   the missing directories of PATH, each MODE and
 *                                           UID:GID; the existing ones must be directories;
 *                                           the last gets MODE and UID:GID in any case
 *   ctlayer LAYER write PATH MODE UID:GID   standard input into PATH: a new file in PATH's
 *                                           directory (O_EXCL, O_NOFOLLOW), MODE and UID:GID
 *                                           set on it, renamed over PATH; what was at PATH
 *                                           (a file, a link: its entry only) is replaced,
 *                                           never written through
 *   ctlayer LAYER own PATH MODE UID:GID     a directory's owner and mode ("." is LAYER)
 *
 * LAYER itself is opened with O_NOFOLLOW (it is in the root's own directory). Exit status
 * 0, or 1 with "ctlayer: PATH: why" on standard error (a link: "a symbolic link, a mount
 * point or \"..\" in the node's tree: not followed"). One process per call, no state.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RESOLVE (RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

static const char *path_arg = "";

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ctlayer: %s: ", path_arg);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static int why(int e)
{
    if (e == ELOOP || e == EXDEV)
        return die("a symbolic link, a mount point or \"..\" in the node's tree: not followed");
    return die("%s", strerror(e));
}

/* path (relative) from dir, never leaving the layer; -1 with errno. */
static int resolve(int dir, const char *path, int flags)
{
    struct open_how how = {.flags = (unsigned long long)flags | O_CLOEXEC, .resolve = RESOLVE};
    return (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
}

static void set_owner_mode(int fd, mode_t mode, uid_t uid, gid_t gid)
{
    if (fchown(fd, uid, gid) != 0 || fchmod(fd, mode) != 0)
        why(errno);
}

/* Each component of p: not empty, ".", ".." or longer than NAME_MAX. */
static void check_path(const char *p)
{
    if (!*p || *p == '/')
        die("expected a path relative to the layer");
    for (const char *c = p; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && !strncmp(c, "..", 2)) || n > 255)
            die("not a plain relative path");
        c += n;
        if (*c == '/')
            c++;
    }
}

static int do_mkdir(int root, char *path, mode_t mode, uid_t uid, gid_t gid)
{
    int cur = resolve(root, ".", O_RDONLY | O_DIRECTORY);
    if (cur < 0)
        why(errno);
    for (char *save = NULL, *c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        int made = mkdirat(cur, c, mode) == 0;
        if (!made && errno != EEXIST)
            why(errno);
        int next = resolve(cur, c, O_RDONLY | O_DIRECTORY);
        if (next < 0)
            why(errno);
        if (made)
            set_owner_mode(next, mode, uid, gid);
        close(cur);
        cur = next;
    }
    set_owner_mode(cur, mode, uid, gid);
    close(cur);
    return 0;
}

static int do_write(int root, char *path, mode_t mode, uid_t uid, gid_t gid)
{
    char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash)
        *slash = '\0';
    int dir = resolve(root, slash ? path : ".", O_RDONLY | O_DIRECTORY);
    if (slash)
        *slash = '/';
    if (dir < 0)
        why(errno);
    char tmp[64];
    snprintf(tmp, sizeof(tmp), ".drover-ctlayer-%ld", (long)getpid());
    int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        why(errno);
    char buf[65536];
    ssize_t n;
    while ((n = read(0, buf, sizeof(buf))) > 0)
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w < 0) {
                unlinkat(dir, tmp, 0);
                why(errno);
            }
            off += w;
        }
    if (n < 0) {
        unlinkat(dir, tmp, 0);
        why(errno);
    }
    if (fchown(fd, uid, gid) != 0 || fchmod(fd, mode) != 0 || close(fd) != 0) {
        unlinkat(dir, tmp, 0);
        why(errno);
    }
    struct stat st;
    bool was_link = fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
    if (renameat(dir, tmp, dir, base) != 0) {
        int e = errno;
        unlinkat(dir, tmp, 0);
        why(e);
    }
    if (was_link)
        fprintf(stderr, "ctlayer: %s: was a symbolic link: replaced, not followed\n", path_arg);
    close(dir);
    return 0;
}

static int do_own(int root, const char *path, mode_t mode, uid_t uid, gid_t gid)
{
    int fd = resolve(root, path, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        why(errno);
    set_owner_mode(fd, mode, uid, gid);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: ctlayer LAYER mkdir|write|own PATH MODE UID:GID\n");
        return 2;
    }
    path_arg = argv[3];
    char *end;
    unsigned long mode = strtoul(argv[4], &end, 8);
    if (*end || mode > 07777)
        die("mode \"%s\" is not octal", argv[4]);
    unsigned long uid, gid;
    uid = strtoul(argv[5], &end, 10);
    if (*end != ':')
        die("owner \"%s\" is not UID:GID", argv[5]);
    gid = strtoul(end + 1, &end, 10);
    if (*end)
        die("owner \"%s\" is not UID:GID", argv[5]);
    int root = open(argv[1], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0) {
        path_arg = argv[1];
        why(errno);
    }
    char *path = strdup(argv[3]);
    if (strcmp(argv[2], "own") == 0)
        return strcmp(path, ".") == 0
                   ? do_own(root, ".", (mode_t)mode, (uid_t)uid, (gid_t)gid)
                   : (check_path(path), do_own(root, path, (mode_t)mode, (uid_t)uid, (gid_t)gid));
    check_path(path);
    if (strcmp(argv[2], "mkdir") == 0)
        return do_mkdir(root, path, (mode_t)mode, (uid_t)uid, (gid_t)gid);
    if (strcmp(argv[2], "write") == 0)
        return do_write(root, path, (mode_t)mode, (uid_t)uid, (gid_t)gid);
    return die("unknown command \"%s\"", argv[2]);
}
