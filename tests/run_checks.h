/* Running a Check suite: what every test program's main does with its
 * runner, in one place. */
#ifndef CLT_TESTS_RUN_CHECKS_H
#define CLT_TESTS_RUN_CHECKS_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs the tests of s that CK_RUN_SUITE and CK_RUN_CASE select, forked or
 * not as fork says (CK_FORK_GETENV: Check's default, its CK_FORK
 * variable), and frees the runner. Returns the number of failures, a run
 * of no test counted as one: Check passes a selection that names nothing
 * (an empty CK_RUN_CASE, a case renamed since a script named it) as
 * "100%: Checks: 0", and a script that asked for one case would read that
 * as the case passing. */
static inline int test_run_checks(Suite *s, enum fork_status fork) {
  SRunner *runner = srunner_create(s);
  if (fork != CK_FORK_GETENV) srunner_set_fork_status(runner, fork);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  int run = srunner_ntests_run(runner);
  srunner_free(runner);
  if (run > 0) return failed;
  const char *suite = getenv("CK_RUN_SUITE"), *tcase = getenv("CK_RUN_CASE");
  fprintf(stderr,
          "no test ran: CK_RUN_SUITE=%s%s%s CK_RUN_CASE=%s%s%s selects none "
          "of this program's tests\n",
          suite ? "\"" : "", suite ? suite : "(not set)", suite ? "\"" : "",
          tcase ? "\"" : "", tcase ? tcase : "(not set)", tcase ? "\"" : "");
  return 1;
}

#endif
