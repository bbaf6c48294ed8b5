/* Log-once (include/mpmng_once.h). */
#include "mpmng_once.h"

#include "http_log.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include <stdarg.h>

int mpmng_once(volatile apr_uint32_t *flag)
{
    /* Atomic: two workers meeting the fault together log one line. */
    return apr_atomic_cas32(flag, 1, 0) == 0;
}

void mpmng_log_once(volatile apr_uint32_t *flag, const char *file, int line,
                    int module_index, int level, apr_status_t rv,
                    const server_rec *s, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;

    if (!mpmng_once(flag)) {
        return;
    }
    va_start(ap, fmt);
    apr_vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ap_log_error_(file, line, module_index, level, rv, s, "%s", msg);
}
