/* Files sent over TLS are read in whole TLS records, not mapped
 * (rp_tlsbody.c).  rp_conn.c adds the filter to TLS connections;
 * mod_mpm_reuseport.c registers it. */
#ifndef RP_TLSBODY_H
#define RP_TLSBODY_H

#include "httpd.h"

void rp_tlsbody_register(void);
void rp_tlsbody_add(conn_rec *c);

#endif
