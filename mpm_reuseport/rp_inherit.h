/* Listening sockets handed to this start by a process before it: a binary
 * upgrade's old server (rp_upgrade.c) or systemd's file descriptor store
 * (rp_sdstore.c).  They give their sockets here at pre_config of the
 * first load, in that order; rp_listen.c, which owns the set of listeners,
 * takes from here by address before it binds anything, and closes what
 * the configuration no longer names.  A leaf: it calls no file of ours.
 *
 * Callers: rp_upgrade.c, rp_sdstore.c (give), rp_listen.c (take,
 * close_rest), rp_parent.c (log). */
#ifndef RP_INHERIT_H
#define RP_INHERIT_H

#include "apr_network_io.h"
#include "apr_pools.h"

/* A listening socket from `source` (named in the log: "pid 123", "systemd's
 * file descriptor store"); `upgrade`: from a binary upgrade's old server.
 * Close-on-exec from now on, until taken. */
void rp_inherit_give(apr_pool_t *process_pool, int fd, const char *source,
                     int upgrade);
/* A socket given and not taken yet that listens at sa; or NULL. */
apr_socket_t *rp_inherit_take(const apr_sockaddr_t *sa, apr_pool_t *p);
/* Once the listeners are set up: the sockets not taken close. */
void rp_inherit_close_rest(void);
/* Parent, once the error log is open: how many were taken over, once. */
void rp_inherit_log(void);

#endif
