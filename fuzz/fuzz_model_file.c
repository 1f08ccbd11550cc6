/* libFuzzer target for the model-file parser and its option getters.
 *
 * The input is the file's text (cut at the first NUL, as a C string). An
 * accepted file has at least one layer, lines in increasing order and
 * options with non-empty keys; then every getter runs on every option
 * (each may fail, none may crash), and check_all_used either passes or
 * names a line. A rejected file leaves the description zeroed and a
 * message that starts with "<source>:". Build: see fuzz/README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/words.h"
#include "io/model_file.h"

#define SOURCE "fuzz.model"

static void require(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "broken promise: %s\n", what);
    abort();
  }
}

static void exercise_getters(const clt_model_desc *d, clt_model_layer *l) {
  static const char *const choices[] = {"relu", "tanh", "sigmoid", NULL};
  clt_err err;
  clt_layer_args args = clt_model_layer_args(d, l);
  clt_layer_args *a = &args;
  for (int k = 0; k < l->option_count; k++) {
    const char *key = l->options[k].key;
    require(key && key[0], "non-empty key");
    int64_t i, dims[8];
    double f;
    const char *s;
    bool b;
    int idx, ndim;
    char **items = NULL;
    int count = 0;
    clt_args_get_int(a, key, true, 0, INT64_MIN, &i, &err);
    clt_args_get_float(a, key, true, 0.0, &f, &err);
    clt_args_get_string(a, key, true, NULL, &s, &err);
    clt_args_get_choice(a, key, choices, "relu", &idx, &err);
    clt_args_get_bool(a, key, false, &b, &err);
    if (clt_args_get_dims(a, key, true, 8, dims, &ndim, &err) == CLT_OK)
      require(ndim >= 1 && ndim <= 8, "dims count");
    if (clt_args_get_list(a, key, &items, &count, &err) == CLT_OK)
      clt_args_list_free(items, count);
    clt_closest_word(key, choices, 2);
  }
  /* Every option has been read now. */
  require(clt_args_check_all_used(a, NULL, &err) == CLT_OK, "all used");
  clt_args_get_int(a, "units", false, 1, 1, &(int64_t){0}, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  clt_model_desc d;
  clt_err err;
  memset(&err, 0, sizeof err);
  if (clt_model_parse_text(text, SOURCE, &d, &err) == CLT_OK) {
    require(d.layer_count >= 1, "a layer");
    for (int i = 0; i < d.layer_count; i++) {
      require(d.layers[i].line >= 1, "line numbers");
      require(i == 0 || d.layers[i].line > d.layers[i - 1].line, "order");
      require(d.layers[i].type && d.layers[i].type[0], "type");
      exercise_getters(&d, &d.layers[i]);
    }
  } else {
    require(strncmp(err.msg, SOURCE, strlen(SOURCE)) == 0,
            "message names the source");
    require(d.layers == NULL && d.layer_count == 0, "zeroed on failure");
  }
  clt_model_desc_free(&d);
  free(text);
  return 0;
}
