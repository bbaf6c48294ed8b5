dnl mpm_reuseport in httpd's build: what to compile once it is chosen
dnl (--with-mpm=reuseport or --enable-mpms-shared).  The object list is
dnl mpm_reuseport/*.c; test/build/check_build_files.py keeps it in step.

APACHE_SUBST(MOD_MPM_REUSEPORT_LDADD)

dnl The helpers every mpm-ng module compiles in: common/*.c, copied beside
dnl the sources by install.sh.  Named apart from the list below, which
dnl check_build_files.py matches against mpm_reuseport/*.c; keep in step
dnl with common/*.c (and mod_fhcache's config.m4).
mpmng_common_lo="mpmng_httpd.lo mpmng_int.lo mpmng_int_cmd.lo mpmng_once.lo"

APACHE_MPM_MODULE(reuseport, $enable_mpm_reuseport, [mod_mpm_reuseport.lo rp_accept.lo rp_affinity.lo rp_balance.lo rp_balance_rule.lo rp_bstats.lo rp_callbacks.lo rp_child.lo rp_config.lo rp_conn.lo rp_conn_life.lo rp_cpumap.lo rp_crash.lo rp_drop_rule.lo rp_forkguard.lo rp_generation.lo rp_hold.lo rp_inbuf.lo rp_inherit.lo rp_lf.lo rp_listen.lo rp_loop.lo rp_parent.lo rp_poll_epoll.lo rp_readahead.lo rp_relief.lo rp_relief_rule.lo rp_refuse.lo rp_reqscan.lo rp_rtconf.lo rp_rtimeout.lo rp_sdnotify.lo rp_sdstore.lo rp_settings.lo rp_smallflush.lo rp_spool.lo rp_steer.lo rp_stock.lo rp_timeq.lo rp_tlsbody.lo rp_trim.lo rp_upgrade.lo $mpmng_common_lo], , ,
                  [\$(MOD_MPM_REUSEPORT_LDADD)])
