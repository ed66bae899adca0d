/* gpuguard symbolize: adds file:line to the code locations of a gpuguard log
 * or JSON summary, like asan_symbolize. Locations are the return addresses the
 * shim records, as "SYMBOL+0xOFF (OBJECT+0xOFF)" or "OBJECT+0xOFF" in a log
 * (OBJECT a basename) and as "site" objects in the JSON (OBJECT a full path).
 * Each object is symbolized once, all its offsets in one run of
 * llvm-symbolizer (or addr2line), started without a shell. */
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
#include "json.h"

static const char symbolize_usage[] =
	"usage: gpuguard symbolize [--help] [-d DIR]... [FILE]\n"
	"\n"
	"Copies a gpuguard log or JSON summary (FILE, or standard input when FILE is\n"
	"absent or '-') to standard output with the source file and line of each code\n"
	"location: \" at FILE:LINE\" after each location of a log, a \"line\" member in\n"
	"each \"site\" of a JSON summary. Uses llvm-symbolizer when it is on PATH, else\n"
	"addr2line; the objects need debug information (-g).\n"
	"\n"
	"A log names objects by basename: they are looked for in each -d DIR, then the\n"
	"current directory, then each directory of LD_LIBRARY_PATH and of PATH. The JSON\n"
	"has full paths (when one is not there, the basename is looked for the same way).\n"
	"\n"
	"  -d DIR    look for objects in DIR first (repeatable)\n"
	"\n"
	"Exit status: 0 on success (locations that cannot be resolved are left as they\n"
	"are, with a note on stderr for each object), 2 for a usage error or an input\n"
	"that cannot be read.\n";

/* ---- objects and locations ------------------------------------------------ */

struct object {
	char *name;         /* as the input gives it: a basename or a path */
	char *path;         /* the file found, or NULL */
	uint64_t *offsets;  /* distinct, sorted once collected */
	size_t n, cap;
	char **lines;       /* "FILE:LINE" for each offset, or NULL */
};

struct loc {
	size_t at;          /* where the text is inserted */
	size_t object;      /* index in objects */
	uint64_t offset;
};

struct job {
	const char *const *dirs; /* -d */
	size_t ndirs;
	struct object *objects;
	size_t nobjects, objects_cap;
	struct loc *locs;
	size_t nlocs, locs_cap;
	bool oom;
};

/* Record a location of @name (@name_len bytes) at offset @offset. */
static void add_loc(struct job *job, const char *name, size_t name_len, uint64_t offset,
		    size_t at)
{
	size_t i;

	for (i = 0; i < job->nobjects; i++)
		if (strlen(job->objects[i].name) == name_len &&
		    !memcmp(job->objects[i].name, name, name_len))
			break;
	if (i == job->nobjects) {
		char *copy = strndup(name, name_len);

		if (!copy || !gg_cli_grow((void **)&job->objects, &job->objects_cap, job->nobjects,
				   sizeof(*job->objects))) {
			free(copy);
			job->oom = true;
			return;
		}
		job->objects[job->nobjects++] = (struct object){ .name = copy };
	}
	if (!gg_cli_grow((void **)&job->objects[i].offsets, &job->objects[i].cap, job->objects[i].n,
		  sizeof(uint64_t)) ||
	    !gg_cli_grow((void **)&job->locs, &job->locs_cap, job->nlocs, sizeof(*job->locs))) {
		job->oom = true;
		return;
	}
	job->objects[i].offsets[job->objects[i].n++] = offset;
	job->locs[job->nlocs++] = (struct loc){ at, i, offset };
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

	if (base && is_file(name))
		return strdup(name);
	base = base ? base + 1 : name;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return NULL;
	for (size_t i = 0; i < job->ndirs; i++)
		if ((path = in_dir(job->dirs[i], strlen(job->dirs[i]), base, false)))
			return path;
	if ((path = in_dir(".", 1, base, false)))
		return path;
	if ((path = in_list(getenv("LD_LIBRARY_PATH"), base, false)))
		return path;
	return in_list(getenv("PATH"), base, false);
}

