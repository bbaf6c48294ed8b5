/* Leader/followers for a child's workers: one worker at a time (the
 * leader) waits on the connection poller; idle others wait here.  Only one
 * thread scans the poller (several concurrent waiters on one epoll set
 * reorder its ready list and starve some connections), and leadership goes
 * to the follower that went idle last (LIFO), so a busy child runs on a
 * few warm threads.
 * The leader takes a batch of events: it runs the first and queues the
 * rest here ("jobs"), for whichever worker is idle next, itself included;
 * a busy worker may queue one more (a listener to accept from again).
 * A worker that finishes takes a queued job, else leadership if it is
 * free, else sleeps; but after RP_LF_BATCH jobs with nobody looking at the
 * poller, it looks first, without waiting (a listener that keeps queueing
 * itself would keep open connections' events waiting).  So a child that
 * keeps up runs on one thread with no wake-ups at all, like an event loop.
 * Wake-ups happen only when work could wait: while the child's loop
 * thread does not tick, a leader that goes processing wakes a follower at
 * once (and asks the loop to tick); while it ticks (every millisecond,
 * and a few more after the last worker went idle), a tick wakes a follower
 * only if leadership is free or jobs wait and no worker came back or took
 * work since the previous tick (someone is stuck in a long request), or if
 * jobs were queued while the leader was the only busy worker.
 * Pure pthreads; unit-tested in test/unit/check_lf.c. */
#ifndef RP_LF_H
#define RP_LF_H

#include <stdint.h>

typedef struct rp_lf rp_lf;

/* An event to run: opaque to rp_lf. */
typedef struct rp_lf_job {
    uint64_t token;
    int events;
} rp_lf_job;

/* Most events one leader takes at once (at most this many - 1 queue;
 * each worker may push one job more). */
#define RP_LF_BATCH 8

/* nthreads: workers are identified by 0 .. nthreads-1. */
rp_lf *rp_lf_create(int nthreads);
void rp_lf_destroy(rp_lf *lf);

#define RP_LF_SHUT 0            /* shut down: leave */
#define RP_LF_LEAD 1            /* wait on the poller, then rp_lf_got */
#define RP_LF_JOB  2            /* run *job */
#define RP_LF_PEEK 3            /* look at the poller without waiting, then
                                   rp_lf_got (jobs ran long without a look) */

/* An idle worker (just started, finished its work, or a leader whose wait
 * brought nothing) asks what to do; it may sleep as a follower first. */
int rp_lf_next(rp_lf *lf, int id, rp_lf_job *job);

/* The leader (id) got n (0 .. RP_LF_BATCH) events and runs jobs[0]; the
 * others are queued; with none it is idle again (calls rp_lf_next).
 * Returns 1 if the loop should start ticking: the caller wakes it. */
int rp_lf_got(rp_lf *lf, int id, const rp_lf_job *jobs, int n);

/* Queue more work (a listener that may have more connections waiting, a
 * timer that is due), from any thread.  Returns 1 if the loop should
 * start ticking, 0, or -1 if the queue is full (nothing queued; it holds
 * threads + 2 * RP_LF_BATCH jobs). */
int rp_lf_push(rp_lf *lf, const rp_lf_job *job);

/* The loop's tick: wake a follower if work may be waiting behind busy
 * workers.  Returns 1 while the loop should keep ticking (call again
 * within a millisecond). */
int rp_lf_tick(rp_lf *lf);

/* Wake every follower; every rp_lf_next returns RP_LF_SHUT from now on. */
void rp_lf_shutdown(rp_lf *lf);

/* Threads waiting to lead, the leader included (for tests and status). */
int rp_lf_waiting(rp_lf *lf);

/* Jobs queued and not yet taken (for tests). */
int rp_lf_queued(rp_lf *lf);

#endif
