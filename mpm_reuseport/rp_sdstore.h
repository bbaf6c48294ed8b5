/* systemd's file descriptor store: the listening sockets outlive the server
 * across `systemctl restart` (issue #36).  Where mpm-ng's drop-in for
 * apache2.service asks for it (MPMNG_SYSTEMD_FDSTORE=1 with NotifyAccess=
 * and FileDescriptorStoreMax=), the parent hands systemd a copy of every
 * listener socket (FDSTORE=1, FDNAME=mpmng-listen) each generation, after
 * taking back the previous set (FDSTOREREMOVE=1), so a Listen that left
 * the configuration is not kept.  systemd keeps them while the service
 * restarts and passes them to the next start (LISTEN_FDS), which adopts
 * them by address (rp_inherit.c): connections that arrive while the
 * server restarts wait in the accept queues instead of being refused.
 * `systemctl stop` releases them.
 *
 * Callers: rp_config.c (pre_config of the first load), rp_listen.c (once
 * the listeners are set up, parent only), rp_parent.c (keeps_copies). */
#ifndef RP_SDSTORE_H
#define RP_SDSTORE_H

#include "apr_pools.h"
#include "apr_tables.h"

/* Takes the sockets systemd passed to this start (LISTEN_FDS named
 * mpmng-listen) for adoption; clears LISTEN_* from the environment. */
void rp_sdstore_pre_config(apr_pool_t *process_pool);
/* Hands the current listener sockets (int fds) to systemd's store, where
 * asked; a failure is logged once and changes nothing else. */
void rp_sdstore_keep(const apr_array_header_t *fds);
/* Whether systemd holds copies of this generation's sockets (a stop does
 * not close them for good: the next start takes them). */
int rp_sdstore_keeps_copies(void);

#endif
