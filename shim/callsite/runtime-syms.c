/* The CUDA runtime's functions in a statically linked program, by name. */
#include "callsite/runtime-syms.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the runtime's presence leaves in a stripped file: one of the names of
 * its own entry points, a reserved identifier, which no program has reason to
 * hold as a string (a program that calls it has it as a symbol, in .dynstr or
 * .strtab, never in .rodata). */
static const char runtime_marker[] = "__cudaRegisterFatBinary";

void gg_globs_parse(struct gg_globs *g, const char *list)
{
	char *save = NULL, *tok;

	snprintf(g->buf, sizeof(g->buf), "%s", list);
	g->n = 0;
	for (tok = strtok_r(g->buf, ",", &save); tok && g->n < GG_GLOBS_MAX;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		g->prefix[g->n] = strcspn(tok, "*?[\\");
		g->item[g->n++] = tok;
	}
}

bool gg_globs_match(const struct gg_globs *g, const char *s)
{
	for (int i = 0; i < g->n; i++)
		/* The literal prefix first: most names fail it without fnmatch. */
		if (!strncmp(g->item[i], s, g->prefix[i]) && fnmatch(g->item[i], s, 0) == 0)
			return true;
	return false;
}

bool gg_ranges_hold(const struct gg_ranges *r, uint64_t value)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->range[mid][1] <= value)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n && r->range[lo][0] <= value;
}

void gg_ranges_free(struct gg_ranges *r)
{
	free(r->range);
	r->range = NULL;
	r->n = 0;
}

/* ---- kernel launch stubs ---- */

bool gg_runtime_symbol_key(const char *name, char *key)
{
	bool mangled = name[0] == '_' && name[1] == 'Z';
	size_t n = 0;

	for (const char *c = name; *c; c++) {
		/* "L" before a name's length marks internal linkage, which the stub's
		 * copy of the kernel's name leaves out: _ZN2nsL2tkIfEEvPT_ is the
		 * function of the stub _ZL31__device_stub__ZN2ns2tkIfEEvPT_Pf. */
		if (mangled && *c == 'L' && c[1] >= '0' && c[1] <= '9')
			continue;
		if (n + 1 >= GG_RUNTIME_KEY_MAX)
			return false;
		key[n++] = *c;
	}
	key[n] = '\0';
	return true;
}

int gg_runtime_stub_keys(const char *stub, char keys[2][GG_RUNTIME_KEY_MAX])
{
	static const char tag[] = "__device_stub__";
	const size_t tag_len = sizeof(tag) - 1;
	const char *kernel; /* the kernel's mangled name, less its "_" */
	size_t len, m;
	char *end;
	int n = 0;

	/* "_Z<length>__device_stub__<kernel><parameters>" (or "_ZL..."): the
	 * length bounds the copy of the kernel's name. */
	if (strncmp(stub, "_Z", 2))
		return 0;
	stub += stub[2] == 'L' ? 3 : 2;
	if (*stub < '1' || *stub > '9')
		return 0;
	len = strtoul(stub, &end, 10);
	if (len <= tag_len || len + 2 > GG_RUNTIME_KEY_MAX || strncmp(end, tag, tag_len) ||
	    strnlen(end, len) < len)
		return 0;
	kernel = end + tag_len;
	len -= tag_len;
	if (kernel[0] != 'Z')
		return 0;
	/* A C++ kernel's function: "_" and the copy. */
	keys[n][0] = '_';
	memcpy(keys[n] + 1, kernel, len);
	keys[n][len + 1] = '\0';
	if (gg_runtime_symbol_key(keys[n], keys[n]))
		n++;
	/* An extern "C" kernel's copy is mangled all the same ("Z2ckPi"); its
	 * function is the plain name ("ck"). */
	if (kernel[1] >= '1' && kernel[1] <= '9') {
		m = strtoul(kernel + 1, &end, 10);
		if (m && (size_t)(end - kernel) + m <= len) {
			memcpy(keys[n], end, m);
			keys[n][m] = '\0';
			n++;
		}
	}
	return n;
}

/* ---- the ranges ---- */

/* A kernel whose launch stub is skipped, by the key of its host function. */
struct kernel_key {
	char *key;
	uint32_t stub; /* which stub: its C++ and its extern "C" keys share it */
	bool plain;    /* the extern "C" reading of the stub's name */
};

struct build {
	const struct gg_globs *skip;
	struct gg_ranges *out;
	size_t cap;
	struct kernel_key *keys; /* sorted by key for pass 2 */
	size_t nkeys, keys_cap;
	uint32_t nstubs;
	bool *cxx_found; /* per stub: its C++ reading names a function */
	struct plain {
		uint64_t value, size;
		uint32_t stub;
	} * plain; /* functions the extern "C" readings name */
	size_t nplain, plain_cap;
	bool oom;
};

/* @p, grown if need be to hold more than @n items of @size (capacity *@cap);
 * NULL when out of memory, and @p is left as it was. */