/* An offset from dladdr() is from the object's first mapped byte: the first
 * PT_LOAD's p_vaddr rounded down to a page (0 for a PIE or a shared library,
 * 0x400000 for a classic executable). The symbolizers want p_vaddr space. */
static uint64_t load_bias(const char *path)
{
	unsigned char ident[EI_NIDENT];
	uint64_t bias = UINT64_MAX, page = (uint64_t)sysconf(_SC_PAGESIZE);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, ident, sizeof(ident), 0) != (ssize_t)sizeof(ident) ||
	    memcmp(ident, ELFMAG, SELFMAG) != 0 ||
	    ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB
									: ELFDATA2MSB))
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

enum tool { LLVM_SYMBOLIZER, ADDR2LINE };

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
	uint64_t bias = load_bias(obj->path);
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

/* Find, then symbolize, every object; one note on stderr for each that fails. */
static void symbolize_objects(struct job *job, const struct tools *tools)
{
	for (size_t i = 0; i < job->nobjects; i++) {
		struct object *obj = &job->objects[i];
		size_t n = 0, resolved = 0;
		int rc = -1;

		/* Distinct offsets, sorted. */
		qsort(obj->offsets, obj->n, sizeof(*obj->offsets), cmp_u64);
		for (size_t k = 0; k < obj->n; k++)
			if (!n || obj->offsets[n - 1] != obj->offsets[k])
				obj->offsets[n++] = obj->offsets[k];
		obj->n = n;

		obj->path = find_object(job, obj->name);
		if (!obj->path) {
			gg_cli_error("symbolize: %s: not found (looked in %sthe current directory, "
				     "LD_LIBRARY_PATH, PATH); left as it is", obj->name,
				     job->ndirs ? "each -d DIR, " : "");
			continue;
		}
		if (tools->path[LLVM_SYMBOLIZER])
			rc = run_tool(LLVM_SYMBOLIZER, tools->path[LLVM_SYMBOLIZER], obj);
		if (rc && tools->path[ADDR2LINE])
			rc = run_tool(ADDR2LINE, tools->path[ADDR2LINE], obj);
		if (rc) {
			gg_cli_error("symbolize: %s: %s failed on it; left as it is", obj->path,
				     !tools->path[ADDR2LINE] ? tool_name[LLVM_SYMBOLIZER]
				     : !tools->path[LLVM_SYMBOLIZER] ? tool_name[ADDR2LINE]
				     : "llvm-symbolizer and addr2line");
			continue;
		}
		for (size_t k = 0; k < obj->n; k++)
			resolved += obj->lines[k] != NULL;
		if (!resolved)
			gg_cli_error("symbolize: %s: no line information for %s (built without "
				     "-g?)", obj->path,
				     obj->n == 1 ? "its address" : "any of its addresses");
	}
}

