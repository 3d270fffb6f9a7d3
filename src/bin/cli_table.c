/*
 * cli_table: the one command table of `drover` (see cli.h).
 *
 * Every word the command line takes is an entry here: a top-level command
 * with its main function, and its subcommands with their arguments, options
 * and one line of help. drover.c dispatches from this table; `--help` at
 * every level, the suggestion for a mistyped word, the bash and zsh
 * completion, the man page and docs/cli.md are generated from it (cli_doc.c).
 * A new command or option is added here first: the unit test
 * tests/cli/test_cli.c checks that each generated document names every entry
 * and that docs/cli.md is current.
 *
 * Pure data; no threads.
 */
#include <stddef.h>
#include <string.h>

#include "cli.h"
#include "planner.h"
#include "solver.h"

static const struct cli_cmd entity_subs[] = {
    {"list", "", "list them (name, description)", NULL, NULL, 0},
    {"get", "NAME", "one of them, as readable fields (JSON with --json)", NULL, NULL, 0},
    {"create", "FILE", "create one from a JSON file (- for standard input)", NULL, NULL, 0},
    {"replace", "NAME FILE", "replace one with a JSON file", NULL, NULL, 0},
    {"delete", "NAME", "delete one", NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd cluster_subs[] = {
    {"list", "", "the tenant's clusters", NULL, NULL, 0},
    {"get", "ID", "one cluster: status, nodes and their services, config", NULL, NULL, 0},
    {"create",
     "--name N --template T --nodes K [--provider P] [--hardwaretype H] [--imagetype I] "
     "[--services a,b] [--config FILE] [--dry-run|--yes]",
     "create a cluster from a template (--dry-run: the plan as a diff, nothing runs)", NULL, NULL,
     0},
    {"delete", "ID [--dry-run|--yes]", "delete a cluster and its machines", NULL, NULL, 0},
    {"expand", "ID --to N [--dry-run|--yes]",
     "grow the cluster to N nodes (--nodes K, deprecated, adds K)", NULL, NULL, 0},
    {"shrink", "ID --to N [--dry-run|--yes]",
     "shrink the cluster to N nodes (--nodes K, deprecated, removes K)", NULL, NULL, 0},
    {"addservices", "ID --services a,b [--dry-run|--yes]", "add services to the cluster", NULL,
     NULL, 0},
    {"removeservices", "ID --services a,b [--dry-run|--yes]", "remove services from the cluster",
     NULL, NULL, 0},
    {"configure",
     "ID --config FILE [--merge|--replace] [--restart] [--services a,b] [--dry-run|--yes]",
     "set the cluster's config (--merge: FILE is a merge patch over the current one)", NULL, NULL,
     0},
    {"start", "ID [--services a,b] [--dry-run|--yes]", "start the cluster's services", NULL, NULL,
     0},
    {"stop", "ID [--services a,b] [--dry-run|--yes]", "stop the cluster's services", NULL, NULL, 0},
    {"restart", "ID [--services a,b] [--dry-run|--yes]", "restart the cluster's services", NULL,
     NULL, 0},
    {"upgrade", "ID [--template-version V] [--dry-run|--yes]",
     "move the cluster to a newer template version", NULL, NULL, 0},
    {"recreate", "ID", "a failed create again, with the failed layout excluded", NULL, NULL, 0},
    {"snapshots", "ID [JOB]", "the cluster's state after each successful operation", NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd job_subs[] = {
    {"list", "[--cluster ID]", "jobs, newest first, with their duration", NULL, NULL, 0},
    {"get", "ID", "a job, its tasks, why each waits, and the task that failed first", NULL, NULL,
     0},
    {"watch", "ID [--interval SECONDS]",
     "follow a job until it ends (exit 0 when it succeeded, 1 otherwise)", NULL, NULL, 0},
    {"logs", "ID [TASK] [--attempt N] [--follow]",
     "the output (stdout and stderr tails) of each task's attempts; --follow prints each "
     "attempt as it ends, reading only what is new, until the job ends",
     NULL, NULL, 0},
    {"plan", "ID [--format text|json|dot]", "the job's task DAG, stage by stage", NULL, NULL, 0},
    {"cancel", "ID", "cancel a job: running tasks finish, then it rolls back", NULL, NULL, 0},
    {"pause", "ID", "pause a job: running tasks finish, nothing new starts", NULL, NULL, 0},
    {"resume", "ID", "resume a paused job", NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd node_subs[] = {
    {"drain", "ID [--wait SECONDS]",
     "take an orchestrator node out of the ring and hand its jobs over (--wait: until it owns "
     "nothing)",
     NULL, NULL, 0},
    {"undrain", "ID", "put a drained node back in the ring", NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd worker_subs[] = {
    {"drain", "ID", "a worker stops taking tasks, finishes or hands back, and exits", NULL, NULL,
     0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd tenant_subs[] = {
    {"list", "", "every tenant", NULL, NULL, 0},
    {"create", "NAME", "a new tenant", NULL, NULL, 0},
    {"delete", "NAME", "delete a tenant", NULL, NULL, 0},
    {"quota", "NAME [QUOTA=N|QUOTA=default ...]",
     "the tenant's quotas and use (setting them: superadmin)", NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd user_subs[] = {
    {"list", "[--tenant T]", "the tenant's users", NULL, NULL, 0},
    {"create", "NAME --role admin|user [--tenant T]", "a new user and their first token", NULL,
     NULL, 0},
    {"delete", "NAME [--tenant T]", "delete a user", NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd token_subs[] = {
    {"create", "[--expires-in SECONDS] [--label TEXT]", "a new token for the caller", NULL, NULL,
     0},
    {"list", "", "the caller's live tokens", NULL, NULL, 0},
    {"revoke", "ID", "revoke a token (ID: the 16 hex digits after drv_)", NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd resources_subs[] = {
    {"push", "DIR", "a new version of the tenant's plugin resources (admin)", NULL, NULL, 0},
    {"list", "", "the versions, newest first", NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd zk_subs[] = {
    {"ls", "PATH [--zk HOSTS] [--digest-file FILE]",
     "children of PATH (HOSTS defaults to $DROVER_ZK; FILE, or $DROVER_ZK_DIGEST_FILE: the "
     "operator's read-only identity)",
     NULL, NULL, 0},
    {"get", "PATH [--zk HOSTS] [--digest-file FILE]", "data of PATH", NULL, NULL, 0},
    {"tree", "PATH [--zk HOSTS] [--digest-file FILE]", "PATH and everything under it, with data",
     NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd key_subs[] = {
    {"derive", "TENANT --key-file FLEET_KEY_FILE",
     "the tenant's key (HKDF-SHA256 of the fleet key) for its workers' secrets.tenant_key_file",
     NULL, NULL, 0},
    {"zk-id", "DIGEST_FILE",
     "the ZooKeeper digest id of the credentials in DIGEST_FILE, for zookeeper.acl_readers", NULL,
     NULL, 0},
    {"worker-zk", "TENANT --key-file FLEET_KEY_FILE",
     "the tenant's workers' ZooKeeper credentials (user:password) for their zookeeper.digest_file",
     NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static const struct cli_cmd completion_subs[] = {
    {"bash", "", "bash completion: source <(drover completion bash)", NULL, NULL, 0},
    {"zsh", "", "zsh completion: drover completion zsh > \"${fpath[1]}/_drover\"", NULL, NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

const struct cli_cmd cli_commands[] = {
    {"providers", "", "providers", cli_entity_main, entity_subs, CLI_API},
    {"hardwaretypes", "", "hardware types", cli_entity_main, entity_subs, CLI_API},
    {"imagetypes", "", "image types", cli_entity_main, entity_subs, CLI_API},
    {"services", "", "services", cli_entity_main, entity_subs, CLI_API},
    {"clustertemplates", "", "cluster templates", cli_entity_main, entity_subs, CLI_API},
    {"partialtemplates", "", "partial templates", cli_entity_main, entity_subs, CLI_API},
    {"import", "DIR|FILE", "import a catalogue directory (providers/, ...) or JSON document",
     cli_import_main, NULL, CLI_API},
    {"export", "", "export the catalogue as one JSON document", cli_export_main, NULL, CLI_API},
    {"cluster", "", "clusters and their operations (expand, configure, restart, ...)",
     cli_cluster_main, cluster_subs, CLI_API},
    {"preview",
     "--name N --template T --nodes K [--provider P] [--hardwaretype H] [--imagetype I] "
     "[--services a,b] [--config FILE] [--format stages|json]",
     "solve and plan a cluster create without running anything", cli_preview_main, NULL, CLI_API},
    {"job", "", "jobs: progress, task output, plan, cancel, pause, resume", cli_job_main, job_subs,
     CLI_API},
    {"members", "", "orchestrator nodes, the ring and who owns which jobs", cli_fleet_main, NULL,
     CLI_API},
    {"node", "", "drain or undrain an orchestrator node (superadmin)", cli_drain_main, node_subs,
     CLI_API},
    {"workers", "", "the tenant's workers: host, classes, state, current task", cli_fleet_main,
     NULL, CLI_API},
    {"worker", "", "drain a worker: stop taking, finish, exit", cli_drain_main, worker_subs,
     CLI_API},
    {"queues", "", "task queues: length, oldest age, arrival rate, workers called for",
     cli_fleet_main, NULL, CLI_API},
    {"whoami", "", "the caller's user, role and tenant", cli_fleet_main, NULL, CLI_API},
    {"version", "", "the client's version, and the server's when one answers", cli_version_main,
     NULL, CLI_API},
    {"tenant", "", "tenants (superadmin)", cli_tenant_main, tenant_subs, CLI_API},
    {"user", "", "users (admin, superadmin)", cli_user_main, user_subs, CLI_API},
    {"token", "", "the caller's tokens", cli_token_main, token_subs, CLI_API},
    {"audit", "[--limit N] [--tenant T]",
     "the audit log, newest first: who did what, when, from "
     "where",
     cli_audit_main, NULL, CLI_API},
    {"resources", "", "the tenant's plugin resources", cli_resources_main, resources_subs, CLI_API},
    {"solve",
     "--catalog DIR --template NAME --nodes N [--services a,b] [--provider P] "
     "[--hardwaretype H] [--imagetype I] [--existing LAYOUT.json] [--exclude LAYOUT.json] "
     "[--json] [--per-node]",
     "offline: the layout for a template and a node count (docs/solver.md)", solver_cli_main, NULL,
     CLI_OWN_HELP},
    {"plan", "--catalog DIR ... (see drover plan --help)",
     "offline: the task DAG of an operation (docs/planner.md)", planner_cli_main, NULL,
     CLI_OWN_HELP},
    {"zk", "", "inspect the ZooKeeper tree", cli_zk_main, zk_subs, 0},
    {"key", "", "offline: a tenant's key for its workers, a ZooKeeper digest id", cli_key_main,
     key_subs, 0},
    {"completion", "", "shell completion generated from this table", cli_completion_main,
     completion_subs, 0},
    {"man", "[--format roff|markdown]", "the manual page drover(1), or docs/cli.md", cli_man_main,
     NULL, 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

const struct cli_cmd *cli_find(const struct cli_cmd *cmds, const char *name)
{
    for (const struct cli_cmd *c = cmds; c && c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}
