#!/usr/bin/python3 -I
# Reads the request body (after QUERY_STRING "wait=S" seconds, if given);
# answers with its length, its sha256 and the CONTENT_LENGTH it was given.
import hashlib, os, sys, time
time.sleep(float(os.environ.get("QUERY_STRING", "").partition("wait=")[2] or 0))
h = hashlib.sha256()
n = 0
while True:
    b = sys.stdin.buffer.read(1 << 16)
    if not b:
        break
    n += len(b)
    h.update(b)
sys.stdout.write("Content-Type: text/plain\r\n\r\n")
sys.stdout.write("length=%d\nsha256=%s\nclaimed=%s\n" % (
    n, h.hexdigest(), os.environ.get("CONTENT_LENGTH", "")))
