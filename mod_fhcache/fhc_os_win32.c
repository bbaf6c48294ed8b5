/* fhc_os.h for Windows.  Cached handles are opened overlapped and shared
 * for read, write and delete: TransmitFile and mmap take explicit offsets,
 * so one handle serves every thread at once, and a deploy may overwrite,
 * rename or delete the file while it is cached (the watcher then drops the
 * entry and the handle is closed when its last response is written). */
#ifdef _WIN32

#include "fhc_os.h"

#include <windows.h>

const int fhc_os_revalidate_notified = 1;
const int fhc_os_recycle_handles = 1;
const apr_int32_t fhc_os_fields_not_by_name = APR_FINFO_IDENT | APR_FINFO_NLINK;
const int fhc_os_drive_paths = 1;
/* Every request's wrapper has its own offset (APR_FOPEN_XTHREAD), and
 * APR maps at any offset (aligned to the allocation granularity). */
const int fhc_os_reads_at_offsets = 0;

const char *const fhc_os_hint_overflow =
    "it happens when a directory changes faster than the watcher reads";
const char *const fhc_os_hint_watch_limit = "Raise FHCacheMaxWatches";
const char *const fhc_os_hint_no_notify =
    "ReadDirectoryChangesW is not available";
const char *const fhc_os_hint_handles = "Lower FHCacheMaxDescriptors";
const char *const fhc_os_hint_budget =
    "the handles a child's cache may hold on Windows";

/* UTF-8 (httpd's file names on Windows) to UTF-16; NULL if too long. */
static WCHAR *wide_path(const char *path, WCHAR *buf, int len)
{
    return MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, buf,
                               len) > 0 ? buf : NULL;
}

apr_status_t fhc_os_open(const char *path, apr_os_file_t *h)
{
    WCHAR w[MAX_PATH];
    HANDLE fh;

    if (!wide_path(path, w, MAX_PATH)) {
        return APR_ENAMETOOLONG;
    }
    /* Not inheritable (no security attributes): no leak into CGI. */
    fh = CreateFileW(w, GENERIC_READ,
                     FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                     NULL, OPEN_EXISTING,
                     FILE_FLAG_OVERLAPPED | FILE_FLAG_SEQUENTIAL_SCAN, NULL);
    if (fh == INVALID_HANDLE_VALUE) {
        return apr_get_os_error();
    }
    *h = fh;
    return APR_SUCCESS;
}

void fhc_os_close(apr_os_file_t h)
{
    CloseHandle(h);
}

/* The handle is overlapped: every read names its offset. */
apr_status_t fhc_os_read_all(apr_os_file_t h, char *buf, apr_off_t size)
{
    OVERLAPPED ov;
    apr_off_t got = 0;
    apr_status_t rv = APR_SUCCESS;
    HANDLE ev = CreateEventW(NULL, TRUE, FALSE, NULL);

    if (!ev) {
        return apr_get_os_error();
    }
    while (got < size && rv == APR_SUCCESS) {
        DWORD want = (DWORD)(size - got > 1 << 20 ? 1 << 20 : size - got);
        DWORD n = 0;
        memset(&ov, 0, sizeof(ov));
        ov.hEvent = ev;
        ov.Offset = (DWORD)got;
        ov.OffsetHigh = (DWORD)((apr_uint64_t)got >> 32);
        if (!ReadFile(h, buf + got, want, NULL, &ov)
            && GetLastError() != ERROR_IO_PENDING) {
            rv = GetLastError() == ERROR_HANDLE_EOF ? APR_EOF
                                                    : apr_get_os_error();
        }
        else if (!GetOverlappedResult(h, &ov, &n, TRUE)) {
            rv = GetLastError() == ERROR_HANDLE_EOF ? APR_EOF
                                                    : apr_get_os_error();
        }
        else if (n == 0) {
            rv = APR_EOF;
        }
        got += n;
    }
    CloseHandle(ev);
    return rv;
}

/* Network drives and UNC paths: their changes made by other machines are
 * not reliably notified. */
int fhc_os_remote_fs(apr_os_file_t h, const char *path)
{
    WCHAR root[4] = { 0, L':', L'\\', 0 };
    UINT type;

    (void)h;
    if (!path[0] || path[1] != ':') {
        return 1;
    }
    root[0] = (WCHAR)(unsigned char)path[0];
    type = GetDriveTypeW(root);
    return type != DRIVE_FIXED && type != DRIVE_RAMDISK;
}

apr_status_t fhc_os_read_at(apr_os_file_t h, char *buf, apr_size_t *len,
                            apr_off_t off)
{
    (void)h;
    (void)buf;
    (void)off;
    *len = 0;
    return APR_ENOTIMPL;    /* not used: fhc_os_reads_at_offsets is 0 */
}

apr_file_t *fhc_os_request_file(apr_os_file_t h, int sendfile, int mmap,
                                apr_pool_t *p)
{
    /* XTHREAD: reads, if any, use the wrapper's own offset.  NOCLEANUP:
     * neither the wrapper nor a setaside copy of it closes the handle. */
    apr_int32_t flags = APR_FOPEN_READ | APR_FOPEN_BINARY | APR_FOPEN_XTHREAD
                        | APR_FOPEN_NOCLEANUP
                        | (sendfile ? APR_FOPEN_SENDFILE_ENABLED : 0);
    apr_file_t *f;

    /* Without mmap APR would read through the wrapper with an event it
     * only frees when it closes the handle itself: left to core. */
    if (!mmap) {
        return NULL;
    }
    return apr_os_file_put(&f, &h, flags, p) == APR_SUCCESS ? f : NULL;
}

/* Windows has no small per-process handle limit. */
unsigned fhc_os_handle_budget(void)
{
    return 16384;
}

int32_t fhc_os_pid(void)
{
    return (int32_t)GetCurrentProcessId();
}

int fhc_os_pid_alive(int32_t pid)
{
    HANDLE ph = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)pid);
    int alive;

    if (!ph) {
        /* Gone, or not ours to open: only "gone" frees its row. */
        return GetLastError() != ERROR_INVALID_PARAMETER;
    }
    alive = WaitForSingleObject(ph, 0) == WAIT_TIMEOUT;
    CloseHandle(ph);
    return alive;
}

apr_status_t fhc_os_thread_create(apr_thread_t **t, apr_thread_start_t fn,
                                  void *data, apr_pool_t *p)
{
    return apr_thread_create(t, NULL, fn, data, p);
}

const fhc_watch_backend *fhc_os_watch_backend(void)
{
    return &fhc_watch_rdcw;
}

#endif /* _WIN32 */
