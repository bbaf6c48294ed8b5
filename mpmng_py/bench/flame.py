"""Stacks from `perf script`, folded and drawn as a flame graph (SVG), and
grouped into the stages of a request (profile part).

Folded form: one line per distinct stack, root first, frames joined by
';', then a space and the sample count (as Brendan Gregg's flame graph
tools read it)."""
import collections
import html
import re
import subprocess

# Where a sample's time goes: the first frame from the leaf up that matches
# decides.  Kernel frames first (a sample in the kernel is the kernel's,
# whichever httpd code made the system call), then httpd's stages.
GROUPS = [
    ("kernel: TCP/IP and loopback",
     r"^(tcp_|__tcp_|ip_|__ip_|ipv4_|inet_|skb_|__skb|sk_|sock_|__sock|net_|__netif|"
     r"netif_|__dev_queue|dev_hard|loopback_|process_backlog|__napi|napi_|"
     r"do_softirq|__local_bh|handle_softirqs|sendfile|do_splice|splice_|direct_splice|"
     r"generic_file_splice|filemap_)"),
    ("kernel: scheduling and wake-ups",
     r"^(schedule|__schedule|finish_task_switch|futex_|__futex|do_futex|try_to_wake_up|"
     r"ttwu_|__wake_up|pick_next|dequeue_task|enqueue_task)"),
    ("kernel: epoll", r"^(ep_|do_epoll|__x64_sys_epoll)"),
    ("kernel: memory (mmap, faults)",
     r"^(do_vmi|__vm_munmap|vm_mmap|do_mmap|mmap_region|__mmap_region|vms_|unmap_|"
     r"handle_mm_fault|do_user_addr_fault|exc_page_fault|tlb_|flush_tlb)"),
    ("kernel: files (open, stat, close)",
     r"^(do_sys_open|do_filp_open|path_openat|vfs_statx|vfs_fstat|__x64_sys_newfstatat|"
     r"filp_close|__fput|__x64_sys_close|__x64_sys_openat)"),
    ("kernel: system call entry and exit",
     r"^(entry_SYSCALL|do_syscall_64|syscall_exit|exit_to_user|irqentry_exit|"
     r"syscall_enter|__x64_sys_)"),
    ("TLS (OpenSSL, mod_ssl)", r"^(SSL_|ssl_|ssl3_|tls_|EVP_|ossl_|ssl_io_|OPENSSL_|CRYPTO_)"),
    ("HTTP/2 (mod_http2, nghttp2)", r"^(h2_|nghttp2_)"),
    ("MPM: event loop and hand-offs", r"^(rp_|listener_thread|worker_thread|process_socket|"
                                      r"ap_mpm_|event_|child_main)"),
    ("mod_fhcache", r"^fhc_"),
    ("logging", r"^(ap_run_log_transaction|log_config|config_log_transaction|ap_log_)"),
    ("request parsing", r"^(ap_read_request|ap_get_mime_headers|ap_parse_request_line|"
                        r"ap_rgetline|read_request_line|ap_getline|ap_check_request_header)"),
    ("translate and map_to_storage", r"^(ap_run_translate_name|ap_run_map_to_storage|"
                                     r"ap_core_translate|ap_location_walk|core_map_to_storage)"),
    ("directory walk", r"^(ap_directory_walk|ap_file_walk|resolve_symlink|prep_walk_cache)"),
    ("access and auth hooks", r"^(ap_run_access_checker|ap_run_check_user_id|"
                              r"ap_run_auth_checker|authz_|ap_run_access_checker_ex)"),
    ("type and fixups", r"^(ap_run_type_checker|ap_run_fixups|find_ct|mime_)"),
    ("handler", r"^(ap_invoke_handler|ap_run_handler|default_handler)"),
    ("filters and writing", r"^(ap_pass_brigade|ap_core_output_filter|ap_http_header_filter|"
                            r"ap_content_length_filter|ap_byterange_filter|send_brigade|"
                            r"writev_nonblocking|apr_socket_sendv|apr_socket_sendfile)"),
    ("pools and buckets", r"^(apr_pool_|apr_palloc|apr_pcalloc|apr_allocator|apr_bucket|"
                          r"apr_brigade|malloc|free|cfree|_int_)"),
]
_GROUP_RE = [(name, re.compile(rx)) for name, rx in GROUPS]
MAX_DEPTH = 64      # frames kept from the leaf up


