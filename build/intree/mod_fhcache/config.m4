dnl mod_fhcache (mpm-ng) in httpd's build: --enable-fhcache (shared when
dnl httpd builds shared modules).  Linux only: it is told of changes by
dnl inotify.  The object list is mod_fhcache/*.c;
dnl test/build/check_build_files.py keeps it in step.

APACHE_MODPATH_INIT(fhcache)

dnl The helpers every mpm-ng module compiles in: common/*.c, copied beside
dnl the sources by install.sh.  Named apart from the list below, which
dnl check_build_files.py matches against mod_fhcache/*.c; keep in step with
dnl common/*.c (and mpm_reuseport's config3.m4).
mpmng_common_lo="mpmng_httpd.lo mpmng_int.lo mpmng_int_cmd.lo mpmng_once.lo"

APACHE_MODULE(fhcache, [static files served from cached open descriptors (mpm-ng)],
              [fhc_bucket.lo fhc_cache.lo fhc_child.lo fhc_config.lo fhc_fill.lo fhc_meta.lo fhc_os_unix.lo fhc_os_win32.lo fhc_publish.lo fhc_serve.lo fhc_status.lo fhc_stopguard.lo fhc_tally.lo fhc_watch_inotify.lo fhc_watch_rdcw.lo fhc_watchset.lo mod_fhcache.lo $mpmng_common_lo], , no, [
    case $host in
        *-linux-*)
            ;;
        *)
            AC_MSG_WARN([mod_fhcache needs Linux (inotify); not building it])
            enable_fhcache=no
            ;;
    esac
])

APACHE_MODPATH_FINISH
