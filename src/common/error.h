/* Error values carried between internal modules.
 *
 * Host-side modules that have no device context (file readers, parsers,
 * the binary cache) report into a clt_err; the context keeps one of these
 * as its "last error". A NULL clt_err* is allowed everywhere: the status is
 * still returned, only the message is dropped. */
#ifndef CLT_COMMON_ERROR_H
#define CLT_COMMON_ERROR_H

#include "cltrain.h"

#define CLT_ERR_MSG_MAX 4096

typedef struct clt_err {
  clt_status status;
  char msg[CLT_ERR_MSG_MAX];
} clt_err;

/* Records status and a printf-style message in err (if not NULL) and
 * returns status, so callers can write `return clt_err_set(err, ...)`. */
clt_status clt_err_set(clt_err *err, clt_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to the message already in err; returns err->status. */
clt_status clt_err_prefix(clt_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void clt_err_clear(clt_err *err);

/* Evaluates expr (a clt_status); returns it from the caller if not CLT_OK. */
#define CLT_TRY(expr)                                                          \
  do {                                                                         \
    clt_status clt_try_status_ = (expr);                                       \
    if (clt_try_status_ != CLT_OK) return clt_try_status_;                     \
  } while (0)

#endif
