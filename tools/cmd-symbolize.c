/* gpuguard symbolize: adds file:line to the code locations of a gpuguard log
 * or JSON summary, like asan_symbolize. Locations are the return addresses the
 * shim records, as "SYMBOL+0xOFF (OBJECT+0xOFF)" or "OBJECT+0xOFF" in a log
 * (OBJECT a basename) and as "site" objects in the JSON (OBJECT a full path).
 * Each object is symbolized once, all its offsets in one run of
 * llvm-symbolizer (or addr2line), started without a shell.
 *
 * A site inside the CUDA runtime linked into a stripped executable comes with
 * the frames outward of it; with an unstripped copy of the executable, the
 * first of them that is no function of the runtime (GPUGUARD_SKIP_SYMBOLS, as
 * the shim reads them) is named as the application's frame. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "hashindex.h"
#include "options/config.h"
#include "json.h"
#include "callsite/runtime-syms.h"
#include "base/text.h"

static const char symbolize_usage[] =
	"usage: " GG_USAGE_SYMBOLIZE "\n"
	"\n"
	"Copies a gpuguard log or JSON summary (FILE, or standard input when FILE is\n"
	"absent or '-') to standard output with the source file and line of each code\n"
	"location: \" at FILE:LINE\" after each location of a log, a \"line\" member in\n"
	"each \"site\" and each frame of a \"stack\" of a JSON summary. Uses\n"
	"llvm-symbolizer when it is on PATH, else addr2line; the objects need debug\n"
	"information (-g).\n"
	"\n"
	"A log names objects by basename: they are looked for in each -d DIR, then the\n"
	"current directory, then each directory of LD_LIBRARY_PATH and of PATH. The JSON\n"
	"has full paths, used unless a -d DIR holds a file of that basename (when the\n"
	"path is not there, the basename is looked for the same way).\n"
	"\n"
	"A site inside the CUDA runtime linked into a stripped program (\"inside the\n"
	"statically linked CUDA runtime\") lists the frames outward of it. Given an\n"
	"unstripped copy of the program (-d DIR), the first of them that is not the\n"
	"runtime's (by GPUGUARD_SKIP_SYMBOLS: the summary's, else the environment's,\n"
	"else the default) is named: \" (application frame: ...)\" after the list in a\n"
	"log, an \"application\" member in the site of a JSON summary.\n"
	"\n"
	"  -d DIR    look for objects in DIR first (repeatable): unstripped copies\n"
	"\n"
	"Exit status: 0 on success (locations that cannot be resolved are left as they\n"
	"are, with a note on stderr for each object; an input without any, empty or\n"
	"not a log, is copied as it is and said so), 2 for a usage error or an input\n"
	"that cannot be read.\n";

/* ---- objects and locations ------------------------------------------------ */

/* A function of an object, for the address that lies in it. */
struct function {
	uint64_t vaddr; /* the address looked up */
	uint64_t start; /* the function's */
	char *name;
};

struct object {
	char *name;        /* as the input gives it: a basename or a path */
	char *path;        /* the file found, or NULL */
	uint64_t *offsets; /* distinct, sorted once collected */
	size_t n, cap;
	char **lines;  /* "FILE:LINE" for each offset, or NULL */
	bool searched; /* @path was looked for */
	/* Only for the objects of sites inside a stripped program's runtime: */
	bool named;               /* the fields below are filled in */
	int names_err;            /* 0, or why its functions cannot be named */
	uint64_t bias;            /* offsets + this = addresses in the file (gg_symbolize_load_bias) */
	struct gg_ranges runtime; /* the runtime's functions */
	struct function *functions; /* sorted by vaddr */
	size_t nfunctions, functions_cap;
};

/* A site inside a statically linked runtime with its outer frames. */
#define CHAIN_MAX 16
struct chain {
	size_t object; /* the site's */
	size_t at;     /* where the application's frame is named */
	size_t n;      /* the site, then the frames outward */
	uint64_t offset[CHAIN_MAX];
	uint64_t address[CHAIN_MAX]; /* 0: not given */
	bool here[CHAIN_MAX];        /* in the site's object: others are never its runtime */
	int app;                     /* the entry that is the application's frame, or -1 */
};

#define NO_CHAIN SIZE_MAX
struct loc {
	size_t at;     /* where the text is inserted */
	size_t seq;    /* for ties: in the order found */
	size_t object; /* index in objects */
	uint64_t offset;
	size_t chain; /* NO_CHAIN: a line; else the chain whose frame is named here */
};

struct job {
	const char *const *dirs; /* -d */
	size_t ndirs;
	struct object *objects;
	size_t nobjects, objects_cap;
	/* The objects by name: a search through them made an input of many
	 * objects quadratic. */
	struct gg_hashindex object_index;
	struct loc *locs;
	size_t nlocs, locs_cap;
	struct chain *chains;
	size_t nchains, chains_cap;
	struct gg_globs skip; /* GPUGUARD_SKIP_SYMBOLS */
	size_t found;         /* code locations seen, symbolized already or not */
	bool oom;
};

struct object_key {
	const struct job *job;
	const char *name;
	size_t len;
};

static bool object_alike(const void *ctx, size_t item)
{
	const struct object_key *k = ctx;
	const char *name = k->job->objects[item].name;

	return strlen(name) == k->len && !memcmp(name, k->name, k->len);
}

