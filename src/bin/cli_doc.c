/*
 * cli_doc: what `drover` says about itself, all of it generated from the
 * command table (cli_table.c): the usage and every level's --help, the
 * suggestion for a mistyped command or subcommand, the bash and zsh
 * completion, the man page drover(1) and docs/cli.md.
 *
 * The generators write to a FILE so that a test can capture them
 * (open_memstream); their output depends on the table only, never on the
 * time or the build's commit, so docs/cli.md stays byte for byte what
 * `drover man --format markdown` prints. Single-threaded, like the rest of
 * the client.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_http.h"
#include "drover_version.h"
#include "xalloc.h"

static const char global_help[] =
    "API commands read DROVER_URL (default http://127.0.0.1:8080) and DROVER_TOKEN, or take --url "
    "URL and --token TOKEN anywhere on the line; https:// URLs are verified against the system's "
    "CAs or DROVER_CA_FILE. They print tables for people, times in ISO-8601 UTC (--local-time, or "
    "DROVER_LOCAL_TIME=1, for local time), and the API's JSON with --json.";

static const char exit_help[] =
    "Exit status: 0 ok; 1 an API error (the server's message, status, code and field on stderr), "
    "the server unreachable, or a job that did not succeed (job watch, job logs --follow); 2 a "
    "usage error (also `drover` alone, and an unknown command or subcommand, refused without "
    "asking a server).";

/* ---- suggestions ------------------------------------------------------------------------ */

size_t cli_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = xmalloc((lb + 1) * sizeof(*row));
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0]; /* row[i-1][j-1] */
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j]; /* row[i-1][j] */
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

const char *cli_suggest(const struct cli_cmd *cmds, const char *word)
{
    size_t limit = strlen(word) / 3;
    if (limit < 1)
        limit = 1;
    if (limit > 3)
        limit = 3;
    const char *best = NULL, *prefixed = NULL;
    size_t best_d = limit + 1;
    for (const struct cli_cmd *c = cmds; c && c->name; c++) {
        size_t d = cli_edit_distance(word, c->name);
        if (d < best_d) {
            best_d = d;
            best = c->name;
        }
        if (!prefixed && *word && strncmp(c->name, word, strlen(word)) == 0)
            prefixed = c->name;
    }
    return best ? best : prefixed;
}

/* ---- help ---------------------------------------------------------------------------------- */

/* text wrapped at 78 columns, each line indented by indent spaces. */
static void wrap(FILE *f, const char *text, int indent)
{
    const char *p = text;
    while (*p) {
        size_t room = (size_t)(78 - indent), len = strlen(p), n = len;
        if (len > room) {
            n = room;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0) /* one word longer than the line */
                n = strcspn(p, " ");
        }
        fprintf(f, "%*s%.*s\n", indent, "", (int)n, p);
        p += n;
        while (*p == ' ')
            p++;
    }
}

void cli_print_usage(FILE *f)
{
    fprintf(f, "usage: drover COMMAND [SUBCOMMAND] [ARGS...]\n"
               "       drover COMMAND --help      drover --version\n\ncommands:\n");
    for (const struct cli_cmd *c = cli_commands; c->name; c++) {
        fprintf(f, "  %-17s %s\n", c->name, c->help);
    }
    fprintf(f, "\n");
    wrap(f, global_help, 0);
    fprintf(f, "\n");
    wrap(f, exit_help, 0);
}

void cli_print_help(FILE *f, const struct cli_cmd *cmd, const struct cli_cmd *sub)
{
    if (sub) {
        fprintf(f, "usage: drover %s %s%s%s\n\n", cmd->name, sub->name, *sub->args ? " " : "",
                sub->args);
        wrap(f, sub->help, 0);
    } else if (cmd->subs) {
        fprintf(f, "usage: drover %s SUBCOMMAND [ARGS...]\n\n", cmd->name);
        wrap(f, cmd->help, 0);
        fprintf(f, "\nsubcommands:\n");
        for (const struct cli_cmd *s = cmd->subs; s->name; s++) {
            fprintf(f, "  drover %s %s%s%s\n", cmd->name, s->name, *s->args ? " " : "", s->args);
            wrap(f, s->help, 6);
        }
    } else {
        fprintf(f, "usage: drover %s%s%s\n\n", cmd->name, *cmd->args ? " " : "", cmd->args);
        wrap(f, cmd->help, 0);
    }
    if (cmd->flags & CLI_API)
        fprintf(f, "\noptions: --json, --url URL, --token TOKEN, --local-time\n");
}

