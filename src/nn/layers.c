/* The registry of layer types. */
#include <string.h>

#include "graph/graph.h"

extern const clt_layer_ops clt_layer_input, clt_layer_flatten,
    clt_layer_reshape, clt_layer_dense, clt_layer_relu, clt_layer_leaky_relu,
    clt_layer_sigmoid, clt_layer_tanh, clt_layer_gelu, clt_layer_silu,
    clt_layer_swish, clt_layer_elu, clt_layer_softplus, clt_layer_softmax,
    clt_layer_softmax_xent, clt_layer_sigmoid_xent, clt_layer_mse,
    clt_layer_mae, clt_layer_huber,
    clt_layer_conv2d, clt_layer_maxpool,
    clt_layer_avgpool, clt_layer_global_avgpool, clt_layer_global_maxpool,
    clt_layer_batchnorm,
    clt_layer_dropout, clt_layer_add, clt_layer_concat, clt_layer_normalize,
    clt_layer_layernorm, clt_layer_depthwise_conv2d;

/* In the order error messages list them: structure, then activations,
 * then losses. */
static const clt_layer_ops *const layers[] = {
    &clt_layer_input,     &clt_layer_flatten,   &clt_layer_reshape,
    &clt_layer_dense,     &clt_layer_conv2d,    &clt_layer_depthwise_conv2d,
    &clt_layer_maxpool,
    &clt_layer_avgpool,   &clt_layer_global_avgpool, &clt_layer_global_maxpool,
    &clt_layer_batchnorm,
    &clt_layer_layernorm,
    &clt_layer_dropout,   &clt_layer_add,       &clt_layer_concat,
    &clt_layer_normalize, &clt_layer_relu,      &clt_layer_leaky_relu,
    &clt_layer_sigmoid,   &clt_layer_tanh,      &clt_layer_gelu,
    &clt_layer_silu,      &clt_layer_swish,     &clt_layer_elu,
    &clt_layer_softplus,
    &clt_layer_softmax,   &clt_layer_softmax_xent,
    &clt_layer_sigmoid_xent, &clt_layer_mse, &clt_layer_mae, &clt_layer_huber,
};

#define LAYER_COUNT (sizeof layers / sizeof layers[0])

const clt_layer_ops *clt_layer_find(const char *type) {
  for (size_t i = 0; i < LAYER_COUNT; i++)
    if (strcmp(layers[i]->type, type) == 0) return layers[i];
  return NULL;
}

const char *clt_layer_type_at(int i) {
  return i >= 0 && (size_t)i < LAYER_COUNT ? layers[i]->type : NULL;
}
