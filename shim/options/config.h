/* The options table: every GPUGUARD_* variable, its default, its parser,
 * what it accepts, its gpuguard command-line flag and one line of help,
 * declared once in config.def, for the shim, the command and the docs
 * (README, "Settings"; tests/test-config.c pins the parsers). Pure: the parsers
 * say what was wrong and print nothing; start-up reports it. */
#ifndef GG_SHIM_OPTIONS_CONFIG_H
#define GG_SHIM_OPTIONS_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define GG_CONFIG_STR_MAX 1024

/* GPUGUARD_SKIP_SYMBOLS's default: the names of the CUDA runtime's code when
 * it is linked into the program (nvcc's default), shared with the gpuguard
 * command, whose symbolize skips the same frames. In the order: the public
 * API (C names, and the C++ templates of cuda_runtime.h in the global
 * namespace, mangled "_Z<length>cuda..."); the implementation's own names,
 * reserved identifiers with "__cuda" ("__cudaLaunchKernel",
 * "__sti____cudaRegisterAll") or "__nv_" (the registration code nvcc writes
 * into each file, "__nv_cudaEntityRegisterCallback"); the launch stubs nvcc
 * writes for each kernel ("__device_stub__Z6kernelPf"); the runtime's
 * internal functions, "libcudart_static_<sha1>" in CUDA 13 and the cudart::
 * namespace before it. A program's own names are never reserved ones. */
#define GG_SKIP_SYMBOLS_DEFAULT                                                 \
	"cuda[A-Z]*,_Z[0-9]cuda[A-Z]*,_Z[0-9][0-9]cuda[A-Z]*,*__cuda*,*__nv_*," \
	"*__device_stub_*,libcudart_static_*,_ZN6cudart*"

/* The fields come from config.def, the scalars first in its order, then the
 * strings: a load zeroes the fields before them and gives each string its
 * value or default, never touching the rest of the 19 k (config.c,
 * load_into). Units and ranges are config.def's ACCEPTS. */
struct gg_config {
#define GG_FIELD(type, field) type field;
#define GG_FIELD_SET(type, field, set) \
	bool set;                      \
	type field;
#define GG_RANGE_SET(type, lo, hi, set) \
	bool set;                       \
	type lo, hi; /* [lo, hi) */
#define GG_STRING(field, cap)
#define GG_OPTION(name, store, ...) store
#include "options/config.def"
#undef GG_STRING
#undef GG_FIELD
#undef GG_FIELD_SET
#undef GG_RANGE_SET
#define GG_FIELD(type, field)
#define GG_FIELD_SET(type, field, set)
#define GG_RANGE_SET(type, lo, hi, set)
#define GG_STRING(field, cap) char field[cap]; /* "" = none (GPUGUARD_LOG: stderr) */
#include "options/config.def"
#undef GG_OPTION
#undef GG_STRING
#undef GG_FIELD
#undef GG_FIELD_SET
#undef GG_RANGE_SET
};

/* The strings' bytes, the struct's tail (config.c asserts it). */
enum {
#define GG_FIELD(type, field)
#define GG_FIELD_SET(type, field, set)
#define GG_RANGE_SET(type, lo, hi, set)
#define GG_STRING(field, cap) +(cap)
#define GG_OPTION(name, store, ...) store
	GG_CONFIG_STRINGS_SIZE = 0
#include "options/config.def"
#undef GG_OPTION
#undef GG_STRING
#undef GG_FIELD
#undef GG_FIELD_SET
#undef GG_RANGE_SET
};
#define GG_CONFIG_STRINGS_START (sizeof(struct gg_config) - (size_t)GG_CONFIG_STRINGS_SIZE)

/* One variable of the table. */
struct gg_option {
	const char *name;    /* GPUGUARD_... */
	const char *flag;    /* the gpuguard command's --flag; NULL: none */
	const char *alias;   /* a second spelling of @flag; NULL: none */
	const char *metavar; /* the flag's value in --help ("N"); NULL: a switch */
	const char *sets;    /* a switch: the value its flag sets */
	const char *def;     /* the default, parsed like a value; NULL: unset */
	const char *accepts; /* what a valid value is, for messages */
	const char *help;    /* one line, for --help */
	int kind;            /* the parser (config.c) */
	size_t off, set_off; /* the field in struct gg_config, and its "was set" flag */
};

/* The whole table, in the order of --help and gpuguard(1). */
const struct gg_option *gg_config_options(size_t *n);

