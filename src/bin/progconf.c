/* progconf: see progconf.h. */
#include "progconf.h"

#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/thread.h>

#include "drover_version.h"
#include "log.h"
#include "roff.h"
#include "xalloc.h"

static const struct config_key prog_keys[] = {
    CONFIG_KEY("node.id", CONFIG_STRING, struct prog_conf, node_id, .deflt = "",
               .help = "this process's id among members (default: hostname-pid)"),
    CONFIG_END,
};

const struct config_key *prog_conf_keys(void)
{
    static struct config_key *keys;
    const struct config_part parts[] = {
        {prog_keys, 0},
        {coord_config_keys, offsetof(struct prog_conf, zk)},
        {log_config_keys, offsetof(struct prog_conf, log)},
    };
    return config_compose_once(&keys, parts, sizeof(parts) / sizeof(parts[0]));
}

int prog_conf_finish(struct prog_conf *c, const char *prefix, struct drv_err *err)
{
    if (!c->node_id || !*c->node_id) {
        char host[256] = "localhost";
        gethostname(host, sizeof(host) - 1);
        free(c->node_id);
        c->node_id = xasprintf("%s-%s-%ld", prefix, host, (long)getpid());
    }
    size_t len = strlen(c->node_id);
    if (len > 128)
        return drv_err_set(err, DRV_EINVAL, 0, "key \"node.id\": longer than 128 characters");
    for (const char *p = c->node_id; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return drv_err_set(err, DRV_EINVAL, 0,
                               "key \"node.id\": \"%s\" may hold only letters, digits, '-', "
                               "'_' and '.'",
                               c->node_id);
    }
    if (strcmp(c->node_id, ".") == 0 || strcmp(c->node_id, "..") == 0)
        return drv_err_set(err, DRV_EINVAL, 0, "key \"node.id\": \"%s\" is reserved", c->node_id);
    return coord_conf_check(&c->zk, err);
}

int zk_digest_read(const char *path, struct zk_digest *d, struct drv_err *err)
{
    memset(d, 0, sizeof(*d));
    if (!path || !*path)
        return 0;
    char buf[400];
    int rc = config_read_secret("zookeeper.digest_file", path, buf, sizeof(buf), err);
    if (rc != 0)
        return rc;
    char *colon = strchr(buf, ':');
    if (!colon || colon == buf || !colon[1] || (size_t)(colon - buf) >= sizeof(d->user) ||
        strlen(colon + 1) >= sizeof(d->password)) {
        explicit_bzero(buf, sizeof(buf));
        return drv_err_set(err, DRV_EINVAL, 0,
                           "zookeeper.digest_file \"%s\": expected one line \"user:password\"",
                           path);
    }
    *colon = '\0';
    snprintf(d->user, sizeof(d->user), "%s", buf);
    snprintf(d->password, sizeof(d->password), "%s", colon + 1);
    explicit_bzero(buf, sizeof(buf));
    return 0;
}

void zk_digest_clear(struct zk_digest *d)
{
    explicit_bzero(d, sizeof(*d));
}

void prog_zk_opts(const struct prog_conf *c, const struct zk_digest *d,
                  struct coord_session_opts *o)
{
    *o = c->zk.session;
    if (o->chroot && !*o->chroot)
        o->chroot = NULL;
    o->digest_user = d->user[0] ? d->user : NULL;
    o->digest_password = d->user[0] ? d->password : NULL;
}

