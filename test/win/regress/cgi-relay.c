/* cgi-relay.exe: runs a Linux interpreter for a Windows httpd under Wine.
 *
 *   cgi-relay.exe /usr/bin/perl [ARGS...] Z:/path/script [SCRIPT ARGS...]
 *
 * mod_cgi (and anything else that starts a program with pipes) gives a
 * Windows process its standard handles as Wine named pipes.  Wine starts a
 * Linux program (an ELF file such as /usr/bin/perl, named by a script's #!
 * line) by fork and exec, but its named pipes have no Unix descriptor to
 * pass: the program gets no request body, its output is lost and its exit
 * status is not reported.  This Windows program sits in between: it reads
 * the request body to its end into a file, runs the command through
 * /bin/sh with that file as standard input and two files as standard output
 * and error, waits for a status file the shell writes last, then copies the
 * output to its own standard handles and exits with the command's status.
 * So output is not streamed (a script's output arrives when it ends).
 *
 * Arguments of the form Z:/x or Z:\x become /x (Wine maps / to Z:); the
 * environment (the CGI variables) and the working directory pass through.
 * The files live in /tmp (Z:\tmp), or in $CGI_RELAY_TMP (a Linux path).
 * Built by mpmng_py.winregress with x86_64-w64-mingw32-gcc. */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_LIMIT_MS (600 * 1000)

static char *linux_path(const char *a)
{
    char *s;
    size_t i;

    if ((a[0] == 'Z' || a[0] == 'z') && a[1] == ':' && (a[2] == '/' || a[2] == '\\'))
        a += 2;
    else
        return _strdup(a);
    s = _strdup(a);
    for (i = 0; s[i]; i++)
        if (s[i] == '\\')
            s[i] = '/';
    return s;
}

/* Appends s quoted for /bin/sh ('...' with ' as '\''). */
static void sh_quote(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);

    if (n + 3 >= cap)
        return;
    out[n++] = '\'';
    for (; *s && n + 6 < cap; s++) {
        if (*s == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        }
        else {
            out[n++] = *s;
        }
    }
    out[n++] = '\'';
    out[n] = '\0';
}

/* Appends s as one argument by the Windows command-line rules Wine uses to
 * build the Linux argv. */
static void win_quote(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);
    int slashes = 0;

    out[n++] = '"';
    for (; *s && n + 4 < cap; s++) {
        if (*s == '\\') {
            slashes++;
            out[n++] = '\\';
            continue;
        }
        if (*s == '"') {
            while (slashes-- > 0 && n + 4 < cap)
                out[n++] = '\\';
            out[n++] = '\\';
        }
        slashes = 0;
        out[n++] = *s;
    }
    while (slashes-- > 0 && n + 3 < cap)
        out[n++] = '\\';
    out[n++] = '"';
    out[n] = '\0';
}

static int copy_file_to(const char *path, HANDLE to)
{
    HANDLE f = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, 0, NULL);
    char buf[65536];
    DWORD n, w;

    if (f == INVALID_HANDLE_VALUE)
        return -1;
    while (ReadFile(f, buf, sizeof buf, &n, NULL) && n) {
        DWORD off = 0;
        while (off < n && WriteFile(to, buf + off, n - off, &w, NULL) && w)
            off += w;
        if (off < n)
            break;
    }
    CloseHandle(f);
    return 0;
}

int main(int argc, char **argv)
{
    static char script[32768], cmdline[65536];
    char base[MAX_PATH], winbase[MAX_PATH], path[MAX_PATH + 16], cwd[MAX_PATH];
    const char *tmp = getenv("CGI_RELAY_TMP");
    STARTUPINFOA si;
    PROCESS_INFORMATION pi;
    HANDLE in, stdin_h = GetStdHandle(STD_INPUT_HANDLE);
    char buf[65536];
    DWORD n, w, waited = 0;
    int i, status = 255;
    FILE *st;
    char *lcwd;

    if (argc < 2) {
        fprintf(stderr, "usage: cgi-relay.exe /linux/interpreter [args...]\n");
        return 2;
    }
    snprintf(base, sizeof base, "%s/cgi-relay-%lu-%lu", tmp && *tmp ? tmp : "/tmp",
             GetCurrentProcessId(), GetTickCount());
    snprintf(winbase, sizeof winbase, "Z:%s", base);

    /* the request body, to its end */
    snprintf(path, sizeof path, "%s.in", winbase);
    in = CreateFileA(path, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
    if (in == INVALID_HANDLE_VALUE) {
        fprintf(stderr, "cgi-relay: cannot create %s (%lu)\n", path, GetLastError());
        return 255;
    }
    if (stdin_h && stdin_h != INVALID_HANDLE_VALUE) {
        while (ReadFile(stdin_h, buf, sizeof buf, &n, NULL) && n)
            WriteFile(in, buf, n, &w, NULL);
    }
    CloseHandle(in);

    /* cd DIR; PATH=...; CMD <in >out 2>err; echo $? >st.tmp; mv st.tmp st */
    script[0] = '\0';
    GetCurrentDirectoryA(sizeof cwd, cwd);
    lcwd = linux_path(cwd);
    strcat(script, "cd ");
    sh_quote(script, sizeof script, lcwd);
    strcat(script, " 2>/dev/null; PATH=/usr/local/bin:/usr/bin:/bin; export PATH; ");
    for (i = 1; i < argc; i++) {
        sh_quote(script, sizeof script, linux_path(argv[i]));
        strcat(script, " ");
    }
    snprintf(script + strlen(script), sizeof script - strlen(script),
             "<%s.in >%s.out 2>%s.err; echo $? >%s.st.tmp; mv %s.st.tmp %s.st",
             base, base, base, base, base, base);
    strcpy(cmdline, "/bin/sh -c ");
    win_quote(cmdline, sizeof cmdline, script);

    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    if (!CreateProcessA(NULL, cmdline, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi)) {
        fprintf(stderr, "cgi-relay: cannot start /bin/sh (%lu)\n", GetLastError());
        return 255;
    }
    CloseHandle(pi.hThread);
    CloseHandle(pi.hProcess);

    /* Wine does not report a Linux process's end: wait for its status file */
    snprintf(path, sizeof path, "%s.st", winbase);
    while (GetFileAttributesA(path) == INVALID_FILE_ATTRIBUTES && waited < WAIT_LIMIT_MS) {
        Sleep(waited < 1000 ? 2 : 20);
        waited += waited < 1000 ? 2 : 20;
    }
    st = fopen(path, "r");
    if (st) {
        if (fscanf(st, "%d", &status) != 1)
            status = 255;
        fclose(st);
    }
    else {
        fprintf(stderr, "cgi-relay: %s did not end in %d s\n", argv[1], WAIT_LIMIT_MS / 1000);
    }
    snprintf(path, sizeof path, "%s.out", winbase);
    copy_file_to(path, GetStdHandle(STD_OUTPUT_HANDLE));
    snprintf(path, sizeof path, "%s.err", winbase);
    copy_file_to(path, GetStdHandle(STD_ERROR_HANDLE));
    for (i = 0; i < 4; i++) {
        static const char *ext[] = {".in", ".out", ".err", ".st"};
        snprintf(path, sizeof path, "%s%s", winbase, ext[i]);
        DeleteFileA(path);
    }
    return status;
}
