/* The gpuguard command: shared declarations of its subcommands. */
#ifndef GG_CLI_H
#define GG_CLI_H

#include <stdbool.h>
#include <stddef.h>

/* Each subcommand gets argv after its name (argv[0] is the subcommand's name)
 * and returns the command's exit status. They print to stdout and stderr. */
int gg_cmd_run(int argc, char **argv);       /* gpuguard [options] -- PROGRAM ARGS */
int gg_cmd_scan(int argc, char **argv);      /* gpuguard scan [--signal SIG] PID */
int gg_cmd_report(int argc, char **argv);    /* gpuguard report FILE.json... */
int gg_cmd_symbolize(int argc, char **argv); /* gpuguard symbolize [FILE] */
int gg_cmd_bisect(int argc, char **argv);    /* gpuguard bisect [options] -- PROGRAM ARGS */

/* "gpuguard: " + message on stderr. */
void gg_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Room for one more item of @size bytes in *@items (*@cap of them, @len
 * used), doubling as needed. False when out of memory. */
bool gg_cli_grow(void **items, size_t *cap, size_t len, size_t size);

#endif