/* The index of the object named @name (@name_len bytes), added if new;
 * SIZE_MAX when out of memory. */
static size_t object_of(struct job *job, const char *name, size_t name_len)
{
	uint64_t hash = gg_hashindex_hash(GG_HASHINDEX_SEED, name, name_len);
	size_t i = gg_hashindex_find(&job->object_index, hash, object_alike,
				     &(struct object_key){ job, name, name_len });
	char *copy;

	if (i != SIZE_MAX)
		return i;
	copy = strndup(name, name_len);
	if (!copy || !gg_cli_grow((void **)&job->objects, &job->objects_cap, job->nobjects,
				  sizeof(*job->objects))) {
		free(copy);
		job->oom = true;
		return SIZE_MAX;
	}
	i = job->nobjects++;
	job->objects[i] = (struct object){ .name = copy };
	/* Out of memory, the name's next location only gets an object of its own. */
	(void)gg_hashindex_add(&job->object_index, hash, i);
	return i;
}

/* Record a location of @name (@name_len bytes) at offset @offset: its line
 * goes at @at. */
static void add_loc(struct job *job, const char *name, size_t name_len, uint64_t offset, size_t at)
{
	size_t i = object_of(job, name, name_len);

	if (i == SIZE_MAX)
		return;
	if (!gg_cli_grow((void **)&job->objects[i].offsets, &job->objects[i].cap, job->objects[i].n,
			 sizeof(uint64_t)) ||
	    !gg_cli_grow((void **)&job->locs, &job->locs_cap, job->nlocs, sizeof(*job->locs))) {
		job->oom = true;
		return;
	}
	job->objects[i].offsets[job->objects[i].n++] = offset;
	job->locs[job->nlocs] = (struct loc){ at, job->nlocs, i, offset, NO_CHAIN };
	job->nlocs++;
}

/* Record @c (its object and entries filled in): its application frame is
 * named at @at. */
static void add_chain(struct job *job, struct chain *c, size_t at)
{
	if (!c->n)
		return;
	if (!gg_cli_grow((void **)&job->chains, &job->chains_cap, job->nchains, sizeof(*c)) ||
	    !gg_cli_grow((void **)&job->locs, &job->locs_cap, job->nlocs, sizeof(*job->locs))) {
		job->oom = true;
		return;
	}
	c->at = at;
	c->app = -1;
	job->chains[job->nchains] = *c;
	job->locs[job->nlocs] = (struct loc){ at, job->nlocs, c->object, 0, job->nchains++ };
	job->nlocs++;
}

/* ---- finding files -------------------------------------------------------- */

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* DIR/NAME if it is a regular file (and executable when @exec), malloc'ed. */
static char *in_dir(const char *dir, size_t dir_len, const char *name, bool exec)
{
	char *path;

	if (!dir_len)
		dir = ".", dir_len = 1;
	if (asprintf(&path, "%.*s/%s", (int)dir_len, dir, name) < 0)
		return NULL;
	if (is_file(path) && (!exec || access(path, X_OK) == 0))
		return path;
	free(path);
	return NULL;
}

/* NAME in each directory of the ':' list @list. */
static char *in_list(const char *list, const char *name, bool exec)
{
	while (list && *list) {
		size_t n = strcspn(list, ":");
		char *path = in_dir(list, n, name, exec);

		if (path)
			return path;
		list += n;
		if (*list == ':')
			list++;
	}
	return NULL;
}

static char *find_object(const struct job *job, const char *name)
{
	const char *base = strrchr(name, '/');
	char *path;

	base = base ? base + 1 : name;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return NULL;
	/* -d first, even over the JSON's path: it holds the unstripped copies. */
	for (size_t i = 0; i < job->ndirs; i++)
		if ((path = in_dir(job->dirs[i], strlen(job->dirs[i]), base, false)))
			return path;
	if (base != name && is_file(name))
		return strdup(name);
	if ((path = in_dir(".", 1, base, false)))
		return path;
	if ((path = in_list(getenv("LD_LIBRARY_PATH"), base, false)))
		return path;
	return in_list(getenv("PATH"), base, false);
}

/* An offset from dladdr() is from the object's first mapped byte: the first
 * PT_LOAD's p_vaddr rounded down to a page (0 for a PIE or a shared library,
 * 0x400000 for a classic executable). The symbolizers want p_vaddr space. */
uint64_t gg_symbolize_load_bias(const char *path)
{
	unsigned char ident[EI_NIDENT];
	uint64_t bias = UINT64_MAX, page = (uint64_t)sysconf(_SC_PAGESIZE);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, ident, sizeof(ident), 0) != (ssize_t)sizeof(ident) ||
	    memcmp(ident, ELFMAG, SELFMAG) != 0 ||
	    ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
		goto out;
	if (ident[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr eh;

		if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
		    eh.e_phentsize != sizeof(Elf64_Phdr))
			goto out;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
			    (ssize_t)sizeof(ph))
				break;
			if (ph.p_type == PT_LOAD && ph.p_vaddr < bias)
				bias = ph.p_vaddr;
		}
	} else if (ident[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr eh;

		if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
		    eh.e_phentsize != sizeof(Elf32_Phdr))
			goto out;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf32_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
			    (ssize_t)sizeof(ph))
				break;
			if (ph.p_type == PT_LOAD && ph.p_vaddr < bias)
				bias = ph.p_vaddr;
		}
	}
