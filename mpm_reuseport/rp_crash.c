/* What a fatal signal leaves in the error log.  httpd's own handler
 * (ap_fatal_signal_setup: chdir to CoreDumpDirectory, re-raise) says
 * nothing about a child, and of the parent only "seg fault or similar";
 * the parent later logs a child's exit signal, but not where it was.  Here
 * the process that takes SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT writes
 * one report to stderr, which httpd points at the main error log: the
 * signal, the fault address, parent or child (slot, generation), and the
 * call stack as module(function+offset) lines; then httpd's handler runs
 * as before, so CoreDumpDirectory and the core are unchanged.
 *
 * Nothing here may take memory from the heap or a pool, nor call anything
 * that is not async-signal-safe but backtrace(), loaded beforehand.  One
 * report per process: a second thread that faults meanwhile waits for the
 * first to end the process.  A stack overflow is reported only if the
 * faulting thread still has stack for the handler.
 *
 * Callers: rp_parent.c (rp_crash_install, each generation, after httpd
 * installs its handler; rp_crash_in_child in a child right after fork). */
#include "rp.h"
#include "rp_crash.h"

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <execinfo.h>
#define RP_HAVE_BACKTRACE 1
#endif

#define FRAMES 48

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
#define NSIG_FATAL (int)(sizeof(fatal_signals) / sizeof(fatal_signals[0]))

static struct sigaction previous[NSIG_FATAL];
static volatile sig_atomic_t reporting;
static int my_slot = -1;                 /* -1: not a child */
static int my_generation;
static pid_t parent_pid;                 /* where rp_crash_install ran */

typedef struct {
    char text[320];
    size_t used;
} line_buf;

static void put_str(line_buf *b, const char *s)
{
    while (*s && b->used < sizeof b->text - 1) {
        b->text[b->used++] = *s++;
    }
}

