/* Small complete responses are written at once (rp_smallflush.c).
 * rp_conn.c adds the filter to HTTP/1 connections; mod_mpm_reuseport.c
 * registers it. */
#ifndef RP_SMALLFLUSH_H
#define RP_SMALLFLUSH_H

#include "httpd.h"

void rp_smallflush_register(void);
/* waited_to_write: the connection's flag, set once a response had to
 * wait for the client (rp_conn.c); no flush from then on. */
void rp_smallflush_add(conn_rec *c, const int *waited_to_write);

#endif