static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	size_t want = *cap ? *cap * 2 : 64;

	if (n < *cap)
		return p;
	p = realloc(p, want * size);
	if (p)
		*cap = want;
	return p;
}

static void add_range(struct build *b, uint64_t value, uint64_t size)
{
	struct gg_ranges *r = b->out;
	void *range;

	if (!size || value + size < value)
		return;
	range = grow(r->range, &b->cap, r->n, sizeof(*r->range));
	if (!range) {
		b->oom = true;
		return;
	}
	r->range = range;
	r->range[r->n][0] = value;
	r->range[r->n][1] = value + size;
	r->n++;
}

/* Pass 1: the functions the globs name, and the kernels of the launch stubs
 * among them. */
static int by_name(void *ctx, const char *name, uint64_t value, uint64_t size)
{
	struct build *b = ctx;
	char keys[2][GG_RUNTIME_KEY_MAX];
	int n;

	if (!gg_globs_match(b->skip, name))
		return 0;
	add_range(b, value, size);
	n = gg_runtime_stub_keys(name, keys);
	for (int i = 0; i < n; i++) {
		struct kernel_key *grown = grow(b->keys, &b->keys_cap, b->nkeys, sizeof(*b->keys));
		char *copy = grown ? strdup(keys[i]) : NULL;

		if (grown)
			b->keys = grown;
		if (!copy) {
			b->oom = true;
			return 0;
		}
		b->keys[b->nkeys++] = (struct kernel_key){ copy, b->nstubs, i == 1 };
	}
	b->nstubs += n > 0;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct kernel_key *)a)->key, ((const struct kernel_key *)b)->key);
}

/* Pass 2: the kernels' host functions. Unoptimised code keeps their frames,
 * which say nothing the frame that called them does not. */
static int by_stub(void *ctx, const char *name, uint64_t value, uint64_t size)
{
	struct build *b = ctx;
	char key[GG_RUNTIME_KEY_MAX];
	struct kernel_key want = { .key = key };
	const struct kernel_key *k, *first;
	void *plain;

	if (!gg_runtime_symbol_key(name, key) ||
	    !(k = bsearch(&want, b->keys, b->nkeys, sizeof(*b->keys), cmp_key)))
		return 0;
	for (first = k; first > b->keys && !cmp_key(first - 1, &want); first--)
		;
	for (k = first; k < b->keys + b->nkeys && !cmp_key(k, &want); k++) {
		if (!k->plain) {
			b->cxx_found[k->stub] = true;
			add_range(b, value, size);
		} else if ((plain = grow(b->plain, &b->plain_cap, b->nplain, sizeof(*b->plain)))) {
			b->plain = plain;
			b->plain[b->nplain++] = (struct plain){ value, size, k->stub };
		} else {
			b->oom = true;
		}
	}
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

int gg_runtime_ranges(const struct gg_elf *e, const struct gg_globs *skip, struct gg_ranges *out)
{
	const Elf64_Shdr *symtab = gg_elf_section(e, NULL, SHT_SYMTAB);
	struct build b = { .skip = skip, .out = out };
	size_t n = 0;
	int err;

	out->range = NULL;
	out->n = 0;
	if (!symtab)
		return -ENOENT;
	err = gg_elf_functions(e, symtab, by_name, &b);
	if (!err && b.nkeys && !b.oom && (b.cxx_found = calloc(b.nstubs, sizeof(bool)))) {
		qsort(b.keys, b.nkeys, sizeof(*b.keys), cmp_key);
		err = gg_elf_functions(e, symtab, by_stub, &b);
		/* An extern "C" reading counts only where the C++ one named nothing:
		 * a C function may share a C++ kernel's plain name. */
		for (size_t i = 0; !err && i < b.nplain; i++)
			if (!b.cxx_found[b.plain[i].stub])
				add_range(&b, b.plain[i].value, b.plain[i].size);
	}
	for (size_t i = 0; i < b.nkeys; i++)
		free(b.keys[i].key);
	free(b.keys);
	free(b.cxx_found);
	free(b.plain);
	if (!err && b.oom)
		err = -ENOMEM;
	if (err) {
		gg_ranges_free(out);
		return err;
	}
	/* Sorted and merged, so a lookup is one binary search. */
	if (out->n)
		qsort(out->range, out->n, sizeof(*out->range), cmp_range);
	for (size_t i = 0; i < out->n; i++) {
		if (n && out->range[i][0] <= out->range[n - 1][1]) {
			if (out->range[i][1] > out->range[n - 1][1])
				out->range[n - 1][1] = out->range[i][1];
			continue;
		}
		out->range[n][0] = out->range[i][0];
		out->range[n++][1] = out->range[i][1];
	}
	out->n = n;
	return 0;
}

int gg_runtime_linked(const struct gg_elf *e)
{
	const Elf64_Shdr *rodata = gg_elf_section(e, ".rodata", 0);

	return rodata ? gg_elf_section_holds(e, rodata, runtime_marker, sizeof(runtime_marker)) : 0;
}