int cli_usage(const char *cmd, const char *sub)
{
    const struct cli_cmd *c = cli_find(cli_commands, cmd);
    if (!c) {
        cli_print_usage(stderr);
        return 2;
    }
    const struct cli_cmd *s = sub ? cli_find(c->subs, sub) : NULL;
    cli_print_help(stderr, c, s);
    return 2;
}

/* ---- completion ---------------------------------------------------------------------------- */

/* The "--word" options in args, each once, separated by spaces. */
static void options_of(FILE *f, const char *args, unsigned flags)
{
    const char *p = args;
    int first = 1;
    while ((p = strstr(p, "--"))) {
        size_t n = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
        if (n) {
            char opt[64];
            snprintf(opt, sizeof(opt), "--%.*s", (int)n, p + 2);
            /* once: not earlier in args */
            const char *seen = strstr(args, opt);
            if (seen == p) {
                fprintf(f, "%s%s", first ? "" : " ", opt);
                first = 0;
            }
        }
        p += 2 + n;
    }
    fprintf(f, "%s--help", first ? "" : " ");
    if (flags & CLI_API)
        fprintf(f, " --json --url --token --local-time");
}

void cli_gen_bash(FILE *f)
{
    fprintf(f, "# bash completion for drover, generated by `drover completion bash` from its\n"
               "# command table (src/bin/cli_table.c). Use: source <(drover completion bash)\n"
               "_drover() {\n"
               "  local cur=${COMP_WORDS[COMP_CWORD]} words=\"\"\n"
               "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
               "    words=\"--help --version");
    for (const struct cli_cmd *c = cli_commands; c->name; c++)
        fprintf(f, " %s", c->name);
    fprintf(f, "\"\n  else\n    case \"${COMP_WORDS[1]}\" in\n");
    for (const struct cli_cmd *c = cli_commands; c->name; c++) {
        fprintf(f, "    %s)\n", c->name);
        if (!c->subs) {
            fprintf(f, "      words=\"");
            options_of(f, c->args, c->flags);
            fprintf(f, "\"\n      ;;\n");
            continue;
        }
        fprintf(f, "      if [ \"$COMP_CWORD\" -eq 2 ]; then\n        words=\"--help");
        for (const struct cli_cmd *s = c->subs; s->name; s++)
            fprintf(f, " %s", s->name);
        fprintf(f, "\"\n      else\n        case \"${COMP_WORDS[2]}\" in\n");
        for (const struct cli_cmd *s = c->subs; s->name; s++) {
            fprintf(f, "        %s) words=\"", s->name);
            options_of(f, s->args, c->flags);
            fprintf(f, "\" ;;\n");
        }
        fprintf(f, "        esac\n      fi\n      ;;\n");
    }
    fprintf(f, "    esac\n  fi\n"
               "  mapfile -t COMPREPLY < <(compgen -W \"$words\" -- \"$cur\")\n"
               "}\n"
               "complete -o default -F _drover drover\n");
}

/* s as the inside of a zsh single-quoted _describe item: ' and : escaped. */
static void zsh_quoted(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else if (*s == ':')
            fputs("\\:", f);
        else
            fputc(*s, f);
    }
}

