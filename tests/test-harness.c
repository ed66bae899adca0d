/* The tests' own fixtures (harness.c): a test directory goes away with its
 * test, also when the test fails, and only with the process that made it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* A child that makes a test directory with a file and a subdirectory in it,
 * tells its path, and ends as a failed assertion ends a test: through exit. */
static void make_and_fail(char *dir, size_t cap)
{
	int fds[2], status = 0;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char path[128];

		close(fds[0]);
		gg_test_dir(dir, cap);
		snprintf(path, sizeof(path), "%s/sub", dir);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/sub/file", dir);
		fclose(fopen(path, "w"));
		(void)!write(fds[1], dir, cap);
		exit(1);
	}
	close(fds[1]);
	cr_assert_eq(read(fds[0], dir, cap), (ssize_t)cap);
	close(fds[0]);
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

Test(harness, a_test_directory_is_removed_with_all_it_holds_when_its_test_fails)
{
	char dir[64] = "";

	make_and_fail(dir, sizeof(dir));
	cr_assert_neq(dir[0], '\0');
	cr_assert(!exists(dir), "%s is still there", dir);
}

Test(harness, a_forked_child_ending_leaves_its_parents_test_directory)
{
	char dir[64], path[128];
	int status = 0;
	FILE *f;
	pid_t pid;

	gg_test_dir(dir, sizeof(dir));
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		exit(0);
	waitpid(pid, &status, 0);
	cr_assert(exists(dir), "%s went with the child", dir);
	snprintf(path, sizeof(path), "%s/kept", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fclose(f);
}

Test(harness, a_test_directory_removed_early_is_gone_at_once)
{
	char dir[64];

	gg_test_dir(dir, sizeof(dir));
	gg_test_dir_remove(dir);
	cr_assert(!exists(dir), "%s is still there", dir);
}
