/* Binary upgrade: a new server process, started from the httpd binary on
 * disk now with the running server's arguments, takes its listening
 * sockets over, as nginx's USR2 does; nothing is refused and no request is
 * cut (issue #36).
 *
 * Old side, the running parent, on SIGUSR2: it forks and execs the new
 * server, handing it every listener socket (buckets included) and the
 * write end of a pipe through the environment, and goes on serving.  The
 * new server adopts the sockets whose addresses its configuration names
 * (rp_inherit.c, rp_listen.c), binds only new ones, starts its children,
 * and once they accept in every bucket writes to the pipe.  The old parent
 * then stops gracefully (its children finish their requests,
 * GracefulShutdownTimeout applies), leaving the sockets' options and the
 * PidFile to the new server (its own PidFile waits at PidFile.oldbin
 * meanwhile: httpd refuses to start while the pid in its PidFile runs;
 * back if the upgrade fails).  A new server that ends before that (a bad
 * binary or configuration) is logged, and the old one goes on.  Under systemd the
 * new server tells it (MAINPID=, rp_sdnotify.c) as it takes over, so that
 * the old one's exit, maybe while a next upgrade has the PidFile aside,
 * does not end the service.
 *
 * Callers: rp_config.c (pre_config), rp_parent.c (signal, main loop,
 * child exits, stop), rp_child.c (children).  It calls rp_inherit.c,
 * rp_forkguard.c and rp_sdnotify.c, nothing above them. */
#ifndef RP_UPGRADE_H
#define RP_UPGRADE_H

#include "httpd.h"
#include "apr_network_io.h"
#include "apr_tables.h"
#include "apr_thread_proc.h"

/* pre_config of the first load: notes the binary's path, gives what an
 * old server handed over to rp_inherit.c (and clears the environment). */
void rp_upgrade_pre_config(apr_pool_t *process_pool);
/* Parent: SIGUSR2 asks for an upgrade. */
void rp_upgrade_setup_signal(void);
/* Parent, each turn of its main loop: starts an upgrade asked for; old
 * side: watches the new server; new side: tells the old one once
 * accepting() (every bucket has a ready child; asked only then);
 * listen_fds() gives the sockets an upgrade hands over.  1: this
 * server has been taken over and stops now. */
int rp_upgrade_step(int (*accepting)(void),
                    apr_array_header_t *(*listen_fds)(apr_pool_t *));
/* 1 while waiting for the new server: the parent looks often. */
int rp_upgrade_waiting(void);
/* Old side: taken over (the shared sockets and the PidFile are the new
 * server's now). */
int rp_upgrade_taken_over(void);
/* Old side, stopping once taken over: its moved-aside PidFile goes. */
void rp_upgrade_remove_oldbin(void);
/* The parent reaped `pid`: 1 if it was the process started for an
 * upgrade (handled here), 0 otherwise. */
int rp_upgrade_reaped(pid_t pid, apr_exit_why_e why, int status);
/* A new child: the pipe to the old server is its parent's alone. */
void rp_upgrade_close_in_child(void);

#endif