void cli_gen_zsh(FILE *f)
{
    fprintf(f, "#compdef drover\n"
               "# zsh completion for drover, generated by `drover completion zsh` from its\n"
               "# command table (src/bin/cli_table.c). Use: drover completion zsh > "
               "\"${fpath[1]}/_drover\"\n"
               "_drover() {\n"
               "  local -a cmds subs opts\n"
               "  cmds=(\n");
    for (const struct cli_cmd *c = cli_commands; c->name; c++) {
        fprintf(f, "    '%s:", c->name);
        zsh_quoted(f, c->help);
        fprintf(f, "'\n");
    }
    fprintf(f, "  )\n"
               "  if (( CURRENT == 2 )); then\n"
               "    _describe -t commands 'drover command' cmds\n"
               "    return\n"
               "  fi\n"
               "  case $words[2] in\n");
    for (const struct cli_cmd *c = cli_commands; c->name; c++) {
        fprintf(f, "  %s)\n", c->name);
        if (!c->subs) {
            fprintf(f, "    opts=(");
            options_of(f, c->args, c->flags);
            fprintf(f, ")\n    ;;\n");
            continue;
        }
        fprintf(f, "    if (( CURRENT == 3 )); then\n      subs=(\n");
        for (const struct cli_cmd *s = c->subs; s->name; s++) {
            fprintf(f, "        '%s:", s->name);
            zsh_quoted(f, s->help);
            fprintf(f, "'\n");
        }
        fprintf(f,
                "      )\n      _describe -t subcommands '%s subcommand' subs\n      return\n"
                "    fi\n    case $words[3] in\n",
                c->name);
        for (const struct cli_cmd *s = c->subs; s->name; s++) {
            fprintf(f, "    %s) opts=(", s->name);
            options_of(f, s->args, c->flags);
            fprintf(f, ") ;;\n");
        }
        fprintf(f, "    esac\n    ;;\n");
    }
    fprintf(f, "  esac\n"
               "  compadd -- $opts\n"
               "  _files\n"
               "}\n"
               "_drover \"$@\"\n");
}

/* ---- the man page and docs/cli.md -------------------------------------------------------------
 */

/* s for roff: backslashes doubled, '-' as \-, a leading '.' or '\'' guarded. */
static void roff(FILE *f, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", f);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
    }
}

static void man_entry(FILE *f, const char *cmd, const char *sub, const char *args, const char *help)
{
    fprintf(f, ".TP\n.B drover %s%s%s", cmd, sub ? " " : "", sub ? sub : "");
    if (*args) {
        fputs(" ", f);
        roff(f, args);
    }
    fputs("\n", f);
    roff(f, help);
    fputs("\n", f);
}

void cli_gen_man(FILE *f)
{
    fprintf(f,
            ".\\\" drover(1), generated by `drover man` from src/bin/cli_table.c.\n"
            ".TH DROVER 1 \"\" \"drover %s\" \"Drover manual\"\n"
            ".SH NAME\ndrover \\- the command line of the Drover cluster orchestrator\n"
            ".SH SYNOPSIS\n.B drover\n.I COMMAND\n[\\fISUBCOMMAND\\fR] "
            "[\\fIARGS\\fR...]\n.br\n.B drover\n.I COMMAND\n.B \\-\\-help\n"
            ".SH DESCRIPTION\n",
            DROVER_VERSION);
    roff(f, global_help);
    fputs("\n.SH COMMANDS\n", f);
    for (const struct cli_cmd *c = cli_commands; c->name; c++) {
        if (!c->subs) {
            man_entry(f, c->name, NULL, c->args, c->help);
            continue;
        }
        for (const struct cli_cmd *s = c->subs; s->name; s++) {
            char *help = xasprintf("%s: %s", c->help, s->help);
            man_entry(f, c->name, s->name, s->args, help);
            free(help);
        }
    }
    fputs(".SH ENVIRONMENT\n.TP\n.B DROVER_URL\nthe API's address "
          "(default http://127.0.0.1:8080)\n.TP\n.B DROVER_TOKEN\nthe caller's token\n"
          ".TP\n.B DROVER_CA_FILE\nPEM file of the CA that signed the server's certificate\n"
          ".TP\n.B DROVER_LOCAL_TIME\nset: times in local time rather than UTC\n"
          ".TP\n.B DROVER_ZK\nthe ZooKeeper connection string of \\fBdrover zk\\fR\n"
          ".SH EXIT STATUS\n",
          f);
    roff(f, exit_help);
    fputs("\n.SH SEE ALSO\n.BR droverd (8),\n.BR drover-worker (8);\n"
          "docs/quickstart.md, docs/cli.md, docs/api.md, docs/troubleshooting.md\n",
          f);
}

/* s inside a Markdown table cell's code span: '|' escaped. */
static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else
            fputc(*s, f);
    }
}

