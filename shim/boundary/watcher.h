/* The watcher thread for signal and after:S boundaries (docs/how-it-works.md, "Boundaries,
 * signals, exit"). */
#ifndef GG_SHIM_BOUNDARY_WATCHER_H
#define GG_SHIM_BOUNDARY_WATCHER_H

#include <errno.h>

struct gg_config;
struct gg_boundary_events;

/* The watcher's control socket, the channel of `gpuguard scan PID`
 * (tools/cmd-scan.c): an abstract unix socket (no file to leave behind; gone
 * with the process) named by the process's pid and start time
 * (/proc/PID/stat's 22nd field, clock ticks since boot), which no earlier
 * process of that pid had. It exists while the shim's handler of
 * GPUGUARD_SIGNAL was installed and the watcher runs. A connection from
 * the process's own user (or root) that sends GG_WATCHER_ASK gets one line:
 * GG_WATCHER_RAN when the shim's handler was the one in place at that moment
 * (sigaction) and the watcher then ran the boundary itself (no signal is
 * sent at all), else GG_WATCHER_HANDLED, GG_WATCHER_IGNORED or
 * GG_WATCHER_DEFAULT: the program's disposition of the signal now, and no
 * boundary ran. Another user gets GG_WATCHER_REFUSED. */
#define GG_WATCHER_SOCKET "gpuguard/%d/%llu"
#define GG_WATCHER_ASK "boundary\n"
#define GG_WATCHER_RAN "ran\n"
#define GG_WATCHER_HANDLED "handled\n"
#define GG_WATCHER_IGNORED "ignored\n"
#define GG_WATCHER_DEFAULT "default\n"
#define GG_WATCHER_REFUSED "refused\n"

/* How long, in milliseconds, the watcher waits for a connection's request
 * and for its answer to be taken: a client that stalls costs no more. */
#define GG_WATCHER_CLIENT_MS 1000

/* How often, in milliseconds, the watcher looks whether the program has
 * replaced the shim's handler since, to say so once (a scan asks sigaction
 * itself, at the moment it asks). */
#define GG_WATCHER_CHECK_MS 1000

/* The start time of /proc/PID/stat's text @stat (the 22nd field, counted
 * after the command name's closing parenthesis, which may itself hold spaces
 * and parentheses). 0 or -EINVAL. */
static inline int gg_watcher_start_time(const char *stat, unsigned long long *start)
{
	const char *p = stat, *paren = 0;

	for (; *p; p++)
		if (*p == ')')
			paren = p;
	if (!paren)
		return -EINVAL;
	p = paren + 1;
	/* After ")": state (field 3) to field 21 skipped, then starttime. */
	for (int field = 3; field < 22; field++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
		if (!*p)
			return -EINVAL;
	}
	*start = 0;
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++)
		*start = *start * 10 + (unsigned long long)(*p - '0');
	return 0;
}

/* Install the signal handler and start the thread, when either is configured,
 * or when SIGTERM or SIGINT is left at its default: then the thread runs
 * @end_work, the exit work, for the handler of ending.c.
 * Set-up only. A signal the program already handles (or ignores) keeps the
 * program's disposition, with a WARN. Says itself what it could not do.
 * 0 or -errno. */
int gg_watcher_start(const struct gg_config *cfg, const struct gg_boundary_events *ev,
		     void (*end_work)(int sig));

/* fork(): the child drops its signals until its first hook call, which gives
 * it a thread and a pipe of its own. */
void gg_watcher_atfork_child(void);
int gg_watcher_restart_in_child(void);

#endif
