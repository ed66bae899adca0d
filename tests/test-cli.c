/* The gpuguard command: running a program, scan and bisect. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define RZ GG_APPS "/app-redzone"

/* The command runs with the fake driver's directory on LD_LIBRARY_PATH. (A
 * sanitized shim brings its runtime as a dependency; the harness tells ASan
 * not to insist on coming first.) */
static void cli(struct gg_run *r, const char *const *env, const char *const *argv)
{
	const char *envp[16];
	size_t k = 0;

	envp[k++] = "GG_TEST_PTX=" GG_PTX;
	for (; env && *env; env++)
		envp[k++] = *env;
	envp[k] = NULL;
	gg_run(r, GG_RUN_FAKE, envp, argv);
}

/* ---- gpuguard -- PROGRAM ---- */

Test(cli, runs_the_program_under_the_shim_with_options_mapped)
{
	char dir[64], json[128], json_opt[160];
	struct gg_run r;

	gg_tmpdir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/s.json", dir);
	snprintf(json_opt, sizeof(json_opt), "--json=%s", json);
	cli(&r, NULL, (const char *[]){ GG_CLI, "--redzone", "48", "--fill", "0x5a", json_opt,
					"--boundary", "sync:2", "--verbosity", "2", "--", RZ,
					"alloc:64", "band:0:48", "poke:0:1", "sync", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_neq(strstr(r.out, "band 0: 5a 5a"), NULL, "%s", r.out);
	cr_assert_eq(gg_count_lines(r.err, "red zone of 48 bytes"), 1, "%s", r.err);
	char *v = gg_json(json, "(j['config']['redzone'], j['config']['fill'], j['seals'], "
				"[x['detected_by'] for x in j['violations']])");

	cr_assert_str_eq(v, "(48, 90, 1, ['scan'])");
	free(v);
	gg_run_free(&r);
	snprintf(json, sizeof(json), "rm -rf %s", dir);
	cr_assert_eq(system(json), 0);
}

Test(cli, passes_the_programs_exit_status_through)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "--", "/bin/sh", "-c", "exit 7", NULL });
	cr_assert_eq(gg_run_exit(&r), 7, "%s", r.err);
	gg_run_free(&r);
	cli(&r, NULL, (const char *[]){ GG_CLI, "--redzone=16", "--exitcode", "42", "--", RZ,
					"alloc:64", "overrun:0:1", NULL });
	cr_assert_eq(gg_run_exit(&r), 42, "%s", r.err);
	gg_run_free(&r);
}

