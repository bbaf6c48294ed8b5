#!/usr/bin/env python3
"""Hold many idle HTTP/1.1 keep-alive connections open (bench idle part).

Run as its own process (it needs up to ~10,000 descriptors):
    holdconns.py HOST PORT PATH
then, one command per line on stdin:
    open N    grow to N connections; each sends one GET and reads the whole
              response, then stays open and idle.  Answers
              "OK held=H failed=F secs=S"
    check     answers "ALIVE n": connections the server has not closed
    again     every held connection sends one more GET and reads the whole
              response; answers "AGAIN ok=N failed=F secs=S"
    quit      closes everything, answers "BYE" and exits
Only loopback targets are accepted.

Holder (below) starts and drives it from another Python program."""
import asyncio
import ipaddress
import os
import re
import resource
import subprocess
import sys
import time

PARALLEL = 200
TIMEOUT = 20.0


class Conn(asyncio.Protocol):
    def __init__(self, request):
        self.request = request
        self.buf = b""
        self.need = None
        self.done = asyncio.get_running_loop().create_future()
        self.closed = False
        self.transport = None
        self.status = None

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data):
        if self.done.done():
            return  # nothing more is expected; ignore
        self.buf += data
        if self.need is None:
            head, sep, body = self.buf.partition(b"\r\n\r\n")
            if not sep:
                return
            self.status = int(head.split(b" ", 2)[1])
            m = re.search(rb"\r\ncontent-length:\s*(\d+)", head, re.I)
            self.need = len(head) + 4 + (int(m.group(1)) if m else 0)
        if len(self.buf) >= self.need:
            self.buf = b""
            self.done.set_result(self.status)

    def eof_received(self):
        self.closed = True
        return False

    def connection_lost(self, exc):
        self.closed = True
        if not self.done.done():
            self.done.set_exception(ConnectionError("closed before response"))


class Holder:
    """holdconns.py in its own process, driven line by line."""

    def __init__(self, host, port, path):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__),
                                   host, str(port), path],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def numbers(self, line):
        """The k=v numbers of the answer, as floats."""
        return {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)",
                                                   self.ask(line))}

    def close(self):
        try:
            self.ask("quit")
            self.p.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
        for f in (self.p.stdin, self.p.stdout):
            f.close()


async def open_one(host, port, request, conns):
    loop = asyncio.get_running_loop()
    try:
        _, proto = await asyncio.wait_for(
            loop.create_connection(lambda: Conn(request), host, port), TIMEOUT)
        status = await asyncio.wait_for(proto.done, TIMEOUT)
        if status != 200:
            proto.transport.close()
            return False
        conns.append(proto)
        return True
    except (OSError, asyncio.TimeoutError, ConnectionError):
        return False


async def grow(host, port, request, conns, target):
    t0 = time.monotonic()
    failed = 0
    sem = asyncio.Semaphore(PARALLEL)

    async def one():
        nonlocal failed
        async with sem:
            if not await open_one(host, port, request, conns):
                failed += 1
    need = target - len(conns)
    await asyncio.gather(*(one() for _ in range(max(0, need))))
    return failed, time.monotonic() - t0


async def again(request, conns):
    t0 = time.monotonic()
    sem = asyncio.Semaphore(PARALLEL)

    async def one(c):
        async with sem:
            if c.closed:
                return False
            c.done = asyncio.get_running_loop().create_future()
            c.need = None
            c.transport.write(request)
            try:
                return await asyncio.wait_for(c.done, TIMEOUT) == 200
            except (asyncio.TimeoutError, ConnectionError):
                return False
    results = await asyncio.gather(*(one(c) for c in conns))
    ok = sum(1 for r in results if r)
    return ok, len(results) - ok, time.monotonic() - t0


async def main():
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if not ipaddress.ip_address(host).is_loopback:
        sys.exit("holdconns: only loopback targets")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    request = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (path, host, port)).encode()
    conns = []
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            for c in conns:
                if c.transport:
                    c.transport.close()
            await asyncio.sleep(0.2)
            print("BYE", flush=True)
            return
        if cmd[0] == "open":
            failed, secs = await grow(host, port, request, conns, int(cmd[1]))
            print("OK held=%d failed=%d secs=%.2f" % (len(conns), failed, secs), flush=True)
        elif cmd[0] == "again":
            ok, failed, secs = await again(request, conns)
            print("AGAIN ok=%d failed=%d secs=%.2f" % (ok, failed, secs), flush=True)
        elif cmd[0] == "check":
            print("ALIVE %d" % sum(1 for c in conns if not c.closed), flush=True)
        else:
            print("ERR unknown command", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
