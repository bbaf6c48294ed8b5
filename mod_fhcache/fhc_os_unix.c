/* fhc_os.h for Unix (Linux first; other Unixes poll by stat). */
#ifndef _WIN32

#include "fhc_os.h"

#include "apr_strings.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#include <linux/magic.h>
#endif

const int fhc_os_revalidate_notified = 0;
const int fhc_os_recycle_handles = 0;
const apr_int32_t fhc_os_fields_not_by_name = 0;
const int fhc_os_drive_paths = 0;
const int fhc_os_reads_at_offsets = 1;

const char *const fhc_os_hint_overflow =
    "raise fs.inotify.max_queued_events (sysctl)";
const char *const fhc_os_hint_watch_limit =
    "Raise FHCacheMaxWatches or fs.inotify.max_user_watches";
const char *const fhc_os_hint_no_notify =
    "Raise fs.inotify.max_user_instances (sysctl, per user: one instance "
    "per server child) above the number of children";
const char *const fhc_os_hint_handles =
    "Lower FHCacheMaxDescriptors or raise the open-file limit";
const char *const fhc_os_hint_budget =
    "a quarter of the open-file limit: raise the limit (ulimit -n) or "
    "lower the directive";

apr_status_t fhc_os_open(const char *path, apr_os_file_t *h)
{
    /* CLOEXEC: nothing of ours may leak into CGI children.  O_NONBLOCK:
     * never hang on a FIFO swapped in after the stat. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        return errno;
    }
    *h = fd;
    return APR_SUCCESS;
}

void fhc_os_close(apr_os_file_t h)
{
    close(h);
}

apr_status_t fhc_os_read_all(apr_os_file_t h, char *buf, apr_off_t size)
{
    apr_off_t got = 0;
    while (got < size) {
        ssize_t n = pread(h, buf + got, (size_t)(size - got), got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return errno;
        }
        if (n == 0) {
            return APR_EOF;
        }
        got += n;
    }
    return APR_SUCCESS;
}

int fhc_os_remote_fs(apr_os_file_t h, const char *path)
{
#ifdef __linux__
    struct statfs sf;
    (void)path;
    if (fstatfs(h, &sf) != 0) {
        return 1;
    }
    switch ((unsigned long)sf.f_type) {
    case NFS_SUPER_MAGIC:
    case SMB_SUPER_MAGIC:
    case 0xFF534D42UL:      /* CIFS */
    case 0xFE534D42UL:      /* SMB2 */
    case 0x65735546UL:      /* FUSE */
    case 0x00C36400UL:      /* Ceph */
    case V9FS_MAGIC:
    case AFS_SUPER_MAGIC:
    case CODA_SUPER_MAGIC:
        return 1;
    }
    return 0;
#else
    (void)h;
    (void)path;
    return 1;
#endif
}

apr_status_t fhc_os_read_at(apr_os_file_t h, char *buf, apr_size_t *len,
                            apr_off_t off)
{
    ssize_t n;

    do {
        n = pread(h, buf, *len, (off_t)off);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        *len = 0;
        return n == 0 ? APR_EOF : errno;
    }
    *len = (apr_size_t)n;
    return APR_SUCCESS;
}

apr_file_t *fhc_os_request_file(apr_os_file_t h, int sendfile, int mmap,
                                apr_pool_t *p)
{
#ifdef __linux__
    /* Never a wrapper of the shared descriptor: APR reads a file bucket
     * with seek + read on it whenever it cannot map it (EnableMMAP Off,
     * the only case that gets here, or an offset that is not
     * page-aligned).  So this request gets its own open file description
     * of the same inode (not the path: it may point elsewhere by now),
     * closed with the request's pool. */
    apr_int32_t flags = APR_FOPEN_READ | APR_FOPEN_BINARY
                        | (sendfile ? APR_FOPEN_SENDFILE_ENABLED : 0);
    const char *self = apr_psprintf(p, "/proc/self/fd/%d", h);
    apr_file_t *f;

    (void)mmap;
    return apr_file_open(&f, self, flags, 0, p) == APR_SUCCESS ? f : NULL;
#else
    (void)h;
    (void)sendfile;
    (void)mmap;
    (void)p;
    return NULL;
#endif
}

/* A quarter of the soft descriptor limit: connections, logs and CGI pipes
 * need the rest. */
unsigned fhc_os_handle_budget(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        return 1024;
    }
    return (unsigned)(rl.rlim_cur / 4);
}

int32_t fhc_os_pid(void)
{
    return (int32_t)getpid();
}

int fhc_os_pid_alive(int32_t pid)
{
    return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

/* Prefork's handlers exit the child from whichever thread runs them: the
 * watcher starts with every signal blocked. */
apr_status_t fhc_os_thread_create(apr_thread_t **t, apr_thread_start_t fn,
                                  void *data, apr_pool_t *p)
{
    sigset_t all, old;
    apr_status_t rv;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rv = apr_thread_create(t, NULL, fn, data, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rv;
}

const fhc_watch_backend *fhc_os_watch_backend(void)
{
#ifdef __linux__
    return &fhc_watch_inotify;
#else
    return NULL;
#endif
}

#endif /* !_WIN32 */
