/* systemd's notification socket (NOTIFY_SOCKET, "@" for the abstract
 * namespace): one datagram per message, descriptors attached as
 * SCM_RIGHTS.  The transport for the file descriptor store (rp_sdstore.c)
 * and the main-pid hand-over of a binary upgrade: systemd re-reads the
 * PidFile only when the process it calls the main one exits, and a next
 * upgrade moves the PidFile aside for a moment; told at once, systemd
 * never looks then (issue #36).
 *
 * Callers: rp_sdstore.c, rp_upgrade.c (parent only). */
#ifndef RP_SDNOTIFY_H
#define RP_SDNOTIFY_H

/* Sends one message (with nfds descriptors, at most RP_SDNOTIFY_MAX_FDS):
 * 0, or an errno (EINVAL: NOTIFY_SOCKET unset or unusable). */
#define RP_SDNOTIFY_MAX_FDS 200     /* the kernel takes at most 253 */
int rp_sdnotify_send(const char *text, const int *fds, int nfds);
/* A new server that took over from an upgraded one: this process is the
 * service's main one now (MAINPID=).  Nothing without NOTIFY_SOCKET; a
 * failure is logged once. */
void rp_sdnotify_main_pid(void);

#endif
