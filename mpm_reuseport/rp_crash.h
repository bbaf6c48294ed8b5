/* A fatal signal's report in the error log (rp_crash.c). */
#ifndef RP_CRASH_H
#define RP_CRASH_H

/* Parent, each generation, after ap_unixd_mpm_set_signals() installed
 * httpd's handlers (ours runs first, then theirs); children inherit it. */
void rp_crash_install(void);
/* A child, at its start: its reports name its slot. */
void rp_crash_in_child(int slot);

#endif
