/* Checkpoints: a graph's parameters and the training state in a
 * safetensors file (names and layout in include/cltrain.h). The public
 * functions are clt_checkpoint_save, _load_weights, _resume and
 * _read_info; this header adds what the fit loop needs beyond them. */
#ifndef CLT_IO_CHECKPOINT_H
#define CLT_IO_CHECKPOINT_H

#include "graph/graph.h"

/* Version of the layout of the training state (__train__.state[0]). */
#define CLT_CHECKPOINT_FORMAT 1

typedef struct clt_checkpoint_train {
  int epoch;                      /* epochs done */
  uint64_t data_seed;             /* the fit's shuffling seed */
  const clt_epoch_stats *history; /* epoch entries, or NULL */
  /* The training data's class names (saved as metadata), or NULL. */
  char *const *class_names;
  int n_class_names;
  /* The training data's values, "bytes" or "floats" (metadata
   * "input_values"), or NULL: not known. */
  const char *input_values;
  /* The training data's CSV label column (metadata "label_column"), or
   * NULL: the first, or not CSV. */
  const char *label_column;
} clt_checkpoint_train;

/* clt_checkpoint_save with the fit's data seed (the public function
 * records the graph's seed as the data seed). */
clt_status clt_checkpoint_write(clt_graph *g, const clt_optimizer *opt,
                                const clt_checkpoint_train *train,
                                const char *path);

#endif
