/* A graceful stop that closes the listening sockets for good refuses new
 * connections before the children's last accept, so that their close
 * resets none the kernel completed (rp_refuse.c says how).
 *
 * Callers: rp_parent.c (setup at each start of rp_run, before any child;
 * new_connections at a graceful stop where nobody else keeps the
 * sockets), rp_accept.c (in_effect, handshakes_pending: a child's last
 * accepts). */
#ifndef RP_REFUSE_H
#define RP_REFUSE_H

/* Parent: the flag the children read (once per process; idempotent). */
void rp_refuse_setup(void);
/* Parent, before it tells the children to stop: new connections to every
 * listening address are refused from now on, where the kernel allows
 * (else logged once, and nothing changes). */
void rp_refuse_new_connections(void);
/* Child: whether the parent did that (the close is the last). */
int rp_refuse_in_effect(void);
/* Handshakes under way (SYN_RECV) on the listeners' ports, or -1 when
 * that cannot be told. */
int rp_refuse_handshakes_pending(const int *fds, int n);

#endif
