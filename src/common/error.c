#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

clt_status clt_err_set(clt_err *err, clt_status status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = status;
  }
  return status;
}

clt_status clt_err_prefix(clt_err *err, const char *fmt, ...) {
  if (!err) return CLT_ERR_INTERNAL;
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  char old[CLT_ERR_MSG_MAX];
  memcpy(old, err->msg, sizeof old);
  snprintf(err->msg, sizeof err->msg, "%s: %.*s", prefix,
           (int)(sizeof err->msg - strlen(prefix) - 3), old);
  return err->status;
}

void clt_err_clear(clt_err *err) {
  if (err) {
    err->status = CLT_OK;
    err->msg[0] = '\0';
  }
}
