/* mpmng_int_parse for directive handlers: the message in the
 * configuration's pool, named after the directive being read. */
#include "mpmng_int.h"

#include "httpd.h"
#include "http_config.h"
#include "apr_strings.h"

const char *mpmng_cmd_int_error(cmd_parms *cmd, const char *arg, int rc,
                                int min, int max, const char *alt)
{
    char msg[512];

    if (rc == MPMNG_INT_OK) {
        return NULL;
    }
    return apr_pstrdup(cmd->pool, mpmng_int_explain(msg, sizeof msg,
                                                    cmd->cmd->name, arg, rc,
                                                    min, max, alt));
}

const char *mpmng_cmd_int(cmd_parms *cmd, const char *arg, int min, int max,
                          const char *alt, int *out)
{
    return mpmng_cmd_int_error(cmd, arg, mpmng_int_parse(arg, min, max, out),
                               min, max, alt);
}
