dnl mpm_reuseport (mpm-ng) in httpd's own build: the platform check.
dnl
dnl build/intree/install.sh copies this file to server/mpm/reuseport/config.m4
dnl in an httpd 2.4 source tree, with the sources and config3.m4 (which names
dnl the objects); after ./buildconf, `./configure --with-mpm=reuseport` links
dnl the MPM into httpd and `--enable-mpms-shared=all` builds
dnl mod_mpm_reuseport.so beside the stock MPMs.  See docs/building-from-source.md.

AC_MSG_CHECKING(if reuseport MPM supports this platform)
case $host in
    *-linux-*)
        reuseport_os=yes
        ;;
    *)
        reuseport_os=no
        ;;
esac
if test $reuseport_os != yes; then
    dnl epoll, eventfd, SO_REUSEPORT groups and their BPF steering
    AC_MSG_RESULT(no - needs Linux)
elif test $forking_mpms_supported != yes; then
    AC_MSG_RESULT(no - This is not a forking platform)
elif test $ac_cv_define_APR_HAS_THREADS != yes; then
    AC_MSG_RESULT(no - APR does not support threads)
elif test $have_threaded_sig_graceful != yes; then
    AC_MSG_RESULT(no - SIG_GRACEFUL cannot be used with a threaded MPM)
else
    AC_MSG_RESULT(yes)
    APACHE_MPM_SUPPORTED(reuseport, yes, yes)
fi