Test(cli, puts_the_shim_before_an_existing_preload)
{
	struct gg_run r;

	cli(&r, (const char *[]){ "LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6", NULL },
	    (const char *[]){ GG_CLI, "--", "/bin/sh", "-c", "echo \"$LD_PRELOAD\"", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_eq(strncmp(r.out, "/", 1), 0, "%s", r.out);
	cr_assert_neq(strstr(r.out, "libgpuguard.so:"), NULL, "%s", r.out);
	cr_assert_neq(strstr(r.out, ":/lib/x86_64-linux-gnu/libm.so.6\n"), NULL, "%s", r.out);
	gg_run_free(&r);
}

Test(cli, an_unknown_option_is_named)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "--redzon", "64", "--", "/bin/true", NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	cr_assert_str_eq(r.err, "gpuguard: unknown option '--redzon' (see gpuguard --help)\n");
	gg_run_free(&r);
}

Test(cli, a_bad_value_is_named)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "--fill", "300", "--", "/bin/true", NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	cr_assert_str_eq(r.err, "gpuguard: --fill: \"300\" is not a valid value (expected a byte "
				"value from 0 to 255 (0x00 to 0xff))\n");
	gg_run_free(&r);
	cli(&r, NULL, (const char *[]){ GG_CLI, "--json", NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	cr_assert_str_eq(r.err, "gpuguard: --json needs a value\n");
	gg_run_free(&r);
}

Test(cli, a_missing_program_is_an_error)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "--redzone", "64", "--", NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	cr_assert_str_eq(r.err, "gpuguard: no program to run after --\n");
	gg_run_free(&r);
	cli(&r, NULL, (const char *[]){ GG_CLI, "--", "/nonexistent/program", NULL });
	cr_assert_eq(gg_run_exit(&r), 127);
	cr_assert_str_eq(r.err, "gpuguard: cannot run /nonexistent/program: No such file or directory\n");
	gg_run_free(&r);
}

Test(cli, help_and_version)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "--help", NULL });
	cr_assert_eq(gg_run_exit(&r), 0);
	cr_assert_neq(strstr(r.out, "usage: gpuguard [OPTIONS] -- PROGRAM"), NULL);
	cr_assert_neq(strstr(r.out, "--expected-absent FILE"), NULL);
	gg_run_free(&r);
	cli(&r, NULL, (const char *[]){ GG_CLI, "--version", NULL });
	cr_assert_eq(gg_run_exit(&r), 0);
	cr_assert_eq(strncmp(r.out, "gpuguard ", 9), 0, "%s", r.out);
	gg_run_free(&r);
	cli(&r, NULL, (const char *[]){ GG_CLI, NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	gg_run_free(&r);
}

Test(cli, run_refuses_a_report_file_it_could_not_write_before_running_the_program)
{
	char dir[64], opt[160], want[512];
	struct gg_run r;

	gg_tmpdir(dir, sizeof(dir));
	snprintf(opt, sizeof(opt), "--json=%s/out/gpuguard.%%p.json", dir);
	cli(&r, NULL, (const char *[]){ GG_CLI, opt, "--", "/bin/sh", "-c", "echo ran", NULL });
	cr_assert_eq(gg_run_exit(&r), 2, "%s", r.err);
	cr_assert_str_eq(r.out, "", "the program ran");
	snprintf(want, sizeof(want), "gpuguard: --json: cannot write \"%s/out/gpuguard.%%p.json\": "
		 "the directory \"%s/out\" does not exist (create it first)\n", dir, dir);
	cr_assert_str_eq(r.err, want);
	gg_run_free(&r);

	snprintf(opt, sizeof(opt), "%s", dir);
	cli(&r, NULL, (const char *[]){ GG_CLI, "--log", opt, "--", "/bin/sh", "-c", "echo ran", NULL });
	cr_assert_eq(gg_run_exit(&r), 2, "%s", r.err);
	snprintf(want, sizeof(want), "gpuguard: --log: \"%s\" is a directory; expected a file name; "
		 "%%p becomes the pid\n", dir);
	cr_assert_str_eq(r.err, want);
	gg_run_free(&r);

	snprintf(opt, sizeof(opt), "touch '%s/file'", dir);
	cr_assert_eq(system(opt), 0);
	snprintf(opt, sizeof(opt), "%s/file/m.prom", dir);
	cli(&r, NULL, (const char *[]){ GG_CLI, "--metrics", opt, "--", "/bin/true", NULL });
	cr_assert_eq(gg_run_exit(&r), 2, "%s", r.err);
	snprintf(want, sizeof(want), "gpuguard: --metrics: cannot write \"%s/file/m.prom\": the "
		 "directory \"%s/file\": Not a directory\n", dir, dir);
	cr_assert_str_eq(r.err, want);
	gg_run_free(&r);

	/* Where it can be written, it runs. */
	snprintf(opt, sizeof(opt), "--json=%s/s.%%p.json", dir);
	cli(&r, NULL, (const char *[]){ GG_CLI, opt, "--", "/bin/sh", "-c", "echo ran", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_str_eq(r.out, "ran\n");
	gg_run_free(&r);
	snprintf(opt, sizeof(opt), "rm -rf '%s'", dir);
	cr_assert_eq(system(opt), 0);
}

/* ---- gpuguard scan ---- */

Test(cli, scan_sends_the_configured_signal_and_the_process_scans)
{
	char dir[64], json[128], go[128], env_json[160], step[160], pid[32];
	struct gg_spawn s;
	struct gg_run r, scan;

	gg_tmpdir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/s.json", dir);
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(env_json, sizeof(env_json), "GPUGUARD_SUMMARY_JSON=%s", json);
	snprintf(step, sizeof(step), "wait:%s", go);
	gg_spawn(&s, GG_RUN_SHIM | GG_RUN_FAKE,
		 (const char *[]){ env_json, "GPUGUARD_REDZONE=16", "GPUGUARD_SIGNAL=USR2",
				   "GG_TEST_PTX=" GG_PTX, NULL },
		 (const char *[]){ RZ, "alloc:64", "overrun:0:2", "sync", step, NULL });
	cr_assert(gg_spawn_wait_output(&s, "synced\n", 30));
	snprintf(pid, sizeof(pid), "%d", s.pid);
	cli(&scan, NULL, (const char *[]){ GG_CLI, "scan", pid, NULL });
	cr_assert_eq(gg_run_exit(&scan), 0, "%s", scan.err);
	cr_assert_neq(strstr(scan.out, "sent SIGUSR2 to process"), NULL, "%s", scan.out);
	cr_assert(gg_wait_file(json, 30), "the process never scanned");
	char *v = gg_json(json, "[x['detected_by'] for x in j['violations']]");

	cr_assert_str_eq(v, "['scan']");
	free(v);
	fclose(fopen(go, "w"));
	gg_spawn_finish(&s, &r);
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	gg_run_free(&r);
	gg_run_free(&scan);
	snprintf(json, sizeof(json), "rm -rf %s", dir);
	cr_assert_eq(system(json), 0);
}

Test(cli, scan_refuses_what_it_cannot_do)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "scan", "4194304", NULL });
	cr_assert_eq(gg_run_exit(&r), 1);
	cr_assert_str_eq(r.err, "gpuguard: scan: no process 4194304\n");
	gg_run_free(&r);
	cli(&r, NULL, (const char *[]){ GG_CLI, "scan", NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	gg_run_free(&r);
	/* What the shim refuses is no signal to send either. */
	cli(&r, NULL, (const char *[]){ GG_CLI, "scan", "--signal", "11", "1", NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	cr_assert_str_eq(r.err, "gpuguard: scan: --signal: \"11\" is not a signal gpuguard listens "
				"to (SIGSEGV reports a crash, it is no boundary; expected USR1, USR2 "
				"or a signal number other than KILL, STOP, SEGV, BUS, FPE, ILL and "
				"ABRT)\n");
	gg_run_free(&r);
	cli(&r, NULL, (const char *[]){ GG_CLI, "scan", "--wait", "--timeout", "0", "1", NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	cr_assert_neq(strstr(r.err, "--timeout: \"0\" is not a valid value"), NULL, "%s", r.err);
	gg_run_free(&r);
}

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fclose(f);
}

/* A shell that takes SIGUSR2 itself ("got USR2") and runs until @go exists. */
static const char trapping_script[] =
	"trap 'echo got USR2' USR2; echo ready; while [ ! -e \"$1\" ]; do sleep 0.01; done; echo done";

Test(cli, scan_refuses_a_process_without_the_shim)
{
	char dir[64], sh[128], go[128], pid[32], cmd[256];
	struct gg_spawn s;
	struct gg_run r, target;

	/* A program run from a checkout named libgpuguard, and GPUGUARD_SIGNAL
	 * exported in its shell, but no shim: its own handler must not run. */
	gg_tmpdir(dir, sizeof(dir));
	snprintf(sh, sizeof(sh), "%s/libgpuguard/sh", dir);
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(cmd, sizeof(cmd), "mkdir '%s/libgpuguard' && cp /bin/sh '%s'", dir, sh);
	cr_assert_eq(system(cmd), 0);
	gg_spawn(&s, 0, (const char *[]){ "GPUGUARD_SIGNAL=USR2", NULL },
		 (const char *[]){ sh, "-c", trapping_script, "sh", go, NULL });
	cr_assert(gg_spawn_wait_output(&s, "ready\n", 30));
	snprintf(pid, sizeof(pid), "%d", s.pid);
	cli(&r, NULL, (const char *[]){ GG_CLI, "scan", pid, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s%s", r.out, r.err);
	snprintf(cmd, sizeof(cmd), "gpuguard: scan: process %s has no libgpuguard.so loaded (it was "
		 "not started under gpuguard or with LD_PRELOAD): a signal would reach the program "
		 "itself; nothing sent\n", pid);
	cr_assert_str_eq(r.err, cmd);
	cr_assert_str_eq(r.out, "");
	gg_run_free(&r);
	touch(go);
	gg_spawn_finish(&s, &target);
	cr_assert_eq(gg_run_exit(&target), 0, "%s", target.err);
	cr_assert_str_eq(target.out, "ready\ndone\n", "the program was signalled");
	gg_run_free(&target);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* app-redzone under the shim with GPUGUARD_SIGNAL=@signal (and @also, a
 * further variable or NULL), past its first CUDA calls and waiting for @go. */
static void spawn_listening(struct gg_spawn *s, const char *signal, const char *const *also,
			    const char *go, char *pid, size_t cap)
{
	char env_signal[64], step[160];
	const char *env[8] = { env_signal, "GPUGUARD_REDZONE=16", ("GG_TEST_PTX=" GG_PTX) };

	for (size_t i = 0; also && also[i] && 3 + i < sizeof(env) / sizeof(env[0]) - 1; i++)
		env[3 + i] = also[i];
	snprintf(env_signal, sizeof(env_signal), "GPUGUARD_SIGNAL=%s", signal);
	snprintf(step, sizeof(step), "wait:%s", go);
	gg_spawn(s, GG_RUN_SHIM | GG_RUN_FAKE, env, (const char *[]){ RZ, "alloc:64", "sync", step, NULL });
	cr_assert(gg_spawn_wait_output(s, "synced\n", 30));
	snprintf(pid, cap, "%d", s->pid);
}

Test(cli, scan_refuses_a_signal_the_process_does_not_listen_to)
{
	char dir[64], go[128], pid[32], want[512];
	struct gg_spawn s;
	struct gg_run r, target;

	gg_tmpdir(dir, sizeof(dir));
	snprintf(go, sizeof(go), "%s/go", dir);

	/* It listens to USR2: USR1 would kill it. */
	spawn_listening(&s, "USR2", NULL, go, pid, sizeof(pid));
	cli(&r, NULL, (const char *[]){ GG_CLI, "scan", "--signal", "USR1", pid, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.err);
	snprintf(want, sizeof(want), "gpuguard: scan: process %s listens to SIGUSR2 "
		 "(GPUGUARD_SIGNAL=USR2), not to USR1; nothing sent\n", pid);
	cr_assert_str_eq(r.err, want);
	gg_run_free(&r);
	touch(go);
	gg_spawn_finish(&s, &target);
	cr_assert_eq(gg_run_exit(&target), 0, "%s", target.err);
	gg_run_free(&target);
	unlink(go);

	/* GPUGUARD_SIGNAL=11: the shim refused it and installed nothing. */
	spawn_listening(&s, "11", NULL, go, pid, sizeof(pid));
	cli(&r, NULL, (const char *[]){ GG_CLI, "scan", pid, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.err);
	cr_assert_neq(strstr(r.err, "was started with GPUGUARD_SIGNAL=11, which the shim refuses"),
		      NULL, "%s", r.err);
	gg_run_free(&r);
	touch(go);
	gg_spawn_finish(&s, &target);
	cr_assert_eq(gg_run_exit(&target), 0, "%s", target.err);
	cr_assert_eq(gg_count_lines(target.err, "WARN: GPUGUARD_SIGNAL=\"11\""), 1, "%s", target.err);
	gg_run_free(&target);
	snprintf(want, sizeof(want), "rm -rf '%s'", dir);
	cr_assert_eq(system(want), 0);
}

Test(cli, run_refuses_a_signal_the_shim_would_refuse)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "--signal", "SEGV", "--", "/bin/true", NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	cr_assert_str_eq(r.err, "gpuguard: --signal: \"SEGV\" is not a valid value (expected USR1, "
				"USR2 or a signal number other than KILL, STOP, SEGV, BUS, FPE, ILL "
				"and ABRT, or none)\n");
	gg_run_free(&r);
}

Test(cli, scan_refuses_before_the_handler_is_installed)
{
	char dir[64], go[128], pid[32], cmd[128];
	struct gg_spawn s;
	struct gg_run r, target;

	/* A wrapper script under the shim: it never makes a CUDA call, so the
	 * shim never takes USR2, and USR2 would kill it. */
	gg_tmpdir(dir, sizeof(dir));
	snprintf(go, sizeof(go), "%s/go", dir);
	gg_spawn(&s, GG_RUN_SHIM, (const char *[]){ "GPUGUARD_SIGNAL=USR2", NULL },
		 (const char *[]){ "/bin/sh", "-c",
				   "echo ready; while [ ! -e \"$1\" ]; do sleep 0.01; done; echo done",
				   "sh", go, NULL });
	cr_assert(gg_spawn_wait_output(&s, "ready\n", 30));
	snprintf(pid, sizeof(pid), "%d", s.pid);
	cli(&r, NULL, (const char *[]){ GG_CLI, "scan", pid, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.err);
	cr_assert_neq(strstr(r.err, "has libgpuguard.so loaded but no handler for SIGUSR2 yet: the "
				    "shim installs it at the process's first CUDA call"), NULL,
		      "%s", r.err);
	cr_assert_str_eq(r.out, "");
	gg_run_free(&r);
	/* --wait waits for a handler that never comes, and gives up. */
	cli(&r, NULL, (const char *[]){ GG_CLI, "scan", "--wait", "--timeout", "0.3", pid, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.err);
	cr_assert_neq(strstr(r.err, "gpuguard: scan: gave up after 0.3 s, nothing sent: process"),
		      NULL, "%s", r.err);
	gg_run_free(&r);
	touch(go);
	gg_spawn_finish(&s, &target);
	cr_assert_eq(gg_run_exit(&target), 0, "the script was signalled: %s", target.err);
	cr_assert_str_eq(target.out, "ready\ndone\n");
	gg_run_free(&target);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(cli, scan_wait_reports_what_the_boundary_found)
{
	char dir[64], json[128], go[128], env_json[160], step[160], pid[32], want[512];
	struct gg_spawn s;
	struct gg_run r, scan;

	gg_tmpdir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/s.%%p.json", dir);
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(env_json, sizeof(env_json), "GPUGUARD_SUMMARY_JSON=%s", json);
	snprintf(step, sizeof(step), "wait:%s", go);
	gg_spawn(&s, GG_RUN_SHIM | GG_RUN_FAKE,
		 (const char *[]){ env_json, "GPUGUARD_REDZONE=16", "GPUGUARD_SIGNAL=USR2",
				   "GG_TEST_PTX=" GG_PTX, NULL },
		 (const char *[]){ RZ, "alloc:64", "overrun:0:2", "sync", step, NULL });
	cr_assert(gg_spawn_wait_output(&s, "synced\n", 30));
	snprintf(pid, sizeof(pid), "%d", s.pid);
	cli(&scan, NULL, (const char *[]){ GG_CLI, "scan", "--wait", pid, NULL });
	cr_assert_eq(gg_run_exit(&scan), 0, "%s", scan.err);
	snprintf(want, sizeof(want),
		 "gpuguard: sent SIGUSR2 to process %s: it scans its red zones, runs the gate and "
		 "rewrites its reports\n"
		 "gpuguard: process %s ran its boundary (seal 1): 1 red-zone violation (1 new), "
		 "0 required kernels unresolved, 0 late misses; 1 error in all\n"
		 "gpuguard: summary: %s/s.%s.json (gpuguard report shows it all)\n",
		 pid, pid, dir, pid);
	cr_assert_str_eq(scan.out, want);
	gg_run_free(&scan);
	touch(go);
	gg_spawn_finish(&s, &r);
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	gg_run_free(&r);
	snprintf(want, sizeof(want), "rm -rf %s", dir);
	cr_assert_eq(system(want), 0);
}

/* GPUGUARD_DISABLE=2 is no switch the shim knows: it WARNs and stays on,
 * listening, so scan must not refuse as if it were disabled. (--wait: the
 * boundary runs on the shim's watcher thread, which a program told to end
 * at once may not leave time to.) */
Test(cli, scan_reads_gpuguard_disable_as_the_shim_does)
{
	char dir[64], go[128], pid[32], cmd[96], env_json[128];
	struct gg_spawn s;
	struct gg_run r, scan;

	gg_tmpdir(dir, sizeof(dir));
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(env_json, sizeof(env_json), "GPUGUARD_SUMMARY_JSON=%s/s.json", dir);
	spawn_listening(&s, "USR2", (const char *[]){ "GPUGUARD_DISABLE=2", env_json, NULL }, go,
			pid, sizeof(pid));
	cli(&scan, NULL, (const char *[]){ GG_CLI, "scan", "--wait", pid, NULL });
	cr_assert_eq(gg_run_exit(&scan), 0, "%s", scan.err);
	cr_assert_neq(strstr(scan.out, "sent SIGUSR2"), NULL, "%s", scan.out);
	cr_assert_neq(strstr(scan.out, "ran its boundary (seal 1)"), NULL, "%s", scan.out);
	gg_run_free(&scan);
	touch(go);
	gg_spawn_finish(&s, &r);
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "INFO: seal 1 (signal)"), 1, "%s", r.err);
	gg_run_free(&r);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(cli, scan_wait_right_after_starting_the_program_waits_for_its_handler)
{
	char dir[64], json[128], go[128], step[160], pid[32], want[160];
	struct gg_spawn s;
	struct gg_run r, scan;

	/* The man page's "gpuguard --signal USR2 ... -- ./server & gpuguard scan
	 * --wait $!": the pid is gpuguard's until it execs the program, whose
	 * shim takes the signal at its first CUDA call. */
	gg_tmpdir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "--json=%s/s.%%p.json", dir);
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(step, sizeof(step), "wait:%s", go);
	gg_spawn(&s, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
		 (const char *[]){ GG_CLI, "--signal", "USR2", "--redzone", "16", json, "--", RZ,
				   "alloc:64", step, NULL });
	snprintf(pid, sizeof(pid), "%d", s.pid);
	cli(&scan, NULL, (const char *[]){ GG_CLI, "scan", "--wait", "--timeout", "60", pid, NULL });
	cr_assert_eq(gg_run_exit(&scan), 0, "%s", scan.err);
	snprintf(want, sizeof(want), "gpuguard: process %s ran its boundary (seal 1)", pid);
	cr_assert_neq(strstr(scan.out, want), NULL, "%s", scan.out);
	gg_run_free(&scan);
	touch(go);
	gg_spawn_finish(&s, &r);
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "INFO: seal 1 (signal)"), 1, "%s", r.err);
	gg_run_free(&r);
	snprintf(want, sizeof(want), "rm -rf %s", dir);
	cr_assert_eq(system(want), 0);
}

Test(cli, scan_says_when_the_process_is_another_users)
{
	char pid[32], want[160];
	struct gg_spawn s;
	struct gg_run r, sleeper;

	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK))
		cr_skip_test("needs root and setpriv to run gpuguard scan as another user");
	gg_spawn(&s, 0, (const char *[]){ "GPUGUARD_SIGNAL=USR2", NULL },
		 (const char *[]){ "/bin/sleep", "30", NULL });
	snprintf(pid, sizeof(pid), "%d", s.pid);
	cli(&r, NULL, (const char *[]){ "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
					"--clear-groups", GG_CLI, "scan", pid, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.err);
	snprintf(want, sizeof(want), "gpuguard: scan: cannot read /proc/%s/environ: Permission "
		 "denied (the process belongs to another user", pid);
	cr_assert_eq(strncmp(r.err, want, strlen(want)), 0, "%s", r.err);
	gg_run_free(&r);
	cr_assert_eq(kill(s.pid, 0), 0, "the sleeper must still be alive");
	kill(s.pid, SIGTERM);
	gg_spawn_finish(&s, &sleeper);
	gg_run_free(&sleeper);
}

/* ---- gpuguard bisect ---- */

Test(cli, bisect_names_the_allocation_read_past_and_where_it_was_made)
{
	struct gg_run r;

	/* Twelve buffers; the program sums 3 bytes past the end of buffer 7 only. */
	cli(&r, NULL, (const char *[]){ GG_CLI, "bisect", "--", RZ, "alloc:64", "alloc:64", "alloc:64",
					"alloc:64", "alloc:64", "alloc:64", "alloc:64", "alloc:32",
					"alloc:64", "alloc:64", "alloc:64", "alloc:64", "copy:7:0",
					"sum:7:3", "sum:2:0", NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s\n%s", r.out, r.err);
	cr_assert_neq(strstr(r.out, "bisect: allocation #7 is read past its end"), NULL, "%s", r.out);
	cr_assert_neq(strstr(r.out, "bisect: allocation #7 (32 bytes) was made at:"), NULL, "%s", r.out);
	cr_assert_neq(strstr(r.out, "bisect:   #0 redzone_alloc+0x"), NULL, "%s", r.out);
	cr_assert_neq(strstr(r.out, "bisect:   #1 main+0x"), NULL, "%s", r.out);
	gg_run_free(&r);
}

Test(cli, bisect_says_when_no_band_matters)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "bisect", "--", RZ, "alloc:64", "copy:0:0", "sum:0:0",
					NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s\n%s", r.out, r.err);
	cr_assert_neq(strstr(r.out, "the output depends on no guard band"), NULL, "%s", r.out);
	gg_run_free(&r);
}

Test(cli, bisect_needs_a_deterministic_program)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "bisect", "--", "/bin/sh", "-c", "echo $$", NULL });
	cr_assert_eq(gg_run_exit(&r), 2, "%s", r.out);
	cr_assert_neq(strstr(r.err, "two identical runs of /bin/sh gave different output"), NULL,
		      "%s", r.err);
	gg_run_free(&r);
}

Test(cli, bisect_refuses_options_it_would_override)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "bisect", "--poison", "0:1", "--", RZ, NULL });
	cr_assert_eq(gg_run_exit(&r), 2);
	cr_assert_str_eq(r.err, "gpuguard: unknown option '--poison' (see gpuguard --help)\n");
	gg_run_free(&r);
}

/* ---- meson install ---- */

Test(cli, install_puts_the_library_command_and_man_page_where_they_belong, .timeout = 120)
{
	char dir[64], cmd[512];
	struct gg_run r;

	gg_tmpdir(dir, sizeof(dir));
	snprintf(cmd, sizeof(cmd), "meson install -C '%s' --no-rebuild --destdir '%s' >/dev/null 2>&1",
		 GG_BUILD_ROOT, dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(cmd, sizeof(cmd), "%s%s/bin/gpuguard", dir, GG_PREFIX);
	cr_assert_eq(access(cmd, X_OK), 0, "%s", cmd);
	/* The installed command finds the installed library, not the build tree's. */
	cli(&r, NULL, (const char *[]){ cmd, "--", "/bin/sh", "-c", "echo \"$LD_PRELOAD\"", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_eq(strncmp(r.out, dir, strlen(dir)), 0, "%s", r.out);
	cr_assert_neq(strstr(r.out, "/libgpuguard.so"), NULL, "%s", r.out);
	gg_run_free(&r);
	snprintf(cmd, sizeof(cmd), "test -f %s%s/share/man/man1/gpuguard.1", dir, GG_PREFIX);
	cr_assert_eq(system(cmd), 0, "no man page");
	/* Nothing of the tests: no fake driver. */
	snprintf(cmd, sizeof(cmd), "find '%s' -name 'libcuda*' | grep -q .", dir);
	cr_assert_neq(system(cmd), 0, "the fake driver was installed");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* --per-tensor sets the frameworks' switches, says so at verbosity 1, not at 0. */
Test(cli, per_tensor_sets_the_frameworks_switches_and_says_so)
{
	struct gg_run r;

	cli(&r, NULL, (const char *[]){ GG_CLI, "--per-tensor", "--", "/usr/bin/env", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_expect(strstr(r.out, "\nPYTORCH_NO_CUDA_MEMORY_CACHING=1\n"), "%s", r.out);
	cr_expect(strstr(r.out, "\nXLA_PYTHON_CLIENT_ALLOCATOR=platform\n"), "%s", r.out);
	cr_expect(strstr(r.out, "\nXLA_PYTHON_CLIENT_PREALLOCATE=false\n"), "%s", r.out);
	cr_expect_eq(gg_count_lines(r.err, "gpuguard: --per-tensor: PYTORCH_NO_CUDA_MEMORY_CACHING=1 "), 1,
		     "%s", r.err);
	gg_run_free(&r);
	cli(&r, NULL, (const char *[]){ GG_CLI, "--verbosity", "0", "--per-tensor", "--", "/usr/bin/env",
					NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_expect(strstr(r.out, "\nPYTORCH_NO_CUDA_MEMORY_CACHING=1\n"), "%s", r.out);
	cr_expect_str_eq(r.err, "");
	gg_run_free(&r);
	/* Without it, nothing of the kind. */
	cli(&r, NULL, (const char *[]){ GG_CLI, "--", "/usr/bin/env", NULL });
	cr_expect(!strstr(r.out, "PYTORCH_NO_CUDA_MEMORY_CACHING"), "%s", r.out);
	cr_expect(!strstr(r.err, "--per-tensor"), "%s", r.err);
	gg_run_free(&r);
}