/* "FILE:LINE" of a location, or NULL. */
static const char *answer_of(const struct job *job, const struct loc *l)
{
	const struct object *obj = &job->objects[l->object];
	size_t lo = 0, hi = obj->n;

	if (!obj->lines)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (obj->offsets[mid] < l->offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < obj->n && obj->offsets[lo] == l->offset ? obj->lines[lo] : NULL;
}

/* ---- the log ---------------------------------------------------------------- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
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
		sp->offset = strtoull(t + h + 3, NULL, 16); /* stops at the first non-hex */
		return true;
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

static void scan_log(struct job *job, const char *t, size_t len)
{
	for (size_t ls = 0; ls < len;) {
		const char *nl = memchr(t + ls, '\n', len - ls);
		size_t le = nl ? (size_t)(nl - t) : len, from = ls;
		struct span a, b;

		while (next_span(t, from, le, ls, &a)) {
			from = a.end;
			if (!good_end(t, a.end, le))
				continue;
			/* "SYMBOL+0xOFF (OBJECT+0xOFF)": the object is in the parentheses. */
			if (a.end + 2 < le && t[a.end] == ' ' && t[a.end + 1] == '(' &&
			    next_span(t, a.end + 2, le, ls, &b) && b.name == a.end + 2 &&
			    b.end < le && t[b.end] == ')') {
				if (!done_already(t, b.end + 1, le))
					add_loc(job, t + b.name, b.plus - b.name, b.offset,
						b.end + 1);
				from = b.end + 1;
				continue;
			}
			/* A symbol whose object was cut ("f+0x9 (libhelper.so+0x..."). */
			if (a.end + 1 < le && t[a.end] == ' ' && t[a.end + 1] == '(')
				continue;
			/* "(OBJECT+0xOFF)" alone, or "OBJECT+0xOFF". */
			bool in_parens = a.name > ls && t[a.name - 1] == '(' && a.end < le &&
					 t[a.end] == ')';
			size_t at = in_parens ? a.end + 1 : a.end;

			if (!done_already(t, at, le))
				add_loc(job, t + a.name, a.plus - a.name, a.offset, at);
			from = at;
		}
		ls = le + 1;
	}
}

/* ---- the JSON summary --------------------------------------------------------- */

static bool hex_string(const struct gg_json *v, uint64_t *out)
{
	const char *s = gg_json_string(v, NULL);
	char *end;

	if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !is_hex(s[2]))
		return false;
	errno = 0;
	*out = strtoull(s + 2, &end, 16);
	return !*end && !errno;
}

/* Every "site" object with an object and an offset, in document order. */
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
		const struct gg_json *site = m->value, *object;
		uint64_t offset, address;

		if (strcmp(m->key, "site") || !gg_json_is(site, GG_JSON_OBJECT)) {
			scan_json(job, m->value);
			continue;
		}
		object = gg_json_get(site, "object");
		if (!gg_json_is(object, GG_JSON_STRING) || !object->u.string.len ||
		    strlen(object->u.string.s) != object->u.string.len ||
		    !hex_string(gg_json_get(site, "offset"), &offset) ||
		    (hex_string(gg_json_get(site, "address"), &address) && !address) ||
		    gg_json_get(site, "line"))
			continue;
		add_loc(job, object->u.string.s, object->u.string.len, offset,
			site->u.object.members[site->u.object.len - 1].value->end);
	}
}

/* Length of the valid UTF-8 sequence at @s, 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	uint32_t cp, min;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* @s as the body of a JSON string; a byte that is not UTF-8 becomes \u00XX,
 * as the shim writes it, so the document stays valid. */
static void put_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_len(p);

		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f || !n)
			fprintf(f, "\\u%04x", *p);
		else
			fwrite(p, 1, n, f);
		p += n ? n : 1;
	}
}

/* ---- the command ----------------------------------------------------------- */

static void free_job(struct job *job)
{
	for (size_t i = 0; i < job->nobjects; i++) {
		struct object *obj = &job->objects[i];

		for (size_t k = 0; obj->lines && k < obj->n; k++)
			free(obj->lines[k]);
		free(obj->lines);
		free(obj->offsets);
		free(obj->name);
		free(obj->path);
	}
	free(job->objects);
	free(job->locs);
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
	char *text = NULL;
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
				     a);
			goto out;
		} else if (file) {
			gg_cli_error("symbolize: one FILE at most ('%s' and '%s' given)", file, a);
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
		gg_cli_error("symbolize: %s: cannot read: %s", file, strerror(errno));
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
				     file, err.line, err.column, err.message);
		}
	}
	if (!json)
		scan_log(&job, text, len);
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

	/* The input, with each answer inserted at its place. */
	pos = 0;
	for (size_t i = 0; i < job.nlocs; i++) {
		const struct loc *l = &job.locs[i];
		const char *answer = answer_of(&job, l);

		if (!answer)
			continue;
		fwrite(text + pos, 1, l->at - pos, stdout);
		pos = l->at;
		if (json) {
			fputs(", \"line\": \"", stdout);
			put_json_string(stdout, answer);
			fputs("\"", stdout);
		} else {
			printf(" at %s", answer);
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
