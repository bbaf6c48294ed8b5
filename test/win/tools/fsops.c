/* What a deploy on Windows does to the files a server holds open, as one
 * Windows process: test/win/test_fhcache.py runs it under the server's
 * wineserver, so Windows sharing rules between the two apply.
 *
 *   fsops write PATH TEXT     create or overwrite PATH with TEXT
 *   fsops replace SRC DST     rename SRC over DST (MoveFileEx REPLACE_EXISTING)
 *   fsops delete PATH         DeleteFile
 *
 * Exit 0 on success; otherwise prints the Windows error and exits 1. */
#include <stdio.h>
#include <string.h>
#include <windows.h>

static int fail(const char *what, const char *path)
{
    fprintf(stderr, "fsops: %s %s: error %lu\n", what, path, GetLastError());
    return 1;
}

static int do_write(const char *path, const char *text)
{
    DWORD n;
    HANDLE h = CreateFileA(path, GENERIC_WRITE, FILE_SHARE_READ, NULL,
                           CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        return fail("create", path);
    }
    if (!WriteFile(h, text, (DWORD)strlen(text), &n, NULL)) {
        CloseHandle(h);
        return fail("write", path);
    }
    CloseHandle(h);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "write")) {
        return do_write(argv[2], argv[3]);
    }
    if (argc == 4 && !strcmp(argv[1], "replace")) {
        return MoveFileExA(argv[2], argv[3], MOVEFILE_REPLACE_EXISTING)
               ? 0 : fail("replace", argv[3]);
    }
    if (argc == 3 && !strcmp(argv[1], "delete")) {
        return DeleteFileA(argv[2]) ? 0 : fail("delete", argv[2]);
    }
    fprintf(stderr, "usage: fsops write PATH TEXT | replace SRC DST | "
            "delete PATH\n");
    return 2;
}
