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
