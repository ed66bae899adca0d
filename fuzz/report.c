/* Fuzz target: the gpuguard command's JSON reader (tools/json.c) and
 * `gpuguard report` (tools/cmd-report.c, tools/report-ci.c) on hostile
 * summaries. The first byte chooses what runs: bit 0 a second summary (the
 * bytes after the input's first NUL, or the first summary again when there
 * is none: two processes merged), bit 1 --junit, bit 2 --sarif, bit 3
 * --require-coverage. The report goes to /dev/null. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char **argv[])
{
	(void)argc;
	(void)argv;
	if (!freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

/* Every lookup helper on every value of the tree: none may trip on a type. */
static void walk(const struct gg_json *v, unsigned depth)
{
	if (depth > GG_JSON_MAX_DEPTH + 1)
		abort();
	(void)gg_json_u64(v, 0);
	(void)gg_json_number(v, 0);
	(void)gg_json_string(v, NULL);
	(void)gg_json_get(v, "pid");
	for (size_t i = 0; i < gg_json_length(v); i++) {
		if (gg_json_is(v, GG_JSON_OBJECT))
			walk(v->u.object.members[i].value, depth + 1);
		else
			walk(gg_json_at(v, i), depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[10], a[4096], b[4096], junit[4096], sarif[4096];
	const char *text = (const char *)data + 1;
	const uint8_t *nul;
	size_t len_a, mode;
	int argc = 0;
	struct gg_json_error err;
	struct gg_json *root;

	if (size < 1)
		return 0;
	mode = data[0];
	size--;
	nul = memchr(text, '\0', size);
	len_a = nul ? (size_t)(nul - (const uint8_t *)text) : size;
	root = gg_json_parse(text, size, &err);
	walk(root, 0);
	gg_json_free(root);

	snprintf(a, sizeof(a), "%s", gg_fuzz_path("a.json"));
	snprintf(b, sizeof(b), "%s", gg_fuzz_path("b.json"));
	snprintf(junit, sizeof(junit), "%s", gg_fuzz_path("out.xml"));
	snprintf(sarif, sizeof(sarif), "%s", gg_fuzz_path("out.sarif"));
	unlink(junit);
	unlink(sarif);
	gg_fuzz_write(a, text, len_a);
	if (nul)
		gg_fuzz_write(b, text + len_a + 1, size - len_a - 1);
	argv[argc++] = "report";
	if (mode & 2) {
		argv[argc++] = "--junit";
		argv[argc++] = junit;
	}
	if (mode & 4) {
		argv[argc++] = "--sarif";
		argv[argc++] = sarif;
	}
	if (mode & 8)
		argv[argc++] = "--require-coverage";
	argv[argc++] = a;
	if (mode & 1)
		argv[argc++] = nul ? b : a;
	argv[argc] = NULL;
	int status = gg_cmd_report(argc, argv);

	if (status < 0 || status > 2)
		abort();
	return 0;
}