/* The option named @name (GPUGUARD_...), or NULL. */
const struct gg_option *gg_config_option(const char *name);

/* A boolean as the shim reads one (1, true, yes, on; 0, false, no, off, any
 * case) into *@out: 0, or -EINVAL. */
int gg_config_parse_bool(const char *s, bool *out);

/* Whether @value is one the shim takes for @o whole (a list with one bad
 * item is not): 0, or -EINVAL / -ERANGE / -ENAMETOOLONG with *@why saying
 * what was wrong in a few words when that is more than "not valid" (a static
 * string, or NULL). */
int gg_config_check(const struct gg_option *o, const char *value, const char **why);

/* A value gg_config_load() could not use (it keeps the default). */
struct gg_config_problem {
	const char *name;    /* the variable */
	const char *value;   /* the value as given */
	const char *why;     /* what was wrong (may be NULL) */
	const char *accepts; /* what is accepted */
};

/* Only GPUGUARD_DISABLE, without reading anything else: a disabled shim writes nothing. */
bool gg_config_disabled_in_env(void);

/* Fill @cfg from the environment; values it cannot use keep their default
 * and are kept for gg_config_problems(). */
void gg_config_load(struct gg_config *cfg);

/* The same into the process-wide configuration, which it returns (what
 * gg_config() gives after): the shim's set-up, with no copy of it. */
const struct gg_config *gg_config_read(void);

/* The bad values of the last gg_config_load(): up to @cap into @out (one
 * per option at most, so GG_CONFIG_MAX_OPTIONS always holds them); how many. */
#define GG_CONFIG_MAX_OPTIONS 32
unsigned gg_config_problems(struct gg_config_problem *out, unsigned cap);

/* The GPUGUARD_* variables the table lacks, every one of them, in one walk
 * of the environment as it is now, with no allocation: start with @u zeroed;
 * each call that returns true has put the next one's name into @u->name
 * (cut to fit) and the known name within three edits of it into
 * @u->nearest (NULL when none), so a misspelt GPUGUARD_REDZNE=64 is named
 * however many other unknown names come before it. */
struct gg_config_unknown {
	char name[128];
	const char *nearest;
	char **next; /* the walk's place in environ; NULL before the first call */
	bool done;
};
bool gg_config_next_unknown(struct gg_config_unknown *u);

/* The process-wide configuration; valid after the shim's set-up. */
const struct gg_config *gg_config(void);

/* Parse helpers, shared with tests. Return 0 or -EINVAL / -ERANGE; *@why
 * (when not NULL) says why a signal is refused ("SIGKILL cannot be caught"). */
int gg_config_parse_u64(const char *s, uint64_t *out);

/* A size: a number as gg_config_parse_u64() takes it, or decimal digits with
 * a unit K, M, G or T (1024, 1024^2, ...; "256M", "1GiB", "64kB"). */
int gg_config_parse_size(const char *s, uint64_t *out);
int gg_config_parse_signal(const char *s, int *out, const char **why);

/* GPUGUARD_BOUNDARY's events. */
struct gg_boundary_events {
	uint64_t launch[16], sync[16];
	unsigned nlaunch, nsync;
	double after[16];
	unsigned nafter;
};

/* Told of each item of an event list that is dropped: the item as written
 * (valid only for the call) and what is wrong with it (a static string). */
typedef void gg_config_bad_item_fn(void *arg, const char *item, const char *why);

/* Parse an event list into @ev: the good items count, each bad one is
 * dropped and told to @bad (may be NULL). 0, or -EINVAL when any was bad. */
int gg_config_parse_boundary(const char *list, struct gg_boundary_events *ev,
			     gg_config_bad_item_fn *bad, void *arg);

/* Signals gpuguard refuses: what no program may catch, what reports a crash
 * or an abort, and the real-time signals the C library keeps for itself
 * (glibc: 32 and 33, below SIGRTMIN; sigaction refuses them). */
#define GG_CONFIG_SIGNALS                                                                    \
	"USR1, USR2 or a signal number from 1 to 64 other than 4 (ILL), 6 (ABRT), 7 (BUS), " \
	"8 (FPE), 9 (KILL), 11 (SEGV), 19 (STOP), 32 and 33 (the C library's own)"
#define GG_CONFIG_SIZE_ACCEPTS "a number of bytes, or with a unit K, M, G or T (256M)"
#define GG_CONFIG_BOUNDARY_ACCEPTS "launch:N, sync:N (N >= 1) or after:SECONDS, comma-separated"

#endif