void cli_gen_markdown(FILE *f)
{
    fprintf(f,
            "# The `drover` command line\n\n"
            "<!-- Generated by `drover man --format markdown` from the command table in\n"
            "src/bin/cli_table.c: edit the table, then `build/src/bin/drover man --format "
            "markdown > docs/cli.md`.\n"
            "The unit test test_cli fails while this page and the table disagree. -->\n\n"
            "`drover COMMAND [SUBCOMMAND] [ARGS...]`. `drover --help`, `drover COMMAND "
            "--help` and `drover COMMAND SUBCOMMAND --help` answer without a server; "
            "`drover --version` prints the client's version, `drover version` the server's "
            "too. A mistyped command or subcommand is refused with the closest name. "
            "Completion: `source <(drover completion bash)`, or `drover completion zsh > "
            "\"${fpath[1]}/_drover\"`; the man page: `drover man > drover.1`. The build writes all "
            "three "
            "under `build/share/` (`man/man1/drover.1`, `bash-completion/completions/drover`, "
            "`zsh/site-functions/_drover`).\n\n"
            "%s\n\n%s\n\n## Commands\n\n| command | what it does |\n| --- | --- |\n",
            global_help, exit_help);
    for (const struct cli_cmd *c = cli_commands; c->name; c++) {
        if (!c->subs) {
            fprintf(f, "| `drover %s%s", c->name, *c->args ? " " : "");
            md_cell(f, c->args);
            fprintf(f, "` | ");
            md_cell(f, c->help);
            fprintf(f, " |\n");
            continue;
        }
        for (const struct cli_cmd *s = c->subs; s->name; s++) {
            fprintf(f, "| `drover %s %s%s", c->name, s->name, *s->args ? " " : "");
            md_cell(f, s->args);
            fprintf(f, "` | %s: ", c->help);
            md_cell(f, s->help);
            fprintf(f, " |\n");
        }
    }
}

/* ---- the commands that print them -------------------------------------------------------------
 */

int cli_completion_main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "bash") == 0)
        cli_gen_bash(stdout);
    else if (argc == 2 && strcmp(argv[1], "zsh") == 0)
        cli_gen_zsh(stdout);
    else
        return cli_usage("completion", NULL);
    return 0;
}

int cli_man_main(int argc, char **argv)
{
    if (argc == 1 ||
        (argc == 3 && strcmp(argv[1], "--format") == 0 && strcmp(argv[2], "roff") == 0))
        cli_gen_man(stdout);
    else if (argc == 3 && strcmp(argv[1], "--format") == 0 && strcmp(argv[2], "markdown") == 0)
        cli_gen_markdown(stdout);
    else
        return cli_usage("man", NULL);
    return 0;
}

int cli_version_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    bool client_only = argc == 2 && strcmp(argv[1], "--client") == 0;
    if (argc != 1 && !client_only)
        return cli_usage("version", NULL);
    json_t *out = NULL;
    if (o.json && client_only) {
        printf("{\"client\": {\"version\": \"%s\", \"commit\": \"%s\"}}\n", DROVER_VERSION,
               DROVER_GIT_COMMIT);
        return 0;
    }
    if (!o.json)
        printf("client: drover %s\n", DROVER_VERSION_FULL);
    if (client_only)
        return 0;
    fflush(stdout);
    int st = cli_call(&o, "GET", "/v1/version", NULL, &out, NULL);
    if (st < 0)
        return 1;
    if (st >= 400) {
        int rc = cli_api_error(st, out);
        json_decref(out);
        return rc;
    }
    if (o.json) {
        json_t *all = json_pack("{s:{s:s, s:s}, s:O}", "client", "version", DROVER_VERSION,
                                "commit", DROVER_GIT_COMMIT, "server", out);
        char *s = json_dumps(all, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("%s\n", s);
        free(s);
        json_decref(all);
    } else {
        const char *v = json_string_value(json_object_get(out, "version"));
        const char *c = json_string_value(json_object_get(out, "commit"));
        printf("server: droverd %s%s%s%s (record format %lld)\n", v ? v : "?",
               c && *c ? " (commit " : "", c && *c ? c : "", c && *c ? ")" : "",
               (long long)json_integer_value(json_object_get(out, "format")));
    }
    json_decref(out);
    return 0;
}
