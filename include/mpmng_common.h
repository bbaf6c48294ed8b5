/* What every mpm-ng module shares: helpers written once in common/ and
 * compiled into each module (mod_mpm_reuseport, mod_fhcache, mpm_winnt_ng).
 *
 * Who may call them: the code of our own modules only.  They are not an
 * API for other httpd modules: each module carries a private copy, so the
 * symbols are hidden (MPMNG_HIDDEN) and never exported from a .so or from
 * an httpd binary with the MPM linked in.  Two of our modules loaded into
 * one httpd then each call their own copy: a newer mod_fhcache.so beside an
 * older mod_mpm_reuseport.so cannot bind to the older one's functions
 * (httpd loads modules with RTLD_GLOBAL, where the first default-visibility
 * definition would win).  Windows DLLs export nothing not asked for, so
 * there the macro is empty (mingw's gcc would warn about the attribute). */
#ifndef MPMNG_COMMON_H
#define MPMNG_COMMON_H

#if defined(__GNUC__) && !defined(_WIN32)
#define MPMNG_HIDDEN __attribute__((visibility("hidden")))
#else
#define MPMNG_HIDDEN
#endif

#ifdef __GNUC__
#define MPMNG_PRINTF(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define MPMNG_PRINTF(fmt, first)
#endif

#endif
