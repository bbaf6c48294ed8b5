/* Forks of the parent other than our own let go of our bucket sockets.
 *
 * Core's ap_close_listeners(), which modules call in processes they fork
 * from the parent (mod_cgid's daemon, ...), does not know our extra bucket
 * sockets.  Such a process would hold them open: a socket we close (fewer
 * buckets, graceful stop) would keep accepting into a queue nobody serves.
 * So every fork of the parent other than our own children lets them go,
 * each only if its number is still that socket (device and inode).  The
 * number is not closed but pointed at /dev/null: APR still holds it for
 * the socket and closes it before an exec (its child cleanup), so a number
 * freed here and reused (mod_cgid's daemon put a script's request body on
 * a pipe under it) would lose that pipe in the script it starts. */
#include "rp.h"
#include "rp_forkguard.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    int fd;
    dev_t dev;
    ino_t ino;
} guarded_fd;

static guarded_fd *guarded;
static int guarded_count;
static volatile int own_fork;
static int fork_from_parent;
static pid_t parent_pid;

static void before_fork(void)
{
    fork_from_parent = getpid() == parent_pid && !own_fork;
}

static int still_that_socket(const guarded_fd *g)
{
    struct stat st;

    return fstat(g->fd, &st) == 0 && st.st_dev == g->dev && st.st_ino == g->ino;
}

static void in_forked_child(void)
{
    int i, null_fd;

    if (fork_from_parent && guarded_count
        && (null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) {
        for (i = 0; i < guarded_count; i++) {
            if (still_that_socket(&guarded[i])) {
                (void)dup3(null_fd, guarded[i].fd, O_CLOEXEC);
            }
        }
        close(null_fd);
    }
    fork_from_parent = 0;
}

void rp_forkguard_arm(apr_pool_t *pconf, const apr_array_header_t *fds)
{
    static int registered;
    int i;

    guarded = apr_palloc(pconf, (fds->nelts ? fds->nelts : 1) * sizeof(*guarded));
    guarded_count = 0;
    for (i = 0; i < fds->nelts; i++) {
        guarded_fd *g = &guarded[guarded_count];
        struct stat st;

        g->fd = APR_ARRAY_IDX(fds, i, int);
        if (fstat(g->fd, &st) == 0) {
            g->dev = st.st_dev;
            g->ino = st.st_ino;
            guarded_count++;
        }
    }
    parent_pid = getpid();
    if (!registered) {
        /* Our DSO stays loaded (rp_pin_module), so these stay valid. */
        pthread_atfork(before_fork, NULL, in_forked_child);
        registered = 1;
    }
}

void rp_forkguard_disarm(void)
{
    guarded_count = 0;
    parent_pid = 0;
}

void rp_forkguard_own_fork(int on)
{
    own_fork = on;
}
