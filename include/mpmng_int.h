/* A directive's integer value, parsed and refused one way in every mpm-ng
 * module (common/mpmng_int.c, common/mpmng_int_cmd.c).
 *
 * Accepted: an optional sign and decimal digits, nothing else (no blanks,
 * no trailing characters, not empty), within [min, max].  Refused values
 * get one message form, naming the directive and the value:
 *
 *   "ThreadLimit: 'lots' is not a whole number; use 1 to 15000"
 *   "ThreadLimit: 20000 is out of range; use 1 to 15000"
 *
 * Nothing is defaulted or clamped here: a refused value is an error. */
#ifndef MPMNG_INT_H
#define MPMNG_INT_H

#include <stddef.h>

#include "mpmng_common.h"

#define MPMNG_INT_OK 0
#define MPMNG_INT_NOT_A_NUMBER (-1)  /* empty, blanks, garbage */
#define MPMNG_INT_OUT_OF_RANGE (-2)  /* outside [min, max], or overflow */

/* Parses arg into *out.  Returns one of MPMNG_INT_*; *out is set only on
 * MPMNG_INT_OK.  Pure C (no httpd or APR): unit-tested on its own. */
MPMNG_HIDDEN int mpmng_int_parse(const char *arg, int min, int max,
                                 int *out);

/* Writes the message for a result rc of mpmng_int_parse into buf (len
 * bytes, always terminated; cut if short) and returns buf:
 *   "<name>: '<arg>' is not a whole number; use <alt><min> to <max>"
 *   "<name>: <arg> is out of range; use <alt><min> to <max>"
 * alt: the directive's other words with their joiner, e.g. "'auto' or ",
 * or NULL. */
MPMNG_HIDDEN const char *mpmng_int_explain(char *buf, size_t len,
                                           const char *name, const char *arg,
                                           int rc, int min, int max,
                                           const char *alt);

/* For a directive handler: parses arg into *out and returns NULL, or the
 * message above (named after cmd's directive, from cmd->pool) for the
 * handler to return.  Context checks stay with the caller. */
struct cmd_parms_struct;
MPMNG_HIDDEN const char *mpmng_cmd_int(struct cmd_parms_struct *cmd,
                                       const char *arg, int min, int max,
                                       const char *alt, int *out);

/* The same message for a result rc a directive's own parser got from
 * mpmng_int_parse after taking its words ("auto", "off"); NULL for
 * MPMNG_INT_OK. */
MPMNG_HIDDEN const char *mpmng_cmd_int_error(struct cmd_parms_struct *cmd,
                                             const char *arg, int rc,
                                             int min, int max,
                                             const char *alt);

#endif
