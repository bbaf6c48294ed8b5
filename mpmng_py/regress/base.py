"""Settings of the regression-suite runner: paths, ports, the test user,
the configuration added for our MPM and for mod_fhcache.
"""
import os

from mpmng_py import privhttpd

ROOT = privhttpd.ROOT
OUT = privhttpd.OUT
RESULTS = os.path.join(OUT, "regress")
CACHE = os.path.join(RESULTS, "cache")
FRAMEWORK = os.path.join(CACHE, "perl-framework")
PACKAGES_FILE = os.path.join(ROOT, "build", "packages", "regress.txt")

TEST_USER = os.environ.get("REGRESS_USER", "mpmng-regress")
APXS = privhttpd.APXS  # MPMNG_APXS: another httpd build's
SOURCE_SPECS = ["apache2", "apache2=2.4.68-1~deb12u1"]  # newest first
BASE_PORTS = [8529, 8629, 8729, 8829]  # one per concurrent run, 100 apart
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
STOCK = ("event", "worker", "prefork")
# No new t/TEST output for this long means a hang (the slowest test file
# takes well under a minute; configuring takes about one).
STALL = int(os.environ.get("REGRESS_STALL", "600"))
# Each t/TEST runs in a network namespace of its own that has only a
# loopback interface, so nothing it does can reach another address (the
# suite's mod_heartbeat test multicasts to 239.0.0.1: routed to lo here).
NETNS_SETUP = ("ip link set lo up && ip link set lo multicast on && "
               "ip route add 224.0.0.0/4 dev lo && exec \"$@\"")
# Without such a namespace these modules are left out (heartbeat.t skips).
MULTICAST_LOADS = ("heartbeat.load", "heartmonitor.load")
# "<mpm>+fhcache": the same MPM with mod_fhcache loaded and FHCache On for
# the whole server (every test file's files go through the cache).
FHCACHE_SO = os.path.join(OUT, "mod_fhcache.so")
FHCACHE_CONF = ("<IfModule fhcache_module>\n    FHCache On\n"
                "    # one line per response it serves: counted after the run\n"
                "    LogLevel fhcache:trace1\n</IfModule>\n")

# Sizing for our MPM: the same numbers Apache::Test gives mpm_worker
# (its <IfModule worker.c> block), spelled with 2.4 directive names.
REUSEPORT_CONF = """\
StartServers         @StartServersThreadedMPM@
ThreadsPerChild      @ThreadsPerChild@
MaxRequestWorkers    @MaxClientsThreadedMPM@
<IfDirective MinSpareThreads>
    MinSpareThreads  @ThreadsPerChild@
</IfDirective>
<IfDirective MaxSpareThreads>
    MaxSpareThreads  @MaxSpareThreadedMPM@
</IfDirective>
MaxConnectionsPerChild 0
ReusePortBuckets     auto
"""


def log(msg=""):
    print(msg, flush=True)


class SetupError(Exception):
    pass
