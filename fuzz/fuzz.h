/* What the fuzz targets share (docs/hacking.md, "Fuzzing"): libFuzzer's entry
 * points, which fuzz/replay.c also calls where there is no libFuzzer, and a
 * private scratch directory for the targets whose parser reads a file. */
#ifndef GG_FUZZ_FUZZ_H
#define GG_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* "DIR/@name" in a directory of this process's own, made on the first call
 * (under $TMPDIR, else /tmp) and removed at exit; the text lives until the
 * next call. Aborts when no directory can be made: a target that cannot
 * write its input tests nothing. */
const char *gg_fuzz_path(const char *name);

/* Write @size bytes of @data to the file @path, replacing it. Aborts on a
 * failure. */
void gg_fuzz_write(const char *path, const void *data, size_t size);

#endif
