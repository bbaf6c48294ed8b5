/* Which way accept sockets are recycled, and when to stop recycling.
 * Pure logic, unit-tested in test/unit/check_wn.c.
 *
 * Two ways a connection ends, checked separately at child start-up on
 * loopback connections (wn_recycle.c runs the checks):
 *  - the client closed first (keep-alive ended by the client): the method
 *    only has to reset the socket;
 *  - the server closes first (Connection: close): the method's disconnect
 *    must also deliver our FIN to a client that is still connected (the
 *    documented TransmitFile/DisconnectEx use).
 * A method passes a check when the socket it recycled then accepts a new
 * connection and can send on it.  Wine 8 fails DisconnectEx both ways (a
 * reused socket cannot send) and TransmitFile the second way (the client
 * never sees the FIN).  At run time, recycled sockets that keep breaking
 * while fresh ones work turn recycling off for the child. */
#ifndef WN_REUSE_POLICY_H
#define WN_REUSE_POLICY_H

#include "wn_settings.h"

typedef enum {
    WN_METHOD_CLOSE = 0,
    WN_METHOD_TRANSMITFILE,
    WN_METHOD_DISCONNECTEX
} wn_reuse_method;

/* Consecutive broken connections on recycled sockets that turn recycling
 * off, provided no fresh socket broke in between. */
#define WN_REUSE_MAX_BROKEN 2
/* Recycled sockets in a row that could send after which the method is
 * trusted: no more checks on each recycled socket. */
#define WN_REUSE_TRUST_AFTER 32

typedef struct wn_reuse_state {
    wn_reuse_method method;
    int server_first;         /* method also ends connections we close */
    int broken_in_a_row;      /* recycled-socket connections that broke */
    int good_in_a_row;        /* recycled sockets that could send */
    int trusted;              /* enough of those: checks stop */
    int disabled;             /* recycling turned off at run time */
} wn_reuse_state;

/* The method for `mode` given which methods the system has and which passed
 * the check.  Auto prefers TransmitFile (it is also what sends files). */
wn_reuse_method wn_reuse_choose(wn_reuse_mode mode, int tf_ok, int dx_ok);

void wn_reuse_init(wn_reuse_state *st, wn_reuse_method method,
                   int server_first);

/* Records whether a socket could send right after being accepted: a
 * recycled one, or a fresh one (fresh failures clear a recycled streak:
 * something else is wrong).  Returns 1 when
 * this result turned recycling off (the caller logs it, once). */
int wn_reuse_note(wn_reuse_state *st, int recycled_socket, int broke);

/* Whether a recycled socket still needs its check before it is served. */
int wn_reuse_needs_check(const wn_reuse_state *st);

/* Where the method can recycle only a socket whose client closed first
 * (Wine 8: not after our FIN), a close may wait a moment for the client's
 * close before our FIN goes out.  That pays only while clients do close
 * first (most do on Connection: close; ab, for one, waits for ours), and
 * costs the child a faster tick while any close waits.  So the outcomes
 * of the last 32 waits are kept: while none of them saw the client close
 * first, only every WN_CLIENT_FIRST_PROBE-th close waits (to notice when
 * the clients change) and the others send the FIN at once. */
#define WN_CLIENT_FIRST_PROBE 16

typedef struct wn_client_first {
    unsigned int recent;      /* a bit per wait, 1: the client closed first */
    unsigned int not_waited;  /* closes since the last wait */
} wn_client_first;

void wn_client_first_init(wn_client_first *cf);
/* 1: this close waits for the client's close first. */
int wn_client_first_wait(wn_client_first *cf);
/* A wait ended: the client closed first, or not (our FIN went out). */
void wn_client_first_note(wn_client_first *cf, int closed_first);

#endif
