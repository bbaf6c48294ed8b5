/* What a crash leaves in the error log.  Windows ends a process that
 * faults with nothing in httpd's logs (an Application event, at best);
 * here an unhandled exception in any thread of the parent or a child is
 * written to stderr, which httpd points at the main error log: the
 * exception, the address it touched and the call stack as module+offset
 * lines.  A frame is the module's ImageBase (`objdump -p MODULE`) plus
 * the offset: the nearest symbol below it in `nm MODULE` names the
 * function.  Then the exception goes on as before (debugger, exit code).
 *
 * Nothing here may take memory from the heap or a pool: a corrupted heap
 * is a common reason for being here.  Owner: this file; wn_module.c
 * installs it (wn_crash_report_install) before anything else runs. */
#include "wn.h"

#include <windows.h>

#define FRAMES 40

typedef struct {
    char text[512];
    size_t used;
} line_buf;

static void put_str(line_buf *b, const char *s)
{
    while (*s && b->used < sizeof b->text - 1)
        b->text[b->used++] = *s++;
}

static void put_hex(line_buf *b, unsigned long long v)
{
    char digits[17];
    int n = 0;

    do {
        digits[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v && n < 16);
    put_str(b, "0x");
    while (n > 0 && b->used < sizeof b->text - 1)
        b->text[b->used++] = digits[--n];
}

static void put_dec(line_buf *b, unsigned long v)
{
    char digits[12];
    int n = 0;

    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < 11);
    while (n > 0 && b->used < sizeof b->text - 1)
        b->text[b->used++] = digits[--n];
}

static void flush_line(line_buf *b)
{
    HANDLE err = GetStdHandle(STD_ERROR_HANDLE);
    DWORD wrote;

    put_str(b, "\r\n");
    if (err && err != INVALID_HANDLE_VALUE)
        WriteFile(err, b->text, (DWORD)b->used, &wrote, NULL);
    b->used = 0;
}

/* "libhttpd.dll+0x1a2b3", or the bare address outside any module. */
static void put_place(line_buf *b, ULONG_PTR addr)
{
    HMODULE mod = NULL;
    char path[MAX_PATH];
    const char *name = path, *p;
    DWORD len;

    if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS
                            | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCSTR)addr, &mod)
        || !(len = GetModuleFileNameA(mod, path, sizeof path))
        || len >= sizeof path) {
        put_hex(b, addr);
        return;
    }
    for (p = path; *p; p++)
        if (*p == '\\' || *p == '/')
            name = p + 1;
    put_str(b, name);
    put_str(b, "+");
    put_hex(b, addr - (ULONG_PTR)mod);
}

static void put_header(line_buf *b, const EXCEPTION_RECORD *rec)
{
    put_str(b, WN_TAG "crash: pid ");
    put_dec(b, GetCurrentProcessId());
    put_str(b, " thread ");
    put_dec(b, GetCurrentThreadId());
    put_str(b, ": exception ");
    put_hex(b, rec->ExceptionCode);
    if (rec->ExceptionCode == EXCEPTION_ACCESS_VIOLATION
        && rec->NumberParameters >= 2) {
        put_str(b, rec->ExceptionInformation[0] == 0 ? " reading "
                   : rec->ExceptionInformation[0] == 8 ? " executing "
                   : " writing ");
        put_hex(b, rec->ExceptionInformation[1]);
    }
    put_str(b, " at ");
    put_place(b, (ULONG_PTR)rec->ExceptionAddress);
    put_str(b, "; please report this with the lines below");
}

#if defined(_WIN64) && (defined(__x86_64__) || defined(_M_X64))
/* The stack by the unwind tables every x64 image carries; a frame without
 * one (a leaf function) returns through the word at the stack pointer. */
static void put_stack(line_buf *b, const CONTEXT *at)
{
    CONTEXT ctx = *at;
    int i;

    for (i = 0; i < FRAMES && ctx.Rip; i++) {
        DWORD64 image = 0, frame = 0;
        PVOID handler_data = NULL;
        PRUNTIME_FUNCTION fn = RtlLookupFunctionEntry(ctx.Rip, &image, NULL);

        put_str(b, WN_TAG "crash:   #");
        put_dec(b, (unsigned long)i);
        put_str(b, " ");
        put_place(b, (ULONG_PTR)ctx.Rip);
        flush_line(b);
        if (fn) {
            RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, ctx.Rip, fn, &ctx,
                             &handler_data, &frame, NULL);
        }
        else {
            if (IsBadReadPtr((const void *)ctx.Rsp, sizeof(DWORD64)))
                break;
            ctx.Rip = *(DWORD64 *)ctx.Rsp;
            ctx.Rsp += sizeof(DWORD64);
        }
    }
}
#else
static void put_stack(line_buf *b, const CONTEXT *at)
{
    (void)at;
    put_str(b, WN_TAG "crash:   (no stack walk on this architecture)");
    flush_line(b);
}
#endif

static LPTOP_LEVEL_EXCEPTION_FILTER previous_filter;
static volatile LONG reporting;

static LONG WINAPI report_crash(EXCEPTION_POINTERS *ep)
{
    /* One report per process: a second faulting thread, or a fault while
     * reporting, goes straight on. */
    if (InterlockedExchange(&reporting, 1) == 0) {
        line_buf b;

        b.used = 0;
        put_header(&b, ep->ExceptionRecord);
        flush_line(&b);
        put_stack(&b, ep->ContextRecord);
    }
    return previous_filter ? previous_filter(ep) : EXCEPTION_CONTINUE_SEARCH;
}

void wn_crash_report_install(void)
{
    previous_filter = SetUnhandledExceptionFilter(report_crash);
}

void wn_crash_on_purpose(void)
{
    /* WinNTNGTestHook crash-at-exit: what the report looks like. */
    *(volatile int *)(ULONG_PTR)0x18 = 1;
}
