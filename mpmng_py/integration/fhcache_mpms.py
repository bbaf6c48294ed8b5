"""The MPMs mod_fhcache is tested under, and their sizing for one child
(the cache is per child: counters and hits are that child's) or two
(several caches at once)."""
import os

from mpmng_py.integration.common import OUT, mpm_available

FHCACHE_SO = os.path.join(OUT, "mod_fhcache.so")

# Every MPM this httpd can run, or those named in MPMNG_FHCACHE_MPMS.
MPMS = [m for m in os.environ.get("MPMNG_FHCACHE_MPMS",
                                  "reuseport,event,worker,prefork").split(",")
        if m and mpm_available(m)]

_THREADED = ("StartServers {n}\nServerLimit {n}\nThreadsPerChild {t}\n"
             "MaxRequestWorkers 8\nMinSpareThreads {spare}\nMaxSpareThreads 8\n")
_SIZING = {
    "event": _THREADED,
    "worker": _THREADED,
    "prefork": ("StartServers {n}\nMinSpareServers {n}\nMaxSpareServers {n}\n"
                "ServerLimit {n}\nMaxRequestWorkers {n}\n"),
    "reuseport": ("ReusePortBuckets {n}\nStartServers {n}\nServerLimit {n}\n"
                  "ThreadsPerChild {t}\nMaxRequestWorkers 8\n"),
}


def one_child(mpm):
    return _SIZING[mpm].format(n=1, t=8, spare=1)


def two_children(mpm):
    return _SIZING[mpm].format(n=2, t=4, spare=8)