static void put_num(line_buf *b, unsigned long long v, unsigned base,
                    int width)
{
    char digits[24];
    int n = 0;

    do {
        digits[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v && n < (int)sizeof digits);
    while (n < width && n < (int)sizeof digits) {
        digits[n++] = '0';
    }
    while (n > 0 && b->used < sizeof b->text - 1) {
        b->text[b->used++] = digits[--n];
    }
}

static void put_dec(line_buf *b, long long v)
{
    if (v < 0) {
        put_str(b, "-");
        v = -v;
    }
    put_num(b, (unsigned long long)v, 10, 0);
}

/* "[Sun Dec 06 03:25:20.000000 2026] " in UTC: localtime() is not safe
 * here.  Days to a civil date as in H. Hinnant's algorithm. */
static void put_stamp(line_buf *b)
{
    static const char *const wday[] = { "Thu", "Fri", "Sat", "Sun", "Mon",
                                        "Tue", "Wed" };
    static const char *const mon[] = { "Jan", "Feb", "Mar", "Apr", "May",
                                       "Jun", "Jul", "Aug", "Sep", "Oct",
                                       "Nov", "Dec" };
    long long t = (long long)time(NULL), days = t / 86400, secs = t % 86400;
    long long z = days + 719468, era = z / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    long long d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    long long y = yoe + era * 400 + (m <= 2);

    put_str(b, "[");
    put_str(b, wday[days % 7]);
    put_str(b, " ");
    put_str(b, mon[m - 1]);
    put_str(b, " ");
    put_num(b, (unsigned long long)d, 10, 2);
    put_str(b, " ");
    put_num(b, (unsigned long long)(secs / 3600), 10, 2);
    put_str(b, ":");
    put_num(b, (unsigned long long)(secs / 60 % 60), 10, 2);
    put_str(b, ":");
    put_num(b, (unsigned long long)(secs % 60), 10, 2);
    put_str(b, " ");
    put_dec(b, y);
    put_str(b, " UTC] [mpm_reuseport:emerg] [pid ");
    put_dec(b, (long long)getpid());
    put_str(b, "] " RP_LOG_TAG);
}

static void write_line(line_buf *b)
{
    const char *p = b->text;
    size_t left;

    put_str(b, "\n");
    left = b->used;
    while (left > 0) {
        ssize_t n = write(STDERR_FILENO, p, left);
        if (n <= 0) {
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    b->used = 0;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (segmentation fault)";
    case SIGBUS:  return "SIGBUS (bus error)";
    case SIGILL:  return "SIGILL (illegal instruction)";
    case SIGFPE:  return "SIGFPE (arithmetic exception)";
    case SIGABRT: return "SIGABRT (abort)";
    default:      return "a fatal signal";
    }
}

static void report(int sig, const siginfo_t *info)
{
    line_buf b = { .used = 0 };
    int sent = info && info->si_code <= 0;   /* kill(), not a fault */

    put_stamp(&b);
    put_str(&b, signal_name(sig));
    if (my_slot >= 0) {
        put_str(&b, " in a child (slot ");
        put_dec(&b, my_slot);
        put_str(&b, ")");
    }
    else {
        put_str(&b, getpid() == parent_pid ? " in the parent"
                : " in a process a module forked from the parent");
    }
    put_str(&b, ", generation ");
    put_dec(&b, my_generation);
    if (sent) {
        put_str(&b, ", sent by pid ");
        put_dec(&b, (long long)info->si_pid);
    }
    else if (info && sig != SIGABRT) {
        put_str(&b, ", address 0x");
        put_num(&b, (unsigned long long)(uintptr_t)info->si_addr, 16, 0);
    }
    put_str(&b, my_slot >= 0 ? ": the parent starts another child; report "
            "the stack below" : getpid() == parent_pid ? ": the server stops "
            "serving; start it again, and report the stack below"
            : ": report the stack below");
    write_line(&b);
#ifdef RP_HAVE_BACKTRACE
    {
        void *frames[FRAMES];
        int n = backtrace(frames, FRAMES);

        put_stamp(&b);
        put_str(&b, "stack of the thread that took it (");
        put_dec(&b, n);
        put_str(&b, " frames; addr2line -f -e MODULE OFFSET names a line):");
        write_line(&b);
        backtrace_symbols_fd(frames, n, STDERR_FILENO);
    }
#endif
}

static int index_of(int sig)
{
    int i;

    for (i = 0; i < NSIG_FATAL; i++) {
        if (fatal_signals[i] == sig) {
            return i;
        }
    }
    return -1;
}

/* Report once, then hand over to the handler we replaced (httpd's, which
 * re-raises the signal with its default action: the core). */
static void on_fatal_signal(int sig, siginfo_t *info, void *uctx)
{
    int i = index_of(sig);

    if (__sync_lock_test_and_set(&reporting, 1) == 0) {
        report(sig, info);
    }
    else {
        for (;;) {
            pause();     /* another thread reports: its re-raise ends us */
        }
    }
    if (i >= 0 && (previous[i].sa_flags & SA_SIGINFO)
        && previous[i].sa_sigaction) {
        sigaction(sig, &previous[i], NULL);
        previous[i].sa_sigaction(sig, info, uctx);
    }
    else if (i >= 0 && previous[i].sa_handler != SIG_DFL
             && previous[i].sa_handler != SIG_IGN) {
        sigaction(sig, &previous[i], NULL);
        previous[i].sa_handler(sig);
    }
    else {
        signal(sig, SIG_DFL);
        raise(sig);   /* blocked until we return: then the default action */
    }
}

void rp_crash_install(void)
{
    struct sigaction sa;
    int i;

#ifdef RP_HAVE_BACKTRACE
    {
        void *warm[2];
        (void)backtrace(warm, 2);   /* loads libgcc now, not in the handler */
    }
#endif
    my_generation = rp_state->mpm->my_generation;
    parent_pid = getpid();
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < NSIG_FATAL; i++) {
        struct sigaction old;
        if (sigaction(fatal_signals[i], &sa, &old) == 0) {
            if (old.sa_sigaction != on_fatal_signal) {
                previous[i] = old;    /* httpd's, installed again each generation */
            }
        }
    }
}

void rp_crash_in_child(int slot)
{
    my_slot = slot;
    my_generation = rp_state->mpm->my_generation;
}
