/* Wall-clock seconds for timing on the host: CLOCK_MONOTONIC, so a
 * change of the system's date never makes a duration negative. Only
 * differences between two calls mean anything. */
#ifndef CLT_COMMON_CLOCK_H
#define CLT_COMMON_CLOCK_H

#include <time.h>

static inline double clt_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
