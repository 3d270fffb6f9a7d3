/*
 * Unit tests of the command line's table and what is generated from it
 * (src/bin/cli_table.c, cli_doc.c, cli_fmt.c): the suggestion for a mistyped
 * word, the table's own rules, every command and subcommand named in the bash
 * and zsh completion, the man page and docs/cli.md, docs/cli.md current, and
 * the time and duration formats, the readable view of an object and the
 * table's time columns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_int.h"

static void test_edit_distance(void **state)
{
    assert_int_equal(cli_edit_distance("", ""), 0);
    assert_int_equal(cli_edit_distance("abc", ""), 3);
    assert_int_equal(cli_edit_distance("", "abc"), 3);
    assert_int_equal(cli_edit_distance("delete", "delete"), 0);
    assert_int_equal(cli_edit_distance("dleete", "delete"), 2);
    assert_int_equal(cli_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(cli_edit_distance("clustr", "cluster"), 1);
}

static void test_suggest(void **state)
{
    const struct cli_cmd *cluster = cli_find(cli_commands, "cluster");
    assert_non_null(cluster);
    assert_string_equal(cli_suggest(cli_commands, "clustr"), "cluster");
    assert_string_equal(cli_suggest(cli_commands, "wokers"), "workers");
    assert_string_equal(cli_suggest(cluster->subs, "dleete"), "delete");
    assert_string_equal(cli_suggest(cluster->subs, "exapnd"), "expand");
    assert_string_equal(cli_suggest(cluster->subs, "addserv"), "addservices"); /* a prefix */
    assert_null(cli_suggest(cli_commands, "nonsense"));
    assert_null(cli_suggest(cluster->subs, "x"));
}

/* The table's rules: unique names, a main for each command, help everywhere. */
static void test_table(void **state)
{
    for (const struct cli_cmd *c = cli_commands; c->name; c++) {
        assert_non_null(c->main);
        assert_non_null(c->args);
        assert_true(*c->help);
        assert_ptr_equal(cli_find(cli_commands, c->name), c);
        for (const struct cli_cmd *s = c->subs; s && s->name; s++) {
            assert_non_null(s->args);
            assert_true(*s->help);
            assert_ptr_equal(cli_find(c->subs, s->name), s);
            assert_null(s->main);
        }
    }
}

static char *capture(void (*gen)(FILE *))
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    gen(f);
    fclose(f);
    return buf;
}

/* needle appears in hay as a whole word (not inside a longer name). */
static int has_word(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) {
        char before = p == hay ? ' ' : p[-1], after = p[n];
        int word =
            (before == ' ' || before == '\'' || before == '(' || before == '\n' || before == '`') &&
            (after == ' ' || after == ')' || after == ':' || after == '"' || after == '\n' ||
             after == '`');
        if (word)
            return 1;
    }
    return 0;
}

static void check_lists_all(const char *what, const char *text, int subs_as_pairs)
{
    for (const struct cli_cmd *c = cli_commands; c->name; c++) {
        if (!has_word(text, c->name))
            fail_msg("%s does not name the command %s", what, c->name);
        for (const struct cli_cmd *s = c->subs; s && s->name; s++) {
            char pair[128];
            snprintf(pair, sizeof(pair), "%s %s", c->name, s->name);
            int ok = subs_as_pairs ? strstr(text, pair) != NULL : has_word(text, s->name);
            if (!ok)
                fail_msg("%s does not name %s", what, pair);
            /* Every option of the synopsis is offered or shown. */
            for (const char *p = strstr(s->args, "--"); p; p = strstr(p + 2, "--")) {
                char opt[64];
                snprintf(opt, sizeof(opt), "%.*s", (int)strspn(p, "-abcdefghijklmnopqrstuvwxyz"),
                         p);
                char roff[160] = "";
                for (const char *q = opt; *q; q++)
                    strcat(roff, *q == '-' ? "\\-" : (char[]){*q, 0});
                if (!strstr(text, opt) && !strstr(text, roff))
                    fail_msg("%s does not name %s's option %s", what, pair, opt);
            }
        }
    }
}

static void test_generated_list_every_command(void **state)
{
    char *bash = capture(cli_gen_bash), *zsh = capture(cli_gen_zsh), *man = capture(cli_gen_man),
         *md = capture(cli_gen_markdown);
    check_lists_all("bash completion", bash, 0);
    check_lists_all("zsh completion", zsh, 0);
    check_lists_all("man page", man, 1);
    check_lists_all("docs/cli.md", md, 1);
    assert_non_null(strstr(bash, "complete -o default -F _drover drover"));
    assert_non_null(strstr(zsh, "#compdef drover"));
    assert_non_null(strstr(man, ".TH DROVER 1"));
    free(bash);
    free(zsh);
    free(man);
    free(md);
}

