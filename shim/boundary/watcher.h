/* The watcher thread for signal and after:S boundaries (docs/how-it-works.md, "Boundaries,
 * signals, exit"). */
#ifndef GG_SHIM_BOUNDARY_WATCHER_H
#define GG_SHIM_BOUNDARY_WATCHER_H

struct gg_config;
struct gg_boundary_events;

/* The watcher thread's name (/proc/PID/task/TID/comm), which is how
 * `gpuguard scan` knows that the handler of GPUGUARD_SIGNAL is the shim's:
 * GG_WATCHER_NAME_SIGNAL followed by the signal's number ("gpuguard-sig10")
 * only while the shim's handler is the one installed, as the watcher last
 * saw it; GG_WATCHER_NAME otherwise (after: only, or the program handles the
 * signal itself). A name fits 15 bytes. */
#define GG_WATCHER_NAME_SIGNAL "gpuguard-sig"
#define GG_WATCHER_NAME "gpuguard-watch"

/* How often, in milliseconds, the watcher looks whether the program has
 * replaced the shim's handler since (and renames itself when it has). */
#define GG_WATCHER_CHECK_MS 1000

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
