/* Force-included (-include) into the build of an httpd release whose
 * mod_ssl predates OpenSSL 3 (2.4.37, built with OpenSSL 1.1.1 on RHEL 8),
 * by build/compat/build-httpd.sh, which does not patch httpd: OpenSSL 3
 * dropped ERR_GET_FUNC, which that mod_ssl uses once, to tell a private
 * key that does not match its certificate from an encrypted one.  As 0,
 * such a key is retried as encrypted and then refused, as any other
 * unreadable key is. */
#ifndef ERR_GET_FUNC
#define ERR_GET_FUNC(e) 0
#endif
