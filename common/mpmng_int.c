/* A directive's integer: one parser and one message for every module
 * (include/mpmng_int.h).  Pure C so the unit tests and mpm_winnt_ng's pure
 * settings build it natively. */
#include "mpmng_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* strtol would skip leading blanks and take "+-" oddities as no number at
 * all; asking for a digit after an optional sign keeps the rule plain. */
static int looks_numeric(const char *arg)
{
    if (*arg == '+' || *arg == '-') {
        arg++;
    }
    return isdigit((unsigned char)*arg);
}

int mpmng_int_parse(const char *arg, int min, int max, int *out)
{
    char *end;
    long v;

    if (!arg || !looks_numeric(arg)) {
        return MPMNG_INT_NOT_A_NUMBER;
    }
    errno = 0;
    v = strtol(arg, &end, 10);
    if (*end != '\0') {
        return MPMNG_INT_NOT_A_NUMBER;
    }
    /* long is 32 bits on Windows: ERANGE covers what does not fit there. */
    if (errno == ERANGE || v < min || v > max) {
        return MPMNG_INT_OUT_OF_RANGE;
    }
    *out = (int)v;
    return MPMNG_INT_OK;
}

const char *mpmng_int_explain(char *buf, size_t len, const char *name,
                              const char *arg, int rc, int min, int max,
                              const char *alt)
{
    const char *q = rc == MPMNG_INT_OUT_OF_RANGE ? "" : "'";
    const char *why = rc == MPMNG_INT_OUT_OF_RANGE ? "is out of range"
                                                   : "is not a whole number";

    /* A number is shown bare, anything else quoted so blanks show. */
    snprintf(buf, len, "%s: %s%s%s %s; use %s%d to %d", name, q,
             arg ? arg : "", q, why, alt ? alt : "", min, max);
    return buf;
}
