/* Time per image preflight read of a big fatbin (BENCHMARKS.md, "Image
 * preflight"): from memory with its size, from memory with SIZE_MAX (every
 * read through process_vm_readv), and from its file (pread).
 *
 *     bench-image FATBIN [READS]
 *
 * Prints one line per way: the median over 5 runs of READS reads, in ns. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "audit/image.h"

#define RUNS 5

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of RUNS runs of @reads reads, in ns per read; 0 read, 1 file. */
static double measure(int way, const char *path, const void *image, size_t size, long reads)
{
	double runs[RUNS];
	struct gg_image_info info;

	for (int r = 0; r < RUNS; r++) {
		double t0 = now_ns();

		for (long i = 0; i < reads; i++) {
			int rc = way == 2 ? gg_image_read_file(path, &info)
					  : gg_image_read(image, way ? SIZE_MAX : size, &info);

			if (rc) {
				fprintf(stderr, "bench-image: read %d failed: %d\n", way, rc);
				exit(1);
			}
		}
		runs[r] = (now_ns() - t0) / (double)reads;
	}
	qsort(runs, RUNS, sizeof(runs[0]), cmp_double);
	return runs[RUNS / 2];
}

int main(int argc, char **argv)
{
	static const char *const ways[] = { "memory, size given", "memory, SIZE_MAX", "file" };
	struct gg_image_info info;
	char text[256];
	long reads = argc > 2 ? atol(argv[2]) : 20000;
	unsigned char *image;
	struct stat st;
	FILE *f;

	if (argc < 2 || reads <= 0) {
		fprintf(stderr, "usage: bench-image FATBIN [READS]\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f || fstat(fileno(f), &st) != 0 || !(image = malloc((size_t)st.st_size)) ||
	    fread(image, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		perror(argv[1]);
		return 1;
	}
	fclose(f);
	if (gg_image_read(image, (size_t)st.st_size, &info) != 0) {
		fprintf(stderr, "bench-image: %s is not an image it reads\n", argv[1]);
		return 1;
	}
	gg_image_archs_text(&info, text, sizeof(text));
	printf("image: %lld bytes, %u archs (%s)\n", (long long)st.st_size, info.narchs, text);
	for (int way = 0; way < 3; way++)
		printf("%s: %.0f ns per read\n", ways[way],
		       measure(way, argv[1], image, (size_t)st.st_size, reads));
	free(image);
	return 0;
}