/* docs/cli.md is what the table generates today. */
static void test_docs_current(void **state)
{
    char *want = capture(cli_gen_markdown);
    char *path = NULL;
    assert_true(asprintf(&path, "%s/docs/cli.md", DROVER_SOURCE_DIR) > 0);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s is missing: build/src/bin/drover man --format markdown > docs/cli.md", path);
    char *have = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&have, &n);
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, got, m);
    fclose(f);
    fclose(m);
    if (strcmp(have, want) != 0)
        fail_msg("docs/cli.md is not current: build/src/bin/drover man --format markdown > "
                 "docs/cli.md");
    free(have);
    free(want);
    free(path);
}

static void test_time(void **state)
{
    char b[64];
    cli_fmt_set_local(false);
    assert_string_equal(cli_fmt_time("2026-11-26 19:39:58.123456+00", b, sizeof(b)),
                        "2026-11-26T19:39:58Z");
    assert_string_equal(cli_fmt_time("2026-11-26 20:39:58+01", b, sizeof(b)),
                        "2026-11-26T19:39:58Z");
    assert_string_equal(cli_fmt_time("2026-11-26 14:09:58.5-05:30", b, sizeof(b)),
                        "2026-11-26T19:39:58Z");
    assert_string_equal(cli_fmt_time("2026-11-26T19:39:58Z", b, sizeof(b)), "2026-11-26T19:39:58Z");
    assert_string_equal(cli_fmt_time("yesterday", b, sizeof(b)), "yesterday");
    assert_string_equal(cli_fmt_time(NULL, b, sizeof(b)), "-");
    assert_int_equal(cli_parse_time("1970-01-01 00:01:00+00"), 60);
    assert_int_equal(cli_parse_time("2026-13-01 00:00:00+00"), -1);
    setenv("TZ", "UTC", 1);
    cli_fmt_set_local(true);
    assert_string_equal(cli_fmt_time("2026-11-26 19:39:58+00", b, sizeof(b)),
                        "2026-11-26T19:39:58+00:00");
    cli_fmt_set_local(false);
}

static void test_duration(void **state)
{
    char b[32];
    assert_string_equal(cli_fmt_duration(0, b, sizeof(b)), "0s");
    assert_string_equal(cli_fmt_duration(45, b, sizeof(b)), "45s");
    assert_string_equal(cli_fmt_duration(185, b, sizeof(b)), "3m05s");
    assert_string_equal(cli_fmt_duration(7440, b, sizeof(b)), "2h04m");
    assert_string_equal(cli_fmt_duration(266400, b, sizeof(b)), "3d02h");
    assert_string_equal(cli_fmt_duration(-5, b, sizeof(b)), "0s");
}

/* What fn printed on stdout (stdout sent to a temporary file meanwhile). */
static char *stdout_of(void (*fn)(const json_t *), const json_t *arg)
{
    fflush(stdout);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(STDOUT_FILENO);
    dup2(fileno(tmp), STDOUT_FILENO);
    fn(arg);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    long n = ftell(tmp);
    rewind(tmp);
    char *buf = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, tmp), (size_t)n);
    fclose(tmp);
    return buf;
}

static void show_object0(const json_t *o)
{
    cli__show_object(o, 0);
}

static void test_show_object(void **state)
{
    cli_fmt_set_local(false);
    json_t *o = json_pack("{s:s, s:i, s:[s,s], s:{s:s, s:{s:b}}, s:[{s:s}], s:s, s:n, s:[]}",
                          "name", "fake", "size", 3, "services", "a", "b", "provisioner", "region",
                          "test", "nested", "on", 1, "items", "id", "x", "created_at",
                          "2026-11-26 19:39:58.5+00", "gone", "none");
    char *out = stdout_of(show_object0, o);
    assert_string_equal(out, "name: fake\n"
                             "size: 3\n"
                             "services: a, b\n"
                             "provisioner:\n"
                             "  region: test\n"
                             "  nested:\n"
                             "    on: true\n"
                             "items:\n"
                             "  - [0]\n"
                             "    id: x\n"
                             "created_at: 2026-11-26T19:39:58Z\n"
                             "gone: -\n"
                             "none: (none)\n");
    free(out);
    json_decref(o);
}

static void table0(const json_t *rows)
{
    static const char *const cols[] = {"id", "taken_at", NULL};
    cli__table(rows, cols);
}

static void test_table_times(void **state)
{
    cli_fmt_set_local(false);
    json_t *rows =
        json_pack("[{s:s, s:s}, {s:i}]", "id", "1", "taken_at", "2026-11-26 20:39:58+01", "id", 22);
    char *out = stdout_of(table0, rows);
    assert_string_equal(out, "ID  TAKEN_AT\n"
                             "1   2026-11-26T19:39:58Z\n"
                             "22  -\n");
    free(out);
    json_decref(rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edit_distance), cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_table),         cmocka_unit_test(test_generated_list_every_command),
        cmocka_unit_test(test_docs_current),  cmocka_unit_test(test_time),
        cmocka_unit_test(test_duration),      cmocka_unit_test(test_show_object),
        cmocka_unit_test(test_table_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
