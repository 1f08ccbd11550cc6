/* Reading a whole file for the command (cli.h). Its own file, without the
 * library's calls, so that the programs built on the command's image
 * reader alone (a fuzz harness, tests) link it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

clt_status cli_read_file(const char *path, int64_t max_bytes, uint8_t **bytes,
                         size_t *size, cli_err *err) {
  *bytes = NULL;
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return cli_err_set(err, CLT_ERR_IO, "cannot open %s: %s", path,
                       strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return cli_err_set(err, CLT_ERR_IO, "cannot read %s: not a regular file",
                       path);
  }
  if ((int64_t)st.st_size > max_bytes) {
    fclose(f);
    return cli_err_set(err, CLT_ERR_FORMAT, "%s: %lld bytes is too large",
                       path, (long long)st.st_size);
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = malloc(n + 1);
  if (!buf) {
    fclose(f);
    return cli_err_set(err, CLT_ERR_HOST_MEMORY, "%s", path);
  }
  size_t got = fread(buf, 1, n, f);
  fclose(f);
  if (got != n) {
    free(buf);
    return cli_err_set(err, CLT_ERR_IO, "cannot read %s", path);
  }
  buf[n] = 0;
  *bytes = buf;
  *size = n;
  return CLT_OK;
}
