/* Removing a folder the tests made, with everything in it (nftw, deepest
 * first, links not followed). For the suites that write files; a folder
 * left read-only by a test needs its modes put back first
 * (test_safetensors does). */
#ifndef CLT_TESTS_REMOVE_TREE_H
#define CLT_TESTS_REMOVE_TREE_H

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static int test_remove_entry(const char *path, const struct stat *st,
                             int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* Removes path and what is below it; what cannot be removed stays. */
static inline void test_remove_tree(const char *path) {
  nftw(path, test_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