def perf_script(data_path):
    """Samples of a perf.data file: a list of stacks, each leaf first, as
    (symbol, dso) pairs."""
    out = subprocess.run(["perf", "script", "-i", data_path, "-F", "ip,sym,dso"],
                         capture_output=True, text=True, timeout=600).stdout
    stacks, cur = [], []
    for line in out.splitlines():
        line = line.strip()
        if not line:
            if cur:
                stacks.append(cur)
            cur = []
            continue
        parts = line.split(None, 1)
        rest = parts[1] if len(parts) > 1 else "[unknown]"
        m = re.match(r"^(.*?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)$", rest)
        sym, dso = (m.group(1), m.group(2)) if m else (rest, "")
        frame = (sym or "[unknown]", dso.rsplit("/", 1)[-1])
        if frame[0] == "[unknown]" and cur and cur[-1][0] == "[unknown]":
            continue    # a run of frames perf could not name: one frame
        cur.append(frame)
    if cur:
        stacks.append(cur)
    return [s[:MAX_DEPTH] for s in stacks]


# Stacks perf could not unwind (libraries built without frame pointers)
# are counted by the library the sample is in.
DSO_GROUPS = [
    (r"^(libcrypto|libssl|mod_ssl)", "TLS (OpenSSL, mod_ssl)"),
    (r"^(libnghttp2|mod_http2)", "HTTP/2 (mod_http2, nghttp2)"),
    (r"^(libapr-|libaprutil-)", "APR (pools, buckets, tables), unattributed"),
    (r"^mod_mpm_", "MPM: event loop and hand-offs"),
    (r"^mod_fhcache", "mod_fhcache"),
    (r"^mod_", "other modules' hooks"),
    (r"^(apache2|httpd)$", "httpd core, unattributed"),
    (r"^(nginx|h2o|lighttpd)$", "nginx, h2o or lighttpd's own code"),
    (r"^libc", "libc (malloc, strings), unattributed"),
]
_DSO_RE = [(re.compile(rx), name) for rx, name in DSO_GROUPS]


def group_of(stack):
    for sym, _ in stack:
        for name, rx in _GROUP_RE:
            if rx.search(sym):
                return name
    leaf_dso = stack[0][1] if stack else ""
    for rx, name in _DSO_RE:
        if rx.search(leaf_dso):
            return name
    return "other (%s)" % (leaf_dso or "unknown")


def groups(stacks):
    return collections.Counter(group_of(s) for s in stacks)


def folded(stacks):
    c = collections.Counter(";".join(sym for sym, _ in reversed(s)) for s in stacks)
    return ["%s %d" % (k, n) for k, n in sorted(c.items())]


def _colour(name):
    h = sum(map(ord, name)) % 60
    if name.endswith("_[k]"):
        return "rgb(%d,%d,%d)" % (230, 120 + h, 50)
    return "rgb(%d,%d,%d)" % (200 + h // 2, 80 + h * 2, 60)


def svg(stacks, title, width=1200, row=16):
    """A flame graph: root at the bottom, each frame as wide as its samples."""
    root = {"n": 0, "kids": {}}
    for s in stacks:
        node = root
        node["n"] += 1
        for sym, dso in reversed(s):
            key = sym + ("_[k]" if "kernel" in dso else "")
            node = node["kids"].setdefault(key, {"n": 0, "kids": {}})
            node["n"] += 1
    total = max(1, root["n"])
    rects, depth_max = [], [0]

    def walk(node, x, depth):
        depth_max[0] = max(depth_max[0], depth)
        for name, kid in sorted(node["kids"].items()):
            w = kid["n"] / total * (width - 20)
            if w >= 0.3:
                rects.append((x, depth, w, name, kid["n"]))
                walk(kid, x, depth + 1)
            x += w
    walk(root, 10.0, 0)
    height = (depth_max[0] + 3) * row + 30
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="Verdana" font-size="11">' % (width, height),
           '<rect width="100%" height="100%" fill="#f8f8f8"/>',
           '<text x="%d" y="20" text-anchor="middle" font-size="15">%s</text>' % (
               width // 2, html.escape(title))]
    for x, depth, w, name, n in rects:
        y = height - (depth + 1) * row - 10
        label = name[:-4] if name.endswith("_[k]") else name
        tip = "%s (%d samples, %.1f%%)" % (label, n, 100.0 * n / total)
        out.append('<g><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d" '
                   'fill="%s" rx="2"/>' % (html.escape(tip), x, y, w, row - 1, _colour(name)))
        if w > 40:
            chars = int(w / 7)
            text = label if len(label) <= chars else label[:max(0, chars - 2)] + ".."
            out.append('<text x="%.1f" y="%d">%s</text>' % (x + 3, y + row - 4,
                                                            html.escape(text)))
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
