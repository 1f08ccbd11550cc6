/* Datasets from CSV files: `label,pixel1,...` rows, as in the widely
 * shared Fashion-MNIST and MNIST CSV files, or `t1,...,tK,pixel1,...` for
 * regression. The rules are those of clt_dataset_load_csv (cltrain.h). */
#ifndef CLT_DATA_CSV_H
#define CLT_DATA_CSV_H

#include "data/dataset.h"

/* Reads path into *out (empty on failure). o gives the shape, the label
 * bound or the target count. Errors name the file and the line:
 * CLT_ERR_IO (cannot read), CLT_ERR_FORMAT (a bad row or value, no rows),
 * CLT_ERR_INVALID_ARGUMENT (no shape in o), CLT_ERR_HOST_MEMORY. */
clt_status clt_csv_read(const char *path, const clt_data_options *o,
                        clt_dataset *out, clt_err *err);

#endif
