#!/usr/bin/python3 -I
# Sends headers and "begin", then sleeps (seconds from the query string,
# default 2) and sends "end".
import os, sys, time
secs = float(os.environ.get("QUERY_STRING") or 2)
sys.stdout.write("Content-Type: text/plain\r\n\r\nbegin\n")
sys.stdout.flush()
time.sleep(secs)
sys.stdout.write("end\n")
sys.stdout.flush()
