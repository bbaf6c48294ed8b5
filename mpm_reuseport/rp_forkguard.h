/* Forks of the parent other than our own let go of our bucket sockets
 * (rp_forkguard.c says why).  A leaf: it calls no file of ours.
 *
 * Callers: rp_listen.c (arm, disarm: it owns the sockets), rp_parent.c
 * and rp_upgrade.c (own_fork around the forks that keep them: a child, a
 * binary upgrade's new server), rp_config.c (disarm while configuring). */
#ifndef RP_FORKGUARD_H
#define RP_FORKGUARD_H

#include "apr_pools.h"
#include "apr_tables.h"

/* From now on a fork of this process lets go of `fds` (ints), each while
 * its number is still that socket. */
void rp_forkguard_arm(apr_pool_t *pconf, const apr_array_header_t *fds);
/* Forks keep everything (configuring: detaching continues as the parent;
 * the sockets closed: their numbers may be reused). */
void rp_forkguard_disarm(void);
/* 1 around a fork of our own that must keep the sockets, then 0. */
void rp_forkguard_own_fork(int on);

#endif
