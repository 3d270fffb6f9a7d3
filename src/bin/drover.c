/*
 * drover: the command line, for users and operators.
 *
 * One binary, one command per word, dispatched from the command table
 * (cli_table.c): a command, then for most a subcommand, then its arguments.
 * Everything that needs no server is answered here, before any command runs:
 * `drover` alone (usage, status 2), --help and -h at every level (status 0),
 * --version, and an unknown command or subcommand (refused with the closest
 * name, status 2). Offline commands (solve, plan) need no server; zk reads
 * the ZooKeeper tree directly; the rest speak the HTTP API (cli_api.c).
 * Exit status: 0 ok, 1 error, 2 usage error.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "drover_version.h"

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

/* Whether option opt of cmd takes a value: --url and --token, or "--opt WORD" in a synopsis. */
static bool takes_value(const struct cli_cmd *cmd, const char *opt)
{
    if (strcmp(opt, "--url") == 0 || strcmp(opt, "--token") == 0)
        return true;
    size_t n = strlen(opt);
    for (const struct cli_cmd *s = cmd->subs; s && s->name; s++)
        for (const char *p = strstr(s->args, opt); p; p = strstr(p + 1, opt))
            if (p[n] == ' ' && p[n + 1] != '[' && p[n + 1] != '-')
                return true;
    return false;
}

/* Remove argv[i] (argc shrinks by one). */
static void drop_arg(int *argc, char **argv, int i)
{
    memmove(&argv[i], &argv[i + 1], (size_t)(*argc - i) * sizeof(*argv));
    (*argc)--;
}

static int unknown(const struct cli_cmd *cmds, const char *what, const char *word,
                   const char *parent)
{
    const char *near = cli_suggest(cmds, word);
    fprintf(stderr, "drover: unknown %s \"%s\"%s%s", what, word, parent ? " of " : "",
            parent ? parent : "");
    if (near)
        fprintf(stderr, "; did you mean \"%s\"?", near);
    fprintf(stderr, "\n(drover %s%s--help lists them)\n", parent ? parent : "", parent ? " " : "");
    return 2;
}

/* `drover help [COMMAND [SUBCOMMAND]]` */
static int help(int argc, char **argv)
{
    if (argc < 3) {
        cli_print_usage(stdout);
        return 0;
    }
    const struct cli_cmd *c = cli_find(cli_commands, argv[2]);
    if (!c)
        return unknown(cli_commands, "command", argv[2], NULL);
    const struct cli_cmd *s = NULL;
    if (argc > 3 && c->subs && !(s = cli_find(c->subs, argv[3])))
        return unknown(c->subs, "subcommand", argv[3], c->name);
    cli_print_help(stdout, c, s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_print_usage(stderr);
        return 2;
    }
    if (is_help(argv[1])) {
        cli_print_usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "help") == 0)
        return help(argc, argv);
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("drover %s\n", DROVER_VERSION_FULL);
        return 0;
    }
    /* --local-time anywhere: a setting of the output, not of any one command. */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--local-time") == 0) {
            cli_fmt_set_local(true);
            drop_arg(&argc, argv, i--);
        }
    /* Global flags may come before the command: move the command to the front. */
    int cmd = 1;
    while (cmd < argc && (strcmp(argv[cmd], "--json") == 0 || strncmp(argv[cmd], "--url", 5) == 0 ||
                          strncmp(argv[cmd], "--token", 7) == 0)) {
        if (strchr(argv[cmd], '=') == NULL && strcmp(argv[cmd], "--json") != 0)
            cmd++;
        cmd++;
    }
    if (cmd >= argc) {
        cli_print_usage(stderr);
        return 2;
    }
    char *name = argv[cmd];
    memmove(&argv[2], &argv[1], (size_t)(cmd - 1) * sizeof(*argv));
    argv[1] = name;
    const struct cli_cmd *c = cli_find(cli_commands, name);
    if (!c)
        return unknown(cli_commands, "command", name, NULL);
    if (c->flags & CLI_OWN_HELP) {
        if (argc == 3 && is_help(argv[2])) {
            /* The command answers an argument it does not take with its usage on
               stderr and status 2; asked for, that is help: stdout, status 0. */
            fflush(stderr);
            dup2(STDOUT_FILENO, STDERR_FILENO);
            int rc = c->main(argc - 1, argv + 1);
            return rc == 2 ? 0 : rc;
        }
        return c->main(argc - 1, argv + 1);
    }
    bool asked_help = false;
    const char *verb = NULL;
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i]))
            asked_help = true;
        else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            if (!strchr(argv[i], '=') && takes_value(c, argv[i]))
                i++;
        } else if (!verb)
            verb = argv[i];
    }
    const struct cli_cmd *s = NULL;
    if (c->subs) {
        if (!verb) {
            cli_print_help(asked_help ? stdout : stderr, c, NULL);
            return asked_help ? 0 : 2;
        }
        if (!(s = cli_find(c->subs, verb)))
            return unknown(c->subs, "subcommand", verb, c->name);
    }
    if (asked_help) {
        cli_print_help(stdout, c, s);
        return 0;
    }
    return c->main(argc - 1, argv + 1);
}
