/* Shared set-up of the device test suites.
 *
 * OpenCL state must not cross fork(), so every suite runs its tests in one
 * process (CK_NOFORK) on one context made at start-up on the device named
 * by $CLT_DEVICE (the same suite runs on POCL, rusticl or a GPU). A test
 * that fails in this mode ends at its failed assertion and may leak what
 * it allocated; the next test goes on with the same context. */
#ifndef CLT_TESTS_COMMON_H
#define CLT_TESTS_COMMON_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cltrain.h"
#include "run_checks.h"

/* The context every test of the suite uses. */
static clt_context *g_ctx;

/* Asserts that a call returned CLT_OK, printing the context's message if
 * not. */
#define ck_assert_ok(expr)                                                     \
  do {                                                                         \
    clt_status ck_ok_status_ = (expr);                                         \
    ck_assert_msg(ck_ok_status_ == CLT_OK, "%s: %s: %s", #expr,                \
                  clt_status_string(ck_ok_status_),                            \
                  clt_context_last_error(g_ctx));                              \
  } while (0)

/* Asserts that a check from ops/opcheck.h ran and that the error it
 * wrote into err stayed within tol; the printf-style arguments after tol
 * say which case it was:
 *   double e;
 *   ck_assert_check(clt_check_add(g_ctx, n, false, &e), e, 1e-6, "n=%d", n);
 */
#define ck_assert_check(call, err, tol, ...)                                   \
  do {                                                                         \
    char ck_where_[256];                                                       \
    snprintf(ck_where_, sizeof ck_where_, __VA_ARGS__);                        \
    (err) = -1.0;                                                              \
    clt_status ck_st_ = (call);                                                \
    ck_assert_msg(ck_st_ == CLT_OK, "%s (%s): %s: %s", #call, ck_where_,       \
                  clt_status_string(ck_st_), clt_context_last_error(g_ctx));   \
    ck_assert_msg((err) <= (tol), "%s (%s): max error %.3g > %.3g", #call,     \
                  ck_where_, (err), (double)(tol));                            \
  } while (0)

/* setenv (unsetenv where value is NULL) for the tests, safe beside the
 * OpenCL implementation's own threads: POCL's worker threads call getenv
 * while they run commands, and a setenv that moved the environment under
 * one crashed it (ASan: SEGV in getenv from libpocl-devices-pthread, in
 * test_graph). So the suite's context finishes every command first. */
static inline void test_setenv(const char *name, const char *value) {
  if (g_ctx) clt_context_finish(g_ctx);
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

/* True when the suite runs on Mesa's rusticl (for notes on its bugs). */
static inline bool test_on_rusticl(void) {
  return g_ctx &&
         strcasestr(clt_context_device(g_ctx)->platform_name, "rusticl");
}

/* True when $CLT_TEST_TINY is set to anything but "" or "0": tiny shapes
 * only (oclgrind). */
static inline bool test_tiny(void) {
  const char *v = getenv("CLT_TEST_TINY");
  return v && *v && strcmp(v, "0") != 0;
}

/* Opens the suite's context and says where the suite runs. Returns false
 * (after printing why) when no context can be made. */
static inline bool test_context_open(const char *suite) {
  char err[4096];
  clt_status st = clt_context_create(NULL, &g_ctx, err, sizeof err);
  if (st != CLT_OK) {
    fprintf(stderr, "%s: no context (%s): %s\n", suite, clt_status_string(st),
            err);
    return false;
  }
  const clt_device_info *d = clt_context_device(g_ctx);
  printf("%s: running on %s (%s, %s)%s\n", suite, d->name, d->platform_name,
         d->driver_version, test_tiny() ? ", tiny shapes" : "");
  fflush(stdout);
  return true;
}

/* Opens the context, then runs the suite that make() builds without
 * fork() on it, then destroys the context. Returns the process exit
 * status: nonzero when any test failed or no context could be made. */
static inline int test_run_suite(const char *name, Suite *(*make)(void)) {
  if (!test_context_open(name)) return EXIT_FAILURE;
  int failed = test_run_checks(make(), CK_NOFORK);
  clt_context_destroy(g_ctx);
  g_ctx = NULL;
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
