/*
 * cli: the `drover` command line's subcommands.
 *
 * Each subcommand is a function taking (argc, argv) with argv[0] its own
 * name, returning the exit status: 0 ok, 1 error (message on stderr),
 * 2 usage error. drover.c holds the table that names them.
 */
#ifndef DROVER_CLI_H
#define DROVER_CLI_H

int cli_zk_main(int argc, char **argv);

#endif
