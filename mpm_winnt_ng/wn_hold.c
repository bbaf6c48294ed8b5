/* httpd -w, as with stock httpd: when httpd fails in a console window of
 * its own (started from Explorer or a shortcut), the window would close
 * before anyone reads why.  With -w the process waits up to 30 s for a
 * key after a failed exit.
 *
 * os/win32/os.h turns exit(status) into: with ap_real_exit_code == 2,
 * keep status in it; otherwise set it to 0.  So it holds the failing
 * status only when -w asked for it (wn_module.c sets 2 in the parent). */
#include "wn.h"

#define WN_HOLD_SECONDS 30

static void hold_console(void)
{
    HANDLE in = GetStdHandle(STD_INPUT_HANDLE);
    HANDLE err = GetStdHandle(STD_ERROR_HANDLE);
    CONSOLE_SCREEN_BUFFER_INFO info;
    DWORD mode;
    int left;

    if (!ap_real_exit_code || ap_real_exit_code == 2)
        return;                    /* a clean exit, or none through exit() */
    if (!GetConsoleScreenBufferInfo(err, &info) || !GetConsoleMode(in, &mode))
        return;                    /* no console to hold: a pipe, a service */
    SetConsoleMode(in, 0);
    fprintf(stderr, "\n" WN_TAG "httpd exited with status %d; read the "
            "messages above, then press a key (this window closes in %d s).",
            ap_real_exit_code, WN_HOLD_SECONDS);
    fflush(stderr);
    FlushConsoleInputBuffer(in);
    for (left = WN_HOLD_SECONDS * 4; left > 0; left--) {
        INPUT_RECORD rec;
        DWORD n;

        if (WaitForSingleObject(in, 250) == WAIT_OBJECT_0
            && ReadConsoleInputA(in, &rec, 1, &n) && n == 1
            && rec.EventType == KEY_EVENT && rec.Event.KeyEvent.bKeyDown)
            break;
    }
    fputc('\n', stderr);
}

void wn_hold_console_on_error(void)
{
    if (ap_real_exit_code)
        ap_real_exit_code = 2;
    atexit(hold_console);
}
