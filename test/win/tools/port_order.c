/* Which waiting thread a completion port wakes, as one Windows process:
 * test/win/test_port_waits.py runs it under the server's wineserver, so
 * the order it finds is the one the server's workers get.
 *
 *   port_order THREADS ROUNDS
 *
 * THREADS threads wait on one port; ROUNDS packets are posted one at a
 * time, each once every thread waits again, and the thread that took it
 * is noted.  Windows documents LIFO (the thread that blocked last is
 * woken first: one or two threads take every packet); a first-in
 * first-out port hands them round robin.  Prints
 *
 *   order lifo|fifo|other distinct D of THREADS
 *   takers T T T ...
 *
 * Exit 0 unless a Windows call failed. */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#define QUIT_KEY 1

static HANDLE port, taken;
static volatile LONG waiting;
static int *takers;

static DWORD WINAPI wait_on_port(void *arg)
{
    int index = (int)(INT_PTR)arg;

    for (;;) {
        DWORD bytes;
        ULONG_PTR key;
        OVERLAPPED *ov;

        InterlockedIncrement(&waiting);
        if (!GetQueuedCompletionStatus(port, &bytes, &key, &ov, INFINITE))
            return 1;
        InterlockedDecrement(&waiting);
        if (key == QUIT_KEY)
            return 0;
        takers[bytes] = index;
        SetEvent(taken);
    }
}

static int fail(const char *what)
{
    fprintf(stderr, "port_order: %s: error %lu\n", what, GetLastError());
    return 1;
}

/* Until every thread is back in (or just entering) its wait: a packet
 * posted earlier would find the last taker still running. */
static void until_all_wait(int threads)
{
    while (InterlockedCompareExchange(&waiting, 0, 0) < threads)
        Sleep(1);
}

/* LIFO reuses the last one or two takers; first-in first-out goes round
 * them all (not always evenly: a taker may still be on its way back). */
static const char *classify(int threads, int distinct)
{
    return distinct <= 2 ? "lifo" : distinct == threads ? "fifo" : "other";
}

int main(int argc, char **argv)
{
    int threads = argc > 2 ? atoi(argv[1]) : 4;
    int rounds = argc > 2 ? atoi(argv[2]) : 32;
    HANDLE *th;
    int i, distinct = 0;
    char *seen;

    if (threads < 3 || rounds < threads) {
        fprintf(stderr, "usage: port_order THREADS(>=3) ROUNDS(>=THREADS)\n");
        return 2;
    }
    takers = calloc(rounds, sizeof *takers);
    th = calloc(threads, sizeof *th);
    seen = calloc(threads, 1);
    port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
    taken = CreateEventA(NULL, FALSE, FALSE, NULL);
    if (!port || !taken)
        return fail("CreateIoCompletionPort/CreateEvent");
    for (i = 0; i < threads; i++) {
        /* one at a time, so the threads block in a known order */
        until_all_wait(i);
        th[i] = CreateThread(NULL, 0, wait_on_port, (void *)(INT_PTR)i, 0, NULL);
        if (!th[i])
            return fail("CreateThread");
    }
    for (i = 0; i < rounds; i++) {
        until_all_wait(threads);
        if (!PostQueuedCompletionStatus(port, (DWORD)i, 0, NULL))
            return fail("PostQueuedCompletionStatus");
        if (WaitForSingleObject(taken, 10000) != WAIT_OBJECT_0)
            return fail("no thread took the packet in 10 s");
    }
    for (i = 0; i < threads; i++)
        PostQueuedCompletionStatus(port, 0, QUIT_KEY, NULL);
    WaitForMultipleObjects(threads, th, TRUE, 10000);
    for (i = 0; i < rounds; i++)
        if (!seen[takers[i]]) {
            seen[takers[i]] = 1;
            distinct++;
        }
    printf("order %s distinct %d of %d\ntakers",
           classify(threads, distinct), distinct, threads);
    for (i = 0; i < rounds; i++)
        printf(" %d", takers[i]);
    printf("\n");
    return 0;
}
