/* gc-json FILE PATH: print one value of a JSON document, for scripts/gpu-check
 * on machines without Python. PATH is dotted: "unresolved.0.site.symbol".
 * A string is printed as is, a number as written, true/false/null as such,
 * an array or object as its length. "" or "." is the whole document.
 * Exit status: 0 found, 1 no such value, 2 the file is missing or not JSON.
 * Built with the gpuguard command's own reader (tools/json.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static int is_index(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct gg_json_error err;
	struct gg_json *root;
	const struct gg_json *v;
	char *path, *save = NULL, *tok;
	int status = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: gc-json FILE PATH\n");
		return 2;
	}
	root = gg_json_parse_file(argv[1], &err);
	if (!root) {
		if (err.line)
			fprintf(stderr, "gc-json: %s:%u:%u: %s\n", argv[1], err.line, err.column,
				err.message);
		else
			fprintf(stderr, "gc-json: %s: %s\n", argv[1], err.message);
		return 2;
	}
	path = strdup(argv[2]);
	v = root;
	for (tok = strtok_r(path, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save))
		v = gg_json_is(v, GG_JSON_ARRAY) && is_index(tok)
			    ? gg_json_at(v, strtoul(tok, NULL, 10))
			    : gg_json_get(v, tok);
	if (!v) {
		status = 1;
	} else {
		switch (v->type) {
		case GG_JSON_NULL:
			puts("null");
			break;
		case GG_JSON_BOOL:
			puts(v->u.boolean ? "true" : "false");
			break;
		case GG_JSON_NUMBER:
			puts(v->u.number.text);
			break;
		case GG_JSON_STRING:
			puts(v->u.string.s);
			break;
		default:
			printf("%zu\n", gg_json_length(v));
			break;
		}
	}
	free(path);
	gg_json_free(root);
	return status;
}