int prog_zk_connect(struct event_base *base, const struct prog_conf *c, const char *module,
                    struct coord_session **zk)
{
    struct drv_err err;
    drv_err_clear(&err);
    char q[600];
    struct zk_digest digest;
    if (zk_digest_read(c->zk.digest_file, &digest, &err) != 0) {
        log_error(module, "event=config_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    struct coord_session_opts zo;
    prog_zk_opts(c, &digest, &zo);
    *zk = coord_session_new(base, &zo, &err);
    zk_digest_clear(&digest);
    if (!*zk || coord_session_wait_connected(*zk, 15000, &err) != 0) {
        log_error(module, "event=zookeeper_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    return 0;
}

/*
 * The options both daemons take: the one table that --help prints, getopt
 * parses (opts[] below follows it, in the same order) and the man page lists.
 */
static const struct prog_option {
    const char *name; /* without the dashes */
    const char *arg;  /* NULL: none */
    int val;          /* getopt's */
    const char *help;
} prog_options[] = {
    {"config", "FILE", 'c', "run with the configuration in FILE"},
    {"check-config", "FILE", 'k',
     "validate FILE and exit: 0 when it loads, 1 with the file, line, key and reason when not"},
    {"help-config", NULL, 'H', "list the config keys: name, type, meaning and default"},
    {"help", NULL, 'h', "print this usage and exit"},
    {"man", NULL, 'M', "print the manual page of the program, roff, and exit"},
    {"man-config", NULL, 'C', "print the manual page of its configuration file, roff, and exit"},
    {"version", NULL, 'V', "print the version (and the commit it was built from) and exit"},
};
#define N_OPTIONS (sizeof(prog_options) / sizeof(prog_options[0]))

void prog_print_usage(FILE *f, const char *prog)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct prog_option *o = &prog_options[i];
        char opt[64];
        snprintf(opt, sizeof(opt), "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(f, "%s %s %-19s %s\n", i == 0 ? "usage:" : "      ", prog, opt, o->help);
    }
}

static void man_header(FILE *f, const char *title, int section, const char *name,
                       const char *summary)
{
    fprintf(f, ".\\\" %s(%d), generated by `%s` from its own tables: edit them, not this.\n", name,
            section, section == 5 ? "PROG --man-config" : "PROG --man");
    /* .ad l, .nh: ragged right, no hyphens, so options and keys read (and copy) as typed. */
    fprintf(f, ".TH %s %d \"\" \"Drover %s\" \"Drover manual\"\n.ad l\n.nh\n.SH NAME\n", title,
            section, DROVER_VERSION);
    roff_text(f, name);
    fputs(" \\- ", f);
    roff_text(f, summary);
    fputc('\n', f);
}

static void man_items(FILE *f, const char *section, const struct prog_doc_item *items)
{
    if (!items || !items->term)
        return;
    fprintf(f, ".SH %s\n", section);
    for (const struct prog_doc_item *i = items; i->term; i++) {
        fputs(".TP\n.B ", f);
        roff_text(f, i->term);
        fputc('\n', f);
        roff_text(f, i->text);
        fputc('\n', f);
    }
}

void prog_print_man(FILE *f, const char *prog, const struct prog_doc *doc)
{
    char title[64];
    size_t n = 0;
    for (const char *p = prog; *p && n < sizeof(title) - 1; p++)
        title[n++] = (char)toupper((unsigned char)*p);
    title[n] = '\0';
    man_header(f, title, 8, prog, doc->summary);
    fputs(".SH SYNOPSIS\n", f);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        fprintf(f, "%s.B %s\n.B \\-\\-", i ? ".br\n" : "", prog);
        roff_text(f, prog_options[i].name);
        fputc('\n', f);
        if (prog_options[i].arg)
            fprintf(f, ".I %s\n", prog_options[i].arg);
    }
    fputs(".SH DESCRIPTION\n", f);
    for (const char *const *p = doc->description; *p; p++)
        roff_para(f, *p);
    fputs(".SH OPTIONS\n", f);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        fputs(".TP\n.B \\-\\-", f);
        roff_text(f, prog_options[i].name);
        if (prog_options[i].arg)
            fprintf(f, " \\fI%s\\fR", prog_options[i].arg);
        fputc('\n', f);
        roff_text(f, prog_options[i].help);
        fputc('\n', f);
    }
    fputs(".SH CONFIGURATION\n", f);
    char *conf = xasprintf("The configuration file holds key = value lines; %s.conf(5) describes "
                           "every key, and %s --help-config lists them. The packages install an "
                           "example as %s.",
                           prog, prog, doc->conf_path);
    roff_text(f, conf);
    fputc('\n', f);
    free(conf);
    man_items(f, "SIGNALS", doc->signals);
    man_items(f, "FILES", doc->files);
    fputs(".SH EXIT STATUS\n", f);
    roff_text(f, "0 after a clean stop (the drain of SIGTERM), --help, --man, --version or a "
                 "good --check-config; 1 when the configuration file is bad or the program "
                 "fails; 2 for bad arguments.");
    fprintf(f,
            "\n.SH SEE ALSO\n.BR %s.conf (5),\n.BR drover (1),\n.BR %s (8),\n"
            ".BR systemctl (1);\n/usr/share/doc/drover/ (deploy, operations)\n",
            prog, strcmp(prog, "droverd") == 0 ? "drover\\-worker" : "droverd");
}

void prog_print_conf_man(FILE *f, const char *prog, const struct prog_doc *doc,
                         const struct config_key *keys)
{
    char title[64], name[64];
    size_t n = 0;
    for (const char *p = prog; *p && n < sizeof(title) - 6; p++)
        title[n++] = (char)toupper((unsigned char)*p);
    snprintf(title + n, sizeof(title) - n, ".CONF");
    snprintf(name, sizeof(name), "%s.conf", prog);
    man_header(f, title, 5, name, doc->conf_summary);
    fputs(".SH SYNOPSIS\n", f);
    roff_text(f, doc->conf_path);
    fputs("\n.SH DESCRIPTION\n", f);
    for (const char *const *p = config_format_doc; *p; p++)
        roff_para(f, *p);
    fputs(".SH KEYS\n", f);
    config_print_man(f, keys);
    fprintf(f, ".SH SEE ALSO\n.BR %s (8),\n.BR drover (1)\n", prog);
}

int prog_start(int argc, char **argv, const char *prog, const char *id_prefix,
               const struct prog_doc *doc, const struct config_key *keys, void *conf,
               struct prog_conf *common, int (*check)(const void *conf, struct drv_err *err))
{
    struct option opts[N_OPTIONS + 1];
    for (size_t i = 0; i < N_OPTIONS; i++)
        opts[i] = (struct option){prog_options[i].name,
                                  prog_options[i].arg ? required_argument : no_argument, NULL,
                                  prog_options[i].val};
    opts[N_OPTIONS] = (struct option){NULL, 0, NULL, 0};
    const char *path = NULL;
    int check_only = 0, c;
    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            path = optarg;
            break;
        case 'k':
            path = optarg;
            check_only = 1;
            break;
        case 'H':
            config_print_help(keys);
            return 0;
        case 'h':
            prog_print_usage(stdout, prog);
            return 0;
        case 'M':
            prog_print_man(stdout, prog, doc);
            return 0;
        case 'C':
            prog_print_conf_man(stdout, prog, doc, keys);
            return 0;
        case 'V':
            printf("%s %s\n", prog, DROVER_VERSION_FULL);
            return 0;
        default:
            prog_print_usage(stderr, prog);
            return 2;
        }
    }
    if (!path || optind != argc) {
        prog_print_usage(stderr, prog);
        return 2;
    }
    struct drv_err err;
    drv_err_clear(&err);
    int rc = config_load(path, keys, conf, &err);
    if (rc == 0 && prog_conf_finish(common, id_prefix, &err) != 0) {
        drv_err_prefix(&err, "%s", path);
        rc = DRV_EINVAL;
    }
    if (rc == 0 && check && check(conf, &err) != 0) {
        drv_err_prefix(&err, "%s", path);
        rc = DRV_EINVAL;
    }
    if (rc != 0 || check_only) {
        if (rc != 0)
            fprintf(stderr, "%s: %s\n", prog, err.msg);
        else
            printf("%s: %s: ok\n", prog, path);
        config_free(keys, conf);
        return rc != 0;
    }
    log_init((enum log_level)log_level_parse(common->log.level), 2);
    log_route_libraries();
    signal(SIGPIPE, SIG_IGN);
    evthread_use_pthreads();
    return -1;
}
