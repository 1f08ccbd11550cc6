/* Training curves as an SVG chart a browser shows: two panels, loss and
 * accuracy per epoch, training and test, with axes, ticks, grid and a
 * legend. Values that are NaN (no test set, epochs a resumed run does not
 * know) leave gaps. The command's own (`cltrain train --plot`): not part
 * of the library. */
#ifndef CLT_CLI_PLOT_H
#define CLT_CLI_PLOT_H

#include <stddef.h>

#include "cltrain.h"
#include "cli/cli.h"

/* The SVG document for history[0..epochs) under title (may be NULL), in a
 * new malloc'd NUL-terminated buffer that the caller frees. */
clt_status clt_plot_history_render(const clt_epoch_stats *history, int epochs,
                                   const char *title, char **svg,
                                   cli_err *err);

/* Renders and writes it to path atomically (temporary file in the same
 * folder, fsync, rename): a crash leaves the old file or none. CLT_ERR_IO
 * names the path and the reason. */
clt_status clt_plot_history_svg(const clt_epoch_stats *history, int epochs,
                                const char *title, const char *path,
                                cli_err *err);

#endif
