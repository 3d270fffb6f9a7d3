/*
 * cli: the `drover` command line's subcommands, and the one table it
 * dispatches from.
 *
 * Each subcommand is a function taking (argc, argv) with argv[0] its own
 * name, returning the exit status: 0 ok, 1 error (message on stderr),
 * 2 usage error. cli_table.c holds the command table (tmux-style: one entry
 * per command and per subcommand, with its arguments, options and help);
 * drover.c dispatches from it, and the help, the suggestions for a mistyped
 * word, the bash and zsh completion, the man page and docs/cli.md are all
 * generated from it (cli_doc.c), so they cannot disagree.
 */
#ifndef DROVER_CLI_H
#define DROVER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- the command table (cli_table.c) ------------------------------------------------------ */

enum {
    CLI_API = 1 << 0,      /* speaks the API: takes --url, --token and --json */
    CLI_OWN_HELP = 1 << 1, /* the command's main answers --help itself (solve, plan) */
};

/*
 * One command (top level) or subcommand (in a command's subs). args is the
 * synopsis after the words, options included ("ID [--nodes K]"); every
 * "--word" in it is an option the completion offers. help is one line, no
 * full stop. A top-level entry has main; its subs (NULL when it takes none)
 * end with a NULL name.
 */
struct cli_cmd {
    const char *name;
    const char *args;
    const char *help;
    int (*main)(int argc, char **argv);
    const struct cli_cmd *subs;
    unsigned flags;
};

/* The table: top-level commands in the order `drover --help` lists them, NULL name last. */
extern const struct cli_cmd cli_commands[];

/* The entry named name among cmds (a NULL-name-terminated array), or NULL. */
const struct cli_cmd *cli_find(const struct cli_cmd *cmds, const char *name);

/* ---- help, suggestions and generated documents (cli_doc.c) --------------------------------- */

/* Edit distance (Levenshtein: insert, delete, substitute) between a and b. */
size_t cli_edit_distance(const char *a, const char *b);

/*
 * The name among cmds closest to word: the one with the smallest edit
 * distance when that is at most a third of word's length (at least 1, at most
 * 3), else the one word is a prefix of; NULL when none is close.
 */
const char *cli_suggest(const struct cli_cmd *cmds, const char *word);

/* `drover --help`: every command with its help line. */
void cli_print_usage(FILE *f);

/* Help for one command, or for one of its subcommands when sub is not NULL. */
void cli_print_help(FILE *f, const struct cli_cmd *cmd, const struct cli_cmd *sub);

/* Print cmd's help (with sub, that subcommand's) on stderr and return 2: a usage error. */
int cli_usage(const char *cmd, const char *sub);

/* Generated documents: bash and zsh completion, the man page (roff), docs/cli.md. */
void cli_gen_bash(FILE *f);
void cli_gen_zsh(FILE *f);
void cli_gen_man(FILE *f);
void cli_gen_markdown(FILE *f);

/* `drover completion bash|zsh`, `drover man [--format roff|markdown]`, `drover version`. */
int cli_completion_main(int argc, char **argv);
int cli_man_main(int argc, char **argv);
int cli_version_main(int argc, char **argv);

/* ---- formatting for people (cli_fmt.c) ------------------------------------------------------ */

/* Times print in UTC unless DROVER_LOCAL_TIME is set (`--local-time` sets it). */
void cli_fmt_set_local(bool local);

/*
 * A timestamp as the API gives it (PostgreSQL text, "2026-11-26 19:39:58.12+00",
 * or ISO-8601) as ISO-8601 to the second: "2026-11-26T19:39:58Z", or local
 * time with its offset. Returns buf; an unparsable text is copied as is.
 */
const char *cli_fmt_time(const char *text, char *buf, size_t n);

/* Seconds since the epoch of such a text; -1 when it does not parse. */
int64_t cli_parse_time(const char *text);

/* A duration in seconds as "45s", "3m05s", "2h04m", "3d02h". Returns buf. */
const char *cli_fmt_duration(int64_t secs, char *buf, size_t n);

/* ---- the subcommands --------------------------------------------------------------------- */

int cli_zk_main(int argc, char **argv);

/* cli_api.c: the HTTP API's commands (argv[0] names the entity kind for cli_entity_main,
   the view for cli_fleet_main). */
int cli_entity_main(int argc, char **argv);
int cli_import_main(int argc, char **argv);
int cli_export_main(int argc, char **argv);
int cli_cluster_main(int argc, char **argv);
int cli_preview_main(int argc, char **argv);
int cli_job_main(int argc, char **argv);
int cli_fleet_main(int argc, char **argv);
/* drover node drain|undrain ID, drover worker drain ID (cli_api.c). */
int cli_drain_main(int argc, char **argv);
int cli_tenant_main(int argc, char **argv);
int cli_user_main(int argc, char **argv);
int cli_token_main(int argc, char **argv);
int cli_audit_main(int argc, char **argv);
/* cli_resources.c: drover resources push DIR | list. */
int cli_resources_main(int argc, char **argv);
/* cli_key.c: drover key derive TENANT --key-file FLEET (offline). */
int cli_key_main(int argc, char **argv);

#endif
