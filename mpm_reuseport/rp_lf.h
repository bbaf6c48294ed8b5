/* Leader/followers for a child's workers: one worker at a time (the
 * leader) waits on the connection poller; idle others wait here.  Only one
 * thread scans the poller (several concurrent waiters on one epoll set
 * reorder its ready list and starve some connections), and leadership goes
 * to the follower that went idle last (LIFO), so a busy child runs on a
 * few warm threads.
 * A leader that got its event hands over at once only when nobody else is
 * processing; otherwise leadership is left free for the next worker that
 * finishes (no wake-up, no sleep: the common case under load), and the
 * event loop, ticking every millisecond while workers are busy, promotes a
 * follower if nobody has taken it.  Pure pthreads; unit-tested in
 * test/unit/check_lf.c. */
#ifndef RP_LF_H
#define RP_LF_H

typedef struct rp_lf rp_lf;

/* nthreads: workers are identified by 0 .. nthreads-1. */
rp_lf *rp_lf_create(int nthreads);
void rp_lf_destroy(rp_lf *lf);

/* Block until worker id leads; 0 once shut down (then do not wait). */
int rp_lf_lead(rp_lf *lf, int id);

/* The leader (id) got an event and goes processing.  Returns 1 if the
 * loop should start ticking (others are busy too, and it does not tick
 * yet): the caller wakes it, so later hand-overs can be lazy. */
int rp_lf_handover(rp_lf *lf, int id);

/* The loop's tick: promote a follower if leadership is free.  Returns 1
 * while workers are processing (call again within a millisecond). */
int rp_lf_tick(rp_lf *lf);

/* Wake every follower; every rp_lf_lead returns 0 from now on. */
void rp_lf_shutdown(rp_lf *lf);

/* Threads waiting to lead, the leader included (for tests and status). */
int rp_lf_waiting(rp_lf *lf);

#endif