out:
	close(fd);
	return bias == UINT64_MAX ? 0 : bias & ~(page - 1);
}

/* ---- running the symbolizer ---------------------------------------------- */

enum tool {
	LLVM_SYMBOLIZER,
	ADDR2LINE
};

struct tools {
	char *path[2];
};

static const char *const tool_name[] = { "llvm-symbolizer", "addr2line" };

/* "FILE:LINE" from a line of GNU-style output ("FILE:LINE", "FILE:LINE
 * (discriminator N)", "??:0", "FILE:?"), or NULL. */
static char *parse_answer(const char *s, size_t n)
{
	const char *colon;
	size_t k;
	char *out;

	for (k = 0; k < n; k++)
		if (s[k] == ' ' && n - k > 2 && s[k + 1] == '(')
			break; /* " (discriminator 2)" */
	n = k;
	colon = memrchr(s, ':', n);
	if (!colon || colon == s || colon + 1 == s + n)
		return NULL;
	for (const char *d = colon + 1; d < s + n; d++)
		if (*d < '0' || *d > '9')
			return NULL;
	if (strtoul(colon + 1, NULL, 10) == 0 || (colon - s == 2 && !memcmp(s, "??", 2)))
		return NULL;
	out = strndup(s, n);
	if (out)
		for (char *c = out; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	return out;
}

/* A temporary file holding @text, opened for reading at its start. */
static int temp_input(const char *text, size_t len)
{
	const char *dir = getenv("TMPDIR");
	char *name;
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	if (asprintf(&name, "%s/gpuguard-symbolize-XXXXXX", dir) < 0)
		return -1;
	fd = mkostemp(name, O_CLOEXEC);
	if (fd >= 0)
		unlink(name);
	free(name);
	if (fd < 0)
		return -1;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Run @tool on @obj for all its offsets: fills obj->lines. 0, or -1 when the
 * tool could not run or answered something else than one line per address. */
static int run_tool(enum tool tool, const char *tool_path, struct object *obj)
{
	char *addrs = NULL, *out = NULL, *obj_arg = NULL;
	size_t alen = 0, olen = 0, ocap = 0;
	FILE *mem = open_memstream(&addrs, &alen);
	uint64_t bias = gg_symbolize_load_bias(obj->path);
	posix_spawn_file_actions_t fa;
	int in = -1, pipefd[2] = { -1, -1 }, status = -1, rc = -1;
	bool oom = false;
	pid_t pid;
	char *argv[8];
	int argc = 0;

	if (!mem)
		return -1;
	for (size_t i = 0; i < obj->n; i++)
		fprintf(mem, "0x%" PRIx64 "\n", obj->offsets[i] + bias - (obj->offsets[i] > 0));
	if (fclose(mem))
		goto out;
	in = temp_input(addrs, alen);
	if (in < 0 || pipe2(pipefd, O_CLOEXEC))
		goto out;
	argv[argc++] = (char *)tool_name[tool];
	if (tool == LLVM_SYMBOLIZER) {
		if (asprintf(&obj_arg, "--obj=%s", obj->path) < 0) {
			obj_arg = NULL;
			goto out;
		}
		argv[argc++] = obj_arg;
		argv[argc++] = (char *)"--output-style=GNU";
		argv[argc++] = (char *)"--functions=none";
		argv[argc++] = (char *)"--no-inlines";
	} else {
		argv[argc++] = (char *)"-e";
		argv[argc++] = obj->path;
	}
	argv[argc] = NULL;
	if (posix_spawn_file_actions_init(&fa))
		goto out;
	posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	if (posix_spawn(&pid, tool_path, &fa, NULL, argv, environ)) {
		posix_spawn_file_actions_destroy(&fa);
		goto out;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	pipefd[1] = -1;
	for (;;) {
		ssize_t n;

		if (ocap - olen < 4096) {
			char *bigger = realloc(out, ocap ? ocap * 2 : 65536);

			if (!bigger) {
				oom = true;
				break;
			}
			out = bigger;
			ocap = ocap ? ocap * 2 : 65536;
		}
		n = read(pipefd[0], out + olen, ocap - olen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		olen += (size_t)n;
	}
	close(pipefd[0]); /* a tool still writing gets EPIPE, never blocks */
	pipefd[0] = -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (oom || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		goto out;
	/* One answer per address, in order. */
	{
		size_t lines = 0;

		for (size_t i = 0; i < olen; i++)
			lines += out[i] == '\n';
		if (lines != obj->n)
			goto out;
	}
	obj->lines = calloc(obj->n ? obj->n : 1, sizeof(*obj->lines));
	if (!obj->lines)
		goto out;
	for (size_t i = 0, start = 0; i < obj->n; i++) {
		const char *nl = memchr(out + start, '\n', olen - start);
		size_t end = (size_t)(nl - out);

		obj->lines[i] = parse_answer(out + start, end - start);
		start = end + 1;
	}
	rc = 0;
out:
	if (in >= 0)
		close(in);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	free(addrs);
	free(out);
	free(obj_arg);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Find @obj's file, once; the note that it is not there, once. */
static bool locate(const struct job *job, struct object *obj)
{
	if (!obj->searched) {
		char shown[GG_CLI_NAME_MAX];

		obj->searched = true;
		obj->path = find_object(job, obj->name);
		if (!obj->path)
			gg_cli_error("symbolize: %s: not found (looked in %sthe current directory, "
				     "LD_LIBRARY_PATH, PATH); left as it is",
				     gg_cli_name(shown, sizeof(shown), obj->name),
				     job->ndirs ? "each -d DIR, " : "");
	}
	return obj->path != NULL;
}

/* Find, then symbolize, every object; one note on stderr for each that fails. */
static void symbolize_objects(struct job *job, const struct tools *tools)
{
	for (size_t i = 0; i < job->nobjects; i++) {
		struct object *obj = &job->objects[i];
		size_t n = 0, resolved = 0;
		char shown[GG_CLI_NAME_MAX];
		int rc = -1;

		/* Distinct offsets, sorted. */
		qsort(obj->offsets, obj->n, sizeof(*obj->offsets), cmp_u64);
		for (size_t k = 0; k < obj->n; k++)
			if (!n || obj->offsets[n - 1] != obj->offsets[k])
				obj->offsets[n++] = obj->offsets[k];
		obj->n = n;

		if (!locate(job, obj))
			continue;
		if (tools->path[LLVM_SYMBOLIZER])
			rc = run_tool(LLVM_SYMBOLIZER, tools->path[LLVM_SYMBOLIZER], obj);
		if (rc && tools->path[ADDR2LINE])
			rc = run_tool(ADDR2LINE, tools->path[ADDR2LINE], obj);
		if (rc) {
			gg_cli_error("symbolize: %s: %s failed on it; left as it is",
				     gg_cli_name(shown, sizeof(shown), obj->path),
				     !tools->path[ADDR2LINE]         ? tool_name[LLVM_SYMBOLIZER]
				     : !tools->path[LLVM_SYMBOLIZER] ? tool_name[ADDR2LINE]
								     : "llvm-symbolizer and addr2line");
			continue;
		}
		for (size_t k = 0; k < obj->n; k++)
			resolved += obj->lines[k] != NULL;
		if (!resolved)
			gg_cli_error("symbolize: %s: no line information for %s (built without "
				     "-g?)",
				     gg_cli_name(shown, sizeof(shown), obj->path),
				     obj->n == 1 ? "its address" : "any of its addresses");
	}
}

/* "FILE:LINE" of a location, or NULL. */
static const char *line_of(const struct object *obj, uint64_t offset)
{
	size_t lo = 0, hi = obj->n;

	if (!obj->lines)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (obj->offsets[mid] < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < obj->n && obj->offsets[lo] == offset ? obj->lines[lo] : NULL;
}

static const char *answer_of(const struct job *job, const struct loc *l)
{
	return line_of(&job->objects[l->object], l->offset);
}

/* ---- the application's frame of a site inside a linked-in runtime ----------- */

/* The address in @obj's file of the call that left return offset @offset. */
static uint64_t call_vaddr(const struct object *obj, uint64_t offset)
{
	return offset + obj->bias - (offset > 0);
}

static int cmp_function(const void *a, const void *b)
{
	uint64_t x = ((const struct function *)a)->vaddr, y = ((const struct function *)b)->vaddr;

	return x < y ? -1 : x > y;
}

/* For each address looked up that lies in function @name: its name. */
static int name_function(void *ctx, const char *name, uint64_t value, uint64_t size)
{
	struct object *obj = ctx;
	size_t lo = 0, hi = obj->nfunctions;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (obj->functions[mid].vaddr < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < obj->nfunctions && obj->functions[lo].vaddr - value < size; lo++) {
		struct function *f = &obj->functions[lo];

		if (f->name)
			continue; /* an alias of a function named already */
		if (!(f->name = strdup(name)))
			return -ENOMEM;
		for (char *c = f->name; *c; c++) /* whatever the file holds, a line stays one */
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		f->start = value;
	}
	return 0;
}

/* Read @obj's runtime functions (by job->skip) and the names of the
 * functions its chains pass through, from its symbol table. */
static int name_functions(struct job *job, struct object *obj, size_t index)
{
	struct gg_elf e;
	size_t n = 0;
	int err;

	obj->named = true;
	obj->bias = gg_symbolize_load_bias(obj->path);
	for (size_t i = 0; i < job->nchains; i++) {
		const struct chain *c = &job->chains[i];

		for (size_t k = 0; c->object == index && k < c->n; k++) {
			if (!c->here[k])
				continue;
			if (!gg_cli_grow((void **)&obj->functions, &obj->functions_cap, obj->nfunctions,
					 sizeof(*obj->functions)))
				return -ENOMEM;
			obj->functions[obj->nfunctions++] = (struct function){
				.vaddr = call_vaddr(obj, c->offset[k])
			};
		}
	}
	qsort(obj->functions, obj->nfunctions, sizeof(*obj->functions), cmp_function);
	for (size_t k = 0; k < obj->nfunctions; k++)
		if (!n || obj->functions[n - 1].vaddr != obj->functions[k].vaddr)
			obj->functions[n++] = obj->functions[k];
	obj->nfunctions = n;
	if ((err = gg_elf_open(&e, obj->path)))
		return err;
	err = gg_runtime_ranges(&e, &job->skip, &obj->runtime);
	if (!err)
		err = gg_elf_functions(&e, gg_elf_section(&e, NULL, SHT_SYMTAB), name_function, obj);
	gg_elf_close(&e);
	return err;
}

static const struct function *function_at(const struct object *obj, uint64_t vaddr)
{
	const struct function key = { .vaddr = vaddr }, *f;

	f = bsearch(&key, obj->functions, obj->nfunctions, sizeof(key), cmp_function);
	return f && f->name ? f : NULL;
}

/* For each chain, its first frame in the site's object that is no function
 * of the runtime there. */
static void resolve_chains(struct job *job)
{
	char shown[GG_CLI_NAME_MAX];

	for (size_t i = 0; i < job->nchains; i++) {
		struct chain *c = &job->chains[i];
		struct object *obj = &job->objects[c->object];

		if (!locate(job, obj))
			continue;
		if (!obj->named) {
			obj->names_err = name_functions(job, obj, c->object);
			if (obj->names_err == -ENOENT)
				gg_cli_error(
					"symbolize: %s: no symbol table (stripped): the application's "
					"frame of a site inside the statically linked CUDA runtime "
					"cannot be named; give an unstripped copy with -d DIR",
					gg_cli_name(shown, sizeof(shown), obj->path));
			else if (obj->names_err)
				gg_cli_error("symbolize: %s: cannot read its symbol table: %s",
					     gg_cli_name(shown, sizeof(shown), obj->path),
					     obj->names_err == -ENOEXEC
						     ? "not a readable 64-bit ELF file"
						     : strerror(-obj->names_err));
		}
		if (obj->names_err)
			continue;
		for (size_t k = 0; k < c->n && c->app < 0; k++)
			if (c->here[k] && !gg_ranges_hold(&obj->runtime, call_vaddr(obj, c->offset[k])))
				c->app = (int)k;
	}
}

/* ---- the log ---------------------------------------------------------------- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static bool is_hex(char c)
{
	return gg_text_hex_digit((unsigned char)c) >= 0;
}

/* Ends a name (going backwards from its "+0x"). */
static bool name_delim(char c)
{
	return is_space(c) || c == '(' || c == '"' || c == '\'' || c == '[' || c == '=';
}

struct span {
	size_t name, plus, end; /* NAME at [name, plus), "+0xHEX" at [plus, end) */
	uint64_t offset;
};

/* The next "NAME+0xHEX" at or after @from in [.., @le), or false. */
static bool next_span(const char *t, size_t from, size_t le, size_t ls, struct span *sp)
{
	for (size_t h = from; h + 3 < le; h++) {
		size_t e, s;

		if (t[h] != '+' || t[h + 1] != '0' || (t[h + 2] != 'x' && t[h + 2] != 'X') ||
		    !is_hex(t[h + 3]))
			continue;
		for (e = h + 3; e < le && is_hex(t[e]); e++)
			;
		for (s = h; s > ls && !name_delim(t[s - 1]); s--)
			;
		if (s == h || e - (h + 3) > 16)
			continue;
		sp->name = s;
		sp->plus = h;
		sp->end = e;
		/* At most 16 digits: never out of range. */
		return gg_text_parse_hex(t + h + 3, e - (h + 3), &sp->offset) == 0;
	}
	return false;
}

/* Whether what follows a location at @e (up to @le) lets it be one: the end,
 * a space or punctuation; not "::" (a module name) or more of a word. */
static bool good_end(const char *t, size_t e, size_t le)
{
	char c = e < le ? t[e] : '\n';

	if (c == '\n' || is_space(c) || c == ')' || c == ']' || c == ',' || c == ';' || c == '"' ||
	    c == '\'')
		return true;
	if (c == '.' || c == ':')
		return e + 1 >= le || is_space(t[e + 1]);
	return false;
}

/* Whether " at " follows @at: symbolized already. */
static bool done_already(const char *t, size_t at, size_t le)
{
	return le - at >= 4 && !memcmp(t + at, " at ", 4);
}

/* A code location of a log: OBJECT's span, and where its line goes. */
struct location {
	struct span obj;
	size_t at;
};

/* The next location at or after @from in [.., @le): "SYMBOL+0xOFF
 * (OBJECT+0xOFF)", "(OBJECT+0xOFF)" or "OBJECT+0xOFF". */
static bool next_location(const char *t, size_t from, size_t le, size_t ls, struct location *l)
{
	struct span a, b;

	while (next_span(t, from, le, ls, &a)) {
		from = a.end;
		if (!good_end(t, a.end, le))
			continue;
		/* "SYMBOL+0xOFF (OBJECT+0xOFF)": the object is in the parentheses. */
		if (a.end + 2 < le && t[a.end] == ' ' && t[a.end + 1] == '(' &&
		    next_span(t, a.end + 2, le, ls, &b) && b.name == a.end + 2 && b.end < le &&
		    t[b.end] == ')') {
			l->obj = b;
			l->at = b.end + 1;
			return true;
		}
		/* A symbol whose object was cut ("f+0x9 (libhelper.so+0x..."). */
		if (a.end + 1 < le && t[a.end] == ' ' && t[a.end + 1] == '(')
			continue;
		/* "(OBJECT+0xOFF)" alone, or "OBJECT+0xOFF". */
		l->obj = a;
		l->at = a.name > ls && t[a.name - 1] == '(' && a.end < le && t[a.end] == ')' ? a.end + 1
											     : a.end;
		return true;
	}
	return false;
}

/* What the shim writes after a site inside a stripped program's runtime, and
 * before its outer frames; and what this command writes after them. */
static const char runtime_mark[] = " [inside the statically linked CUDA runtime";
static const char called_from[] = "; called from ";
static const char app_mark[] = " (application frame: ";

/* The site at @site (in [.., @le)) followed by the runtime's mark: its chain,
 * named after the closing ']'. */
static void scan_log_chain(struct job *job, const char *t, const struct location *site, size_t le,
			   size_t ls)
{
	const size_t mark = sizeof(runtime_mark) - 1;
	const char *close;
	struct chain c = { 0 };
	struct location l;
	size_t from, end;

	from = site->at;
	if (done_already(t, from, le)) /* the site's own line, from an earlier run */
		for (from += 4; from < le && t[from] != ' '; from++)
			;
	if (le - from < mark || memcmp(t + from, runtime_mark, mark))
		return;
	from += mark;
	close = memchr(t + from, ']', le - from);
	if (!close)
		return; /* cut */
	end = (size_t)(close - t);
	if (le - (end + 1) >= sizeof(app_mark) - 1 &&
	    !memcmp(t + end + 1, app_mark, sizeof(app_mark) - 1))
		return; /* named already */
	c.object = object_of(job, t + site->obj.name, site->obj.plus - site->obj.name);
	if (c.object == SIZE_MAX)
		return;
	c.offset[c.n] = site->obj.offset;
	c.here[c.n++] = true;
	if (end - from >= sizeof(called_from) - 1 &&
	    !memcmp(t + from, called_from, sizeof(called_from) - 1)) {
		for (from += sizeof(called_from) - 1;
		     c.n < CHAIN_MAX && next_location(t, from, end, ls, &l); from = l.at) {
			const struct object *o = &job->objects[c.object];
			size_t len = l.obj.plus - l.obj.name;

			c.offset[c.n] = l.obj.offset;
			c.here[c.n++] = strlen(o->name) == len && !memcmp(o->name, t + l.obj.name, len);
		}
	}
	add_chain(job, &c, end + 1);
}

static void scan_log(struct job *job, const char *t, size_t len)
{
	for (size_t ls = 0; ls < len;) {
		const char *nl = memchr(t + ls, '\n', len - ls);
		size_t le = nl ? (size_t)(nl - t) : len;
		struct location l;

		for (size_t from = ls; next_location(t, from, le, ls, &l); from = l.at) {
			job->found++;
			if (!done_already(t, l.at, le))
				add_loc(job, t + l.obj.name, l.obj.plus - l.obj.name, l.obj.offset,
					l.at);
			scan_log_chain(job, t, &l, le, ls);
		}
		ls = le + 1;
	}
}

/* ---- the JSON summary --------------------------------------------------------- */

static bool hex_string(const struct gg_json *v, uint64_t *out)
{
	return gg_text_parse_0x(gg_json_string(v, NULL), out) == 0;
}

/* A site's object (a path), offset and address (0 when not given); false
 * when it is no code location. */
static bool site_location(const struct gg_json *site, const struct gg_json **object, uint64_t *offset,
			  uint64_t *address)
{
	*address = 0;
	if (!gg_json_is(site, GG_JSON_OBJECT))
		return false;
	*object = gg_json_get(site, "object");
	return gg_json_is(*object, GG_JSON_STRING) && (*object)->u.string.len &&
	       strlen((*object)->u.string.s) == (*object)->u.string.len &&
	       hex_string(gg_json_get(site, "offset"), offset) &&
	       !(hex_string(gg_json_get(site, "address"), address) && !*address);
}

/* Where a member is added to a site: after its last one. */
static size_t site_end(const struct gg_json *site)
{
	return site->u.object.members[site->u.object.len - 1].value->end;
}

/* A site, and when it lies inside a stripped program's runtime, its frames. */
static void scan_site(struct job *job, const struct gg_json *site)
{
	const struct gg_json *object, *frames, *inside;
	uint64_t offset, address;
	struct chain c = { 0 };

	if (!site_location(site, &object, &offset, &address))
		return;
	job->found++;
	if (!gg_json_get(site, "line"))
		add_loc(job, object->u.string.s, object->u.string.len, offset, site_end(site));
	inside = gg_json_get(site, "in_static_runtime");
	if (!gg_json_is(inside, GG_JSON_BOOL) || !inside->u.boolean)
		return;
	c.object = object_of(job, object->u.string.s, object->u.string.len);
	if (c.object == SIZE_MAX)
		return;
	c.offset[0] = offset;
	c.address[0] = address;
	c.here[0] = true;
	c.n = 1;
	frames = gg_json_get(site, "frames");
	for (size_t i = 0; gg_json_is(frames, GG_JSON_ARRAY) && i < frames->u.array.len; i++) {
		const struct gg_json *frame = frames->u.array.items[i], *fobject;

		if (!site_location(frame, &fobject, &offset, &address))
			continue;
		if (!gg_json_get(frame, "line"))
			add_loc(job, fobject->u.string.s, fobject->u.string.len, offset,
				site_end(frame));
		if (c.n < CHAIN_MAX) {
			c.offset[c.n] = offset;
			c.address[c.n] = address;
			c.here[c.n++] = !strcmp(fobject->u.string.s, object->u.string.s);
		}
	}
	if (!gg_json_get(site, "application"))
		add_chain(job, &c, site_end(site));
}

/* Whether @key names a stack ("stack", "free_stack", ...): an array of
 * frames, each symbolized as a site. */
static bool is_stack_key(const char *key)
{
	size_t n = strlen(key);

	return n >= 5 && !strcmp(key + n - 5, "stack");
}

/* Every "site" object with an object and an offset, and every frame of a
 * stack, in document order. */
static void scan_json(struct job *job, const struct gg_json *v)
{
	if (gg_json_is(v, GG_JSON_ARRAY)) {
		for (size_t i = 0; i < v->u.array.len; i++)
			scan_json(job, v->u.array.items[i]);
		return;
	}
	if (!gg_json_is(v, GG_JSON_OBJECT))
		return;
	for (size_t i = 0; i < v->u.object.len; i++) {
		const struct gg_json_member *m = &v->u.object.members[i];

		if (is_stack_key(m->key) && gg_json_is(m->value, GG_JSON_ARRAY)) {
			for (size_t k = 0; k < m->value->u.array.len; k++)
				scan_site(job, m->value->u.array.items[k]);
		} else if (strcmp(m->key, "site") || !gg_json_is(m->value, GG_JSON_OBJECT)) {
			scan_json(job, m->value);
		} else {
			scan_site(job, m->value);
		}
	}
}

/* @s as the body of a JSON string; a byte that is not UTF-8 becomes \u00XX,
 * as the shim writes it (both gg_text_json_escape), so the document stays valid. */
static void put_json_string(FILE *f, const char *s)
{
	char buf[256];
	size_t n, taken;

	for (n = strlen(s); n; s += taken, n -= taken)
		fwrite(buf, 1, gg_text_json_escape(buf, sizeof(buf), s, n, &taken), f);
}

/* ---- the command ----------------------------------------------------------- */

/* The application's frame of @c, after its site (JSON) or its list (log). */
static void put_app_frame(const struct job *job, const struct chain *c, bool json)
{
	const struct object *obj = &job->objects[c->object];
	uint64_t offset = c->offset[c->app];
	const struct function *f = function_at(obj, call_vaddr(obj, offset));
	const char *line = line_of(obj, offset), *base = strrchr(obj->name, '/');
	char shown[GG_CLI_NAME_MAX];

	base = base ? base + 1 : obj->name;
	if (!json) {
		/* Names the log did not hold before: escaped, as the command writes names. */
		fputs(app_mark, stdout);
		if (f)
			printf("%s+0x%" PRIx64 " (", gg_cli_name(shown, sizeof(shown), f->name),
			       offset + obj->bias - f->start);
		printf("%s+0x%" PRIx64 "%s", gg_cli_name(shown, sizeof(shown), base), offset,
		       f ? ")" : "");
		if (line)
			printf(" at %s", gg_cli_name(shown, sizeof(shown), line));
		putchar(')');
		return;
	}
	fputs(", \"application\": { ", stdout);
	if (c->address[c->app])
		printf("\"address\": \"0x%" PRIx64 "\", ", c->address[c->app]);
	fputs("\"object\": \"", stdout);
	put_json_string(stdout, obj->name);
	printf("\", \"offset\": \"0x%" PRIx64 "\", \"symbol\": ", offset);
	if (f) {
		putchar('"');
		put_json_string(stdout, f->name);
		printf("+0x%" PRIx64 "\"", offset + obj->bias - f->start);
	} else {
		fputs("null", stdout);
	}
	if (line) {
		fputs(", \"line\": \"", stdout);
		put_json_string(stdout, line);
		putchar('"');
	}
	fputs(" }", stdout);
}

static int cmp_loc(const void *a, const void *b)
{
	const struct loc *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void free_job(struct job *job)
{
	for (size_t i = 0; i < job->nobjects; i++) {
		struct object *obj = &job->objects[i];

		for (size_t k = 0; k < obj->nfunctions; k++)
			free(obj->functions[k].name);
		free(obj->functions);
		gg_ranges_free(&obj->runtime);
		for (size_t k = 0; obj->lines && k < obj->n; k++)
			free(obj->lines[k]);
		free(obj->lines);
		free(obj->offsets);
		free(obj->name);
		free(obj->path);
	}
	free(job->objects);
	gg_hashindex_free(&job->object_index);
	free(job->locs);
	free(job->chains);
}

static char *find_tool(const char *name)
{
	return in_list(getenv("PATH"), name, true);
}

int gg_cmd_symbolize(int argc, char **argv)
{
	const char **dirs = calloc((size_t)argc + 1, sizeof(*dirs));
	const char *file = NULL;
	struct job job = { 0 };
	struct tools tools = { { NULL, NULL } };
	bool options = true, json = false;
	struct gg_json *root = NULL;
	char *text = NULL, shown[GG_CLI_NAME_MAX], shown2[GG_CLI_NAME_MAX];
	size_t len = 0, ndirs = 0, pos;
	int status = 2;

	if (!dirs) {
		gg_cli_error("symbolize: out of memory");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (options && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
			free(dirs);
			fputs(symbolize_usage, stdout);
			return fflush(stdout) ? 2 : 0;
		} else if (options && !strcmp(a, "--")) {
			options = false;
		} else if (options && !strncmp(a, "-d", 2)) {
			const char *dir = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);

			if (!dir || !*dir) {
				gg_cli_error("symbolize: -d needs a directory (see gpuguard symbolize "
					     "--help)");
				goto out;
			}
			dirs[ndirs++] = dir;
		} else if (options && a[0] == '-' && a[1]) {
			gg_cli_error("symbolize: unknown option '%s' (see gpuguard symbolize --help)",
				     gg_cli_name(shown, sizeof(shown), a));
			goto out;
		} else if (file) {
			gg_cli_error("symbolize: one FILE at most ('%s' and '%s' given)",
				     gg_cli_name(shown, sizeof(shown), file),
				     gg_cli_name(shown2, sizeof(shown2), a));
			goto out;
		} else {
			file = a;
		}
	}
	job.dirs = dirs;
	job.ndirs = ndirs;

	if (!file || !strcmp(file, "-")) {
		file = "standard input";
		text = gg_json_read_fd(STDIN_FILENO, &len);
	} else {
		int fd = open(file, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			struct stat st;

			if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
				errno = EISDIR;
			else
				text = gg_json_read_fd(fd, &len);
			close(fd);
		}
	}
	if (!text) {
		gg_cli_error("symbolize: %s: cannot read: %s", gg_cli_name(shown, sizeof(shown), file),
			     strerror(errno));
		goto out;
	}
	if (!len) {
		gg_cli_error("symbolize: %s is empty: nothing to symbolize",
			     gg_cli_name(shown, sizeof(shown), file));
		status = 0;
		goto out;
	}

	/* A JSON summary starts with '{'; a log never does. */
	pos = strspn(text, " \t\r\n");
	if (pos < len && text[pos] == '{') {
		struct gg_json_error err;

		root = gg_json_parse(text, len, &err);
		if (root) {
			json = true;
			scan_json(&job, root);
		} else {
			gg_cli_error("symbolize: %s: line %u, column %u: %s; read as a log instead",
				     gg_cli_name(shown, sizeof(shown), file), err.line, err.column,
				     err.message);
		}
	}
	if (!json)
		scan_log(&job, text, len);
	if (!job.found)
		gg_cli_error("symbolize: %s: no code location in it (OBJECT+0xOFFSET in a log, a "
			     "\"site\" with \"object\" and \"offset\" in a JSON summary); copied as "
			     "it is",
			     gg_cli_name(shown, sizeof(shown), file));
	/* The runtime's functions as the run that wrote the input knew them. */
	{
		const char *skip = gg_json_string(
			gg_json_get(gg_json_get(root, "config"), "skip_symbols"), NULL);

		if (!skip)
			skip = getenv("GPUGUARD_SKIP_SYMBOLS");
		gg_globs_parse(&job.skip, skip ? skip : GG_SKIP_SYMBOLS_DEFAULT);
	}
	if (job.oom) {
		gg_cli_error("symbolize: out of memory");
		goto out;
	}

	if (job.nobjects) {
		tools.path[LLVM_SYMBOLIZER] = find_tool(tool_name[LLVM_SYMBOLIZER]);
		tools.path[ADDR2LINE] = find_tool(tool_name[ADDR2LINE]);
		if (!tools.path[LLVM_SYMBOLIZER] && !tools.path[ADDR2LINE])
			gg_cli_error("symbolize: neither llvm-symbolizer nor addr2line is on PATH; "
				     "nothing is symbolized");
		else
			symbolize_objects(&job, &tools);
	}
	resolve_chains(&job);

	/* The input, with each answer inserted at its place. */
	if (job.nlocs) /* qsort's array may not be NULL, even empty */
		qsort(job.locs, job.nlocs, sizeof(*job.locs), cmp_loc);
	pos = 0;
	for (size_t i = 0; i < job.nlocs; i++) {
		const struct loc *l = &job.locs[i];
		const char *answer = l->chain == NO_CHAIN ? answer_of(&job, l) : NULL;

		if (l->chain != NO_CHAIN && job.chains[l->chain].app >= 0) {
			fwrite(text + pos, 1, l->at - pos, stdout);
			pos = l->at;
			put_app_frame(&job, &job.chains[l->chain], json);
			continue;
		}
		if (!answer)
			continue;
		fwrite(text + pos, 1, l->at - pos, stdout);
		pos = l->at;
		if (json) {
			fputs(", \"line\": \"", stdout);
			put_json_string(stdout, answer);
			fputs("\"", stdout);
		} else {
			printf(" at %s", gg_cli_name(shown, sizeof(shown), answer));
		}
	}
	fwrite(text + pos, 1, len - pos, stdout);
	if (fflush(stdout) || ferror(stdout)) {
		gg_cli_error("symbolize: cannot write: %s", strerror(errno));
		status = 1;
		goto out;
	}
	status = 0;
out:
	gg_json_free(root);
	free(text);
	free_job(&job);
	free(tools.path[0]);
	free(tools.path[1]);
	free(dirs);
	return status;
}
