/* Graphs from text: a model file (clt_graph_load_model) and a layer line
 * (clt_graph_add). The file format is io/'s; each line's options go to
 * the graph as its layer options (graph/layer_args.h). */
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "io/model_file.h"
#include "runtime/runtime.h"
#include "runtime/sha256.h"

CLT_API clt_status clt_graph_add(clt_graph *g, const char *type,
                                 const char *name, const clt_node *inputs,
                                 int n_inputs, const char *options,
                                 clt_node *out) {
  if (!type || !*type)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "graph: a layer needs a type");
  char text[4096];
  snprintf(text, sizeof text, "%s %s\n", type, options ? options : "");
  clt_model_desc d;
  clt_err err = {0};
  if (clt_model_parse_text(text, type, &d, &err) != CLT_OK)
    return clt_ctx_fail(g->ctx, err.status, "%s", err.msg);
  clt_layer_args a = clt_model_layer_args(&d, &d.layers[0]);
  clt_status st = clt_graph_add_args(g, &a, name, inputs, n_inputs, out);
  clt_model_desc_free(&d);
  return st;
}

CLT_API clt_status clt_graph_load_model(clt_context *ctx, const char *path,
                                        clt_graph **out) {
  *out = NULL;
  clt_model_desc d;
  clt_err err = {0};
  if (clt_model_parse_file(path, &d, &err) != CLT_OK)
    return clt_ctx_fail(ctx, err.status, "%s", err.msg);
  clt_graph *g = NULL;
  clt_status st = clt_graph_create(ctx, &g);
  for (int i = 0; st == CLT_OK && i < d.layer_count; i++) {
    clt_layer_args a = clt_model_layer_args(&d, &d.layers[i]);
    st = clt_graph_add_args(g, &a, NULL, NULL, 0, NULL);
  }
  if (st == CLT_OK && g->input_node < 0)
    st = clt_ctx_fail(ctx, CLT_ERR_FORMAT, "%s: no 'input' layer", path);
  if (st == CLT_OK) {
    uint8_t digest[32];
    clt_sha256_buffer(d.text, strlen(d.text), digest);
    clt_sha256_hex(digest, g->source_hash);
    *out = g;
  } else {
    clt_graph_destroy(g);
  }
  clt_model_desc_free(&d);
  return st;
}

