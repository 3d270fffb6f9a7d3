/*
 * drover: the command line, for users and operators.
 *
 * One binary, one subcommand per word; the table below is the list `drover
 * --help` prints. Offline commands (solve, plan) need no server; zk reads
 * the ZooKeeper tree directly. Exit status: 0 ok, 1 error, 2 usage error.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "planner.h"
#include "solver.h"

struct command {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"solve", solver_cli_main, "offline: solve a cluster layout from a catalogue"},
    {"plan", planner_cli_main, "offline: plan an operation's tasks (the dry run)"},
    {"zk", cli_zk_main, "inspect the ZooKeeper tree (ls, get, tree)"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: drover COMMAND [ARGS...]\n\ncommands:\n");
    for (const struct command *c = commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fprintf(f, "\n`drover COMMAND --help` tells more about one.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (const struct command *c = commands; c->name; c++)
        if (strcmp(c->name, argv[1]) == 0)
            return c->main(argc - 1, argv + 1);
    fprintf(stderr, "drover: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return 2;
}
