/* The watcher thread for signal and after:S boundaries (SPEC §5). */
#ifndef GG_WATCHER_H
#define GG_WATCHER_H

struct gg_config;
struct gg_boundary_events;

/* Install the signal handler and start the thread, when either is configured.
 * Set-up only. 0 or -errno. */
int gg_watcher_start(const struct gg_config *cfg, const struct gg_boundary_events *ev);

/* fork(): the child drops its signals until its first hook call, which gives
 * it a thread and a pipe of its own. */
void gg_watcher_atfork_child(void);
int gg_watcher_restart_in_child(void);

#endif
