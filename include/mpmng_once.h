/* Log-once for every mpm-ng module (common/mpmng_once.c): a fault that
 * could repeat per request or per connection is logged the first time
 * only, whichever thread meets it first.
 *
 * A flag is an apr_uint32_t starting at 0 (static, or in a struct that is
 * zeroed); storing 0 again re-arms it. */
#ifndef MPMNG_ONCE_H
#define MPMNG_ONCE_H

#include "httpd.h"
#include "apr_errno.h"

#include "mpmng_common.h"

/* 1 for the first caller on flag (0 -> 1 atomically), 0 ever after. */
MPMNG_HIDDEN int mpmng_once(volatile apr_uint32_t *flag);

/* ap_log_error the first time only.  Pass APLOG_MARK for file, line and
 * module_index so the line is the caller's and the module's LogLevel
 * applies:
 *   mpmng_log_once(&logged, APLOG_MARK, APLOG_WARNING, rv, s, "...", ...);
 * The message is formatted (APR's printf, %pI etc.) only when logged. */
MPMNG_HIDDEN void mpmng_log_once(volatile apr_uint32_t *flag,
                                 const char *file, int line,
                                 int module_index, int level,
                                 apr_status_t rv, const server_rec *s,
                                 const char *fmt, ...) MPMNG_PRINTF(8, 9);

#endif
