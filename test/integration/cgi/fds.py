#!/usr/bin/python3 -I
# Lists its open fds (with their targets), after reading any request
# body.  Listing /proc/self/fd opens a descriptor of its own for a moment;
# it is gone again by the time each fd is checked with fstat, so only
# descriptors the CGI was started with remain.
import os, sys
# A request body is read first: httpd writes it to us before it reads
# our answer.
while sys.stdin.buffer.read(1 << 16):
    pass
out = ["uid=%d gid=%d" % (os.getuid(), os.getgid())]
for fd in sorted(int(x) for x in os.listdir("/proc/self/fd")):
    try:
        os.fstat(fd)
        target = os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        continue
    out.append("fd %d %s" % (fd, target))
print("Content-Type: text/plain\n")
print("\n".join(out))
