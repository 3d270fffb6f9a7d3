/*
 * drover: the command line, for users and operators.
 *
 * One binary, one subcommand per word; the table below is the list `drover
 * --help` prints. Offline commands (solve, plan) need no server; zk reads
 * the ZooKeeper tree directly; the rest speak the HTTP API (cli_api.c).
 * Exit status: 0 ok, 1 error, 2 usage error.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "planner.h"
#include "solver.h"

struct command {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"providers", cli_entity_main, "providers: list, get, create, replace, delete"},
    {"hardwaretypes", cli_entity_main, "hardware types: list, get, create, replace, delete"},
    {"imagetypes", cli_entity_main, "image types: list, get, create, replace, delete"},
    {"services", cli_entity_main, "services: list, get, create, replace, delete"},
    {"clustertemplates", cli_entity_main, "cluster templates: list, get, create, replace, delete"},
    {"partialtemplates", cli_entity_main, "partial templates: list, get, create, replace, delete"},
    {"import", cli_import_main, "import a catalogue directory or JSON document"},
    {"export", cli_export_main, "export the catalogue as one JSON document"},
    {"cluster", cli_cluster_main, "clusters: list, get, create, delete and operations"},
    {"preview", cli_preview_main, "solve and plan a cluster without running anything"},
    {"job", cli_job_main, "jobs: list, get, watch, plan, cancel, pause, resume"},
    {"members", cli_fleet_main, "orchestrator nodes, the ring and who owns which jobs"},
    {"node", cli_drain_main, "drain or undrain an orchestrator node"},
    {"workers", cli_fleet_main, "the tenant's workers"},
    {"worker", cli_drain_main, "drain a worker: stop taking, finish, exit"},
    {"queues", cli_fleet_main, "task queues: length, oldest age, arrival rate, workers called for"},
    {"whoami", cli_fleet_main, "the caller's user, role and tenant"},
    {"tenant", cli_tenant_main, "tenants: list, create, delete (superadmin)"},
    {"user", cli_user_main, "users: list, create (with their first token), delete"},
    {"token", cli_token_main, "create, list or revoke the caller's tokens"},
    {"audit", cli_audit_main, "the audit log: who did what, when, from where"},
    {"resources", cli_resources_main, "the tenant's plugin resources: push DIR, list"},
    {"solve", solver_cli_main, "offline: the layout for a template and a node count"},
    {"plan", planner_cli_main, "offline: the task DAG of an operation"},
    {"zk", cli_zk_main, "inspect the ZooKeeper tree (ls, get, tree)"},
    {"key", cli_key_main, "offline: derive a tenant's key from the fleet key, for its workers"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: drover COMMAND [ARGS...]\n\ncommands:\n");
    for (const struct command *c = commands; c->name; c++)
        fprintf(f, "  %-17s %s\n", c->name, c->summary);
    fprintf(f, "\nAPI commands read DROVER_URL and DROVER_TOKEN (or --url, --token) and print\n"
               "tables, or the API's JSON with --json. Exit status: 0 ok, 1 API error, 2 usage.\n"
               "`drover COMMAND` without arguments tells more about one.\n");
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
    /* Global flags may come before the command: move the command to the front. */
    int cmd = 1;
    while (cmd < argc && (strcmp(argv[cmd], "--json") == 0 || strncmp(argv[cmd], "--url", 5) == 0 ||
                          strncmp(argv[cmd], "--token", 7) == 0)) {
        if (strchr(argv[cmd], '=') == NULL && strcmp(argv[cmd], "--json") != 0)
            cmd++;
        cmd++;
    }
    if (cmd >= argc) {
        usage(stderr);
        return 2;
    }
    char *name = argv[cmd];
    memmove(&argv[2], &argv[1], (size_t)(cmd - 1) * sizeof(*argv));
    argv[1] = name;
    for (const struct command *c = commands; c->name; c++) {
        if (strcmp(c->name, argv[1]) != 0)
            continue;
        if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            /* `drover CMD --help`: every command answers an argument it does not
               take with its usage on stderr and status 2; asked for, that is
               help, so it goes to stdout with status 0. */
            fflush(stderr);
            dup2(STDOUT_FILENO, STDERR_FILENO);
            int rc = c->main(argc - 1, argv + 1);
            return rc == 2 ? 0 : rc;
        }
        return c->main(argc - 1, argv + 1);
    }
    fprintf(stderr, "drover: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return 2;
}
