/* The gpuguard command: shared declarations of its subcommands. */
#ifndef GG_TOOLS_CLI_H
#define GG_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The usage line of each form of the command, said once: for its own --help,
 * for gpuguard --help, and checked against gpuguard(1) and the README
 * (tests/test-docs.c). */
#define GG_USAGE_RUN "gpuguard [OPTIONS] -- PROGRAM [ARGS...]"
#define GG_USAGE_SCAN "gpuguard scan [--wait] [--timeout SECONDS] [--signal SIG] PID"
#define GG_USAGE_REPORT \
	"gpuguard report [--junit FILE] [--sarif FILE] [--require-coverage] FILE.json..."
#define GG_USAGE_SYMBOLIZE "gpuguard symbolize [-d DIR]... [FILE]"
#define GG_USAGE_BISECT \
	"gpuguard bisect [--timeout SECONDS] [--redzone N] [--fill BYTE] -- PROGRAM [ARGS...]"

#define GG_USAGE_PRUNE "gpuguard prune-metrics [--dry-run] --older-than DURATION DIR"

/* The red zones of gpuguard -- PROGRAM unless --redzone or GPUGUARD_REDZONE
 * says otherwise: a sanitizer runner checks by default (a bare LD_PRELOAD
 * keeps the shim's default, 0). */
#define GG_CLI_REDZONE_DEFAULT "64"

/* Each subcommand gets argv after its name (argv[0] is the subcommand's name)
 * and returns the command's exit status. They print to stdout and stderr. */
int gg_cmd_run(int argc, char **argv);       /* gpuguard [options] -- PROGRAM ARGS */
int gg_cmd_scan(int argc, char **argv);      /* gpuguard scan [--wait] [--signal SIG] PID */
int gg_cmd_report(int argc, char **argv);    /* gpuguard report FILE.json... */
int gg_cmd_symbolize(int argc, char **argv); /* gpuguard symbolize [FILE] */
int gg_cmd_bisect(int argc, char **argv);    /* gpuguard bisect [options] -- PROGRAM ARGS */
int gg_cmd_prune(int argc, char **argv);     /* gpuguard prune-metrics --older-than D DIR */

/* A decimal or 0x hex number, digits only (the shim's gg_config_parse_u64). */
bool gg_cli_parse_u64(const char *s, uint64_t *out);

/* "1 kernel", "2 kernels": the word that goes with @n. */
const char *gg_cli_plural(uint64_t n, const char *one, const char *many);

/* "gpuguard: " + message on stderr. */
void gg_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* How the command prints a name it did not choose (a file's, a path given
 * to it, a name from a summary): one line, and never one that passes for
 * another. A backslash is doubled; the C0 controls (newline among them) and
 * DEL are written as \xNN, the C1 controls (U+0080..U+009F) as \u00NN, and
 * each byte that begins no valid UTF-8 sequence as \xNN (lower-case hex);
 * every other character as it is. */

/* The most bytes one character of a name becomes: \u00NN. */
#define GG_CLI_ESCAPE_MAX 6

/* The character at @s (@n > 0 bytes left) into @out (room for
 * GG_CLI_ESCAPE_MAX bytes, not NUL-terminated): the bytes written; *@taken
 * says how many of @s it took (at least 1). */
size_t gg_cli_escape_char(char *out, const char *s, size_t n, size_t *taken);

/* Room for a path of PATH_MAX bytes, each escaped, and the NUL. */
#define GG_CLI_NAME_MAX (4 * 4096 + 1)

/* The NUL-terminated @s escaped into @out (@cap bytes; what does not fit is
 * cut at a whole character and ends in "..."): returns @out, for printf's
 * "%s". */
const char *gg_cli_name(char *out, size_t cap, const char *s);

/* Room for one more item of @size bytes in *@items (*@cap of them, @len
 * used), doubling as needed. False when out of memory. */
bool gg_cli_grow(void **items, size_t *cap, size_t len, size_t size);

/* gpuguard symbolize: what the offsets of the ELF file at @path are from,
 * its first PT_LOAD's p_vaddr rounded down to a page; 0 when it has none or
 * is no ELF file (exposed for fuzz/elf.c). */
uint64_t gg_symbolize_load_bias(const char *path);

#endif
