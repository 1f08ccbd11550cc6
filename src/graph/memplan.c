/* Buffer planning by liveness (DESIGN.md: buffers are planned when the
 * graph is compiled for a batch size, so that a training step allocates
 * nothing). Every node output, gradient and layer workspace is a request
 * with the steps it lives over; requests whose steps do not overlap share
 * device memory. A compile runs the graph as 2N steps over its N nodes:
 * node i's forward is step i and its backward step 2N-1-i.
 *
 * What lives how long:
 *   - an output from its forward to its own backward, 2N-1-i: its
 *     consumers come later, so their backwards (which read it) come
 *     earlier; reshapes are views and change nothing;
 *   - the input's output (the loader writes it before step 0) and the
 *     loss's input (clt_graph_predictions reads it after any step): always;
 *   - a gradient from the backward of its last consumer (the first to
 *     write it) to its own backward; the loss's input's from the loss's
 *     forward, which may compute it there (clt_graph_loss_grad; the loss
 *     is the last node, so that is one step earlier);
 *   - a workspace as its layer declares (clt_live).
 * Placement is greedy by size (largest first, each at the lowest offset
 * free over its steps) in arenas of at most the device's largest buffer;
 * offsets are aligned so that kernels and CLBlast see aligned operands.
 * Views carry the offset (KT passes it to every kernel); a GEMM hands
 * CLBlast a sub-buffer of the view instead (ops/gemm.c), which OpenCL
 * allows at multiples of the device's base address alignment. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "tensor/tensor.h"

int64_t clt_graph_plan_align(const clt_context *ctx) {
  int64_t device = (int64_t)(ctx->base_align_bytes / 4);
  if (device > CLT_PLAN_ALIGN_MAX) device = CLT_PLAN_ALIGN_MAX;
  return device > CLT_PLAN_ALIGN_ELEMS ? device : CLT_PLAN_ALIGN_ELEMS;
}

static int64_t align_up(int64_t x, int64_t align) {
  return (x + align - 1) / align * align;
}

static int step_forward(const clt_graph *g, int node) {
  (void)g;
  return node;
}

static int step_backward(const clt_graph *g, int node) {
  return 2 * g->n_nodes - 1 - node;
}

static clt_status add_request(clt_graph *g, int node, int kind,
                              clt_tensor **slot, clt_dtype dtype,
                              int64_t numel, int first, int last) {
  size_t size = clt_dtype_size(dtype);
  if (size != 4 && size != 2)
    return clt_ctx_fail(g->ctx, CLT_ERR_INTERNAL,
                        "buffer plan: only 4- and 2-byte element types");
  if (g->n_requests == g->cap_requests) {
    int cap = g->cap_requests ? 2 * g->cap_requests : 64;
    clt_buffer_request *r = realloc(g->requests, (size_t)cap * sizeof *r);
    if (!r) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "buffer plan");
    g->requests = r;
    g->cap_requests = cap;
  }
  clt_buffer_request *r = &g->requests[g->n_requests++];
  memset(r, 0, sizeof *r);
  r->node = node;
  r->kind = kind;
  r->slot = slot;
  r->dtype = dtype;
  r->elems = numel;
  r->numel = size == 4 ? numel : (numel + 1) / 2;
  r->first = first;
  r->last = last;
  r->round = g->plan_round;
  r->arena = -1;
  r->partner = -1;
  return CLT_OK;
}

clt_status clt_graph_workspace(clt_graph *g, const clt_graph_node *n,
                               clt_dtype dtype, int64_t numel, clt_live live,
                               clt_tensor **slot) {
  int f = step_forward(g, n->index), b = step_backward(g, n->index);
  int first = 0, last = 2 * g->n_nodes - 1;
  switch (live) {
  case CLT_LIVE_FORWARD: first = last = f; break;
  case CLT_LIVE_BACKWARD: first = last = b; break;
  case CLT_LIVE_SAVED: first = f, last = b; break;
  case CLT_LIVE_ALWAYS: break;
  }
  *slot = NULL;
  return add_request(g, n->index, CLT_REQ_WORK, slot, dtype, numel, first,
                     last);
}

clt_status clt_graph_workspace_keep(clt_graph *g, const clt_graph_node *n,
                                    clt_dtype dtype, int64_t numel,
                                    clt_tensor **fwd, clt_tensor **bwd,
                                    bool *kept) {
  *kept = false;
  CLT_TRY(clt_graph_workspace(g, n, dtype, numel, CLT_LIVE_FORWARD, fwd));
  CLT_TRY(clt_graph_workspace(g, n, dtype, numel, CLT_LIVE_BACKWARD, bwd));
  clt_buffer_request *f = &g->requests[g->n_requests - 2];
  f->partner = g->n_requests - 1;
  f->kept = kept;
  return CLT_OK;
}

static clt_graph_node *owner_of(clt_graph *g, clt_graph_node *n) {
  while (clt_node_aliases(n)) n = clt_graph_in(g, n, 0);
  return n;
}

/* Whether mixed precision holds node i's output in fp16 between its last
 * consumer's forward and that consumer's backward: only where some step
 * lies between the two (the f32 forward window [i, c] and backward window
 * [2N-1-c, 2N-1-i] are then apart) and the output is rounded anyway
 * (save_f16 is set under mixed precision only). */
static bool saves_half(const clt_graph *g, const clt_graph_node *n, int c) {
  return g->save_f16 && c > n->index &&
         step_forward(g, c) + 1 < step_backward(g, c) &&
         n->index != g->input_node && !n->is_loss;
}

/* clt_graph.save_f16 (graph.h): the option, else CLT_SAVE_F16 (0 or 1),
 * else fp16 where every output and gradient in f32, unshared, would take
 * more than a quarter of the device's memory. Holding them in f32 saves
 * the forward's fp16 copy (2 bytes an element) and the backward's
 * conversion back (6): 10% of the wide ResNet's mixed step on an H200. */
static clt_status decide_save_f16(clt_graph *g) {
  g->save_f16 = false;
  if (g->precision != CLT_PRECISION_MIXED) return CLT_OK;
  if (g->save_f16_option >= 0) {
    g->save_f16 = g->save_f16_option == 1;
    return CLT_OK;
  }
  int env;
  CLT_TRY(clt_graph_env_switch(g, "CLT_SAVE_F16",
                               "saved outputs in f32 or in fp16", &env));
  if (env >= 0) {
    g->save_f16 = env == 1;
    return CLT_OK;
  }
  double bytes = 0.0;
  for (int i = 0; i < g->n_nodes; i++) {
    const clt_graph_node *n = &g->nodes[i];
    if (clt_node_aliases(n)) continue;
    bytes += 4.0 * (double)g->max_batch * (double)n->size *
             (n->needs_grad ? 2.0 : 1.0);
  }
  g->save_f16 = bytes > (double)g->ctx->info.global_mem_bytes / 4.0;
  clt_ctx_log(g->ctx, CLT_LOG_INFO,
              "mixed precision: saved outputs held in %s (outputs and "
              "gradients %.1f MiB in f32, the device %.1f MiB; "
              "CLT_SAVE_F16=0|1 chooses)",
              g->save_f16 ? "fp16" : "f32", bytes / 1048576.0,
              (double)g->ctx->info.global_mem_bytes / 1048576.0);
  return CLT_OK;
}

clt_status clt_graph_plan_node_buffers(clt_graph *g) {
  CLT_TRY(decide_save_f16(g));
  int n_nodes = g->n_nodes, all_last = 2 * n_nodes - 1;
  int *grad_first = malloc((size_t)n_nodes * sizeof *grad_first);
  if (!grad_first)
    return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "buffer plan");
  for (int i = 0; i < n_nodes; i++) grad_first[i] = step_backward(g, i);
  /* A gradient is first written by the backward of its last consumer
   * (through reshapes, whose gradients are views of their input's). */
  for (int c = 0; c < n_nodes; c++) {
    clt_graph_node *n = &g->nodes[c];
    if (clt_node_aliases(n)) continue;
    for (int k = 0; k < n->n_inputs; k++) {
      int o = owner_of(g, clt_graph_in(g, n, k))->index;
      if (step_backward(g, c) < grad_first[o])
        grad_first[o] = step_backward(g, c);
    }
  }
  /* The last consumer of each output (through reshapes). */
  for (int i = 0; i < n_nodes; i++) g->nodes[i].last_reader = -1;
  for (int c = 0; c < n_nodes; c++) {
    clt_graph_node *n = &g->nodes[c];
    if (clt_node_aliases(n)) continue;
    for (int k = 0; k < n->n_inputs; k++) {
      clt_graph_node *o = owner_of(g, clt_graph_in(g, n, k));
      if (c > o->last_reader) o->last_reader = c;
    }
  }
  int pinned = -1;
  if (g->loss_node >= 0) {
    pinned = owner_of(g, clt_graph_in(g, &g->nodes[g->loss_node], 0))->index;
    /* the loss's forward may write that gradient (clt_graph_loss_grad) */
    if (step_forward(g, g->loss_node) < grad_first[pinned])
      grad_first[pinned] = step_forward(g, g->loss_node);
  }
  clt_status st = CLT_OK;
  for (int i = 0; st == CLT_OK && i < n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    if (clt_node_aliases(n)) continue;
    int64_t len = g->max_batch * n->size;
    bool always = i == g->input_node || i == pinned;
    int c = n->last_reader;
    if (!always && saves_half(g, n, c)) {
      st = add_request(g, i, CLT_REQ_OUT, NULL, CLT_F32, len,
                       step_forward(g, i), step_forward(g, c));
      if (st == CLT_OK)
        st = add_request(g, i, CLT_REQ_OUT16, NULL, CLT_F16, len,
                         step_forward(g, i), step_backward(g, c));
      if (st == CLT_OK)
        st = add_request(g, i, CLT_REQ_OUT_BWD, NULL, CLT_F32, len,
                         step_backward(g, c), step_backward(g, i));
    } else {
      /* a folded batchnorm's output is written by its conv2d's forward */
      int from = n->bn_folded ? clt_graph_in(g, n, 0)->index : i;
      st = add_request(g, i, CLT_REQ_OUT, NULL, CLT_F32, len,
                       always ? 0 : step_forward(g, from),
                       always ? all_last : step_backward(g, i));
    }
    if (st == CLT_OK && n->needs_grad && !n->is_loss)
      st = add_request(g, i, CLT_REQ_GRAD, NULL, CLT_F32, len, grad_first[i],
                       step_backward(g, i));
  }
  free(grad_first);
  return st;
}

static clt_tensor **slot_of(clt_graph *g, const clt_buffer_request *r) {
  if (r->kind == CLT_REQ_OUT) return &g->nodes[r->node].out;
  if (r->kind == CLT_REQ_GRAD) return &g->nodes[r->node].grad;
  if (r->kind == CLT_REQ_OUT_BWD) return &g->nodes[r->node].out_bwd;
  if (r->kind == CLT_REQ_OUT16) return &g->nodes[r->node].out16;
  return r->slot;
}

static bool overlap_in_time(const clt_buffer_request *a,
                            const clt_buffer_request *b) {
  return a->first <= b->last && b->first <= a->last;
}

/* Largest first; ties in the order asked, so that plans are reproducible. */
static bool before_by_size(const clt_buffer_request *rs, int a, int b) {
  if (rs[a].numel != rs[b].numel) return rs[a].numel > rs[b].numel;
  return a < b;
}

static bool before_by_offset(const clt_buffer_request *rs, int a, int b) {
  if (rs[a].offset != rs[b].offset) return rs[a].offset < rs[b].offset;
  return a < b;
}

/* Insertion sort of request indices (a graph has hundreds at most). */
static void sort_requests(int *idx, int count, const clt_buffer_request *rs,
                          bool (*before)(const clt_buffer_request *, int,
                                         int)) {
  for (int i = 1; i < count; i++) {
    int v = idx[i], j = i;
    for (; j > 0 && before(rs, v, idx[j - 1]); j--) idx[j] = idx[j - 1];
    idx[j] = v;
  }
}

/* The lowest aligned offset in arena a where r fits beside the requests
 * already placed there that live at the same time; -1 if none below cap.
 * near: scratch of n_requests ints. */
static int64_t lowest_fit(clt_graph *g, int a, const clt_buffer_request *r,
                          int64_t cap, int *near) {
  int count = 0;
  for (int i = 0; i < g->n_requests; i++) {
    const clt_buffer_request *p = &g->requests[i];
    if (p->arena == a && p != r && overlap_in_time(p, r)) near[count++] = i;
  }
  sort_requests(near, count, g->requests, before_by_offset);
  int64_t off = 0, align = clt_graph_plan_align(g->ctx);
  for (int i = 0; i < count; i++) {
    const clt_buffer_request *p = &g->requests[near[i]];
    if (off + r->numel <= p->offset) break;
    int64_t end = align_up(p->offset + p->numel, align);
    if (end > off) off = end;
  }
  return off + r->numel <= cap ? off : -1;
}

static clt_status add_arena(clt_graph *g, int64_t numel) {
  if (g->n_arenas == g->cap_arenas) {
    int cap = g->cap_arenas ? 2 * g->cap_arenas : 4;
    clt_tensor **a = realloc(g->arenas, (size_t)cap * sizeof *a);
    if (!a) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "buffer plan");
    g->arenas = a;
    g->cap_arenas = cap;
  }
  CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &numel,
                            &g->arenas[g->n_arenas]));
  g->n_arenas++;
  g->arena_bytes += numel * 4;
  return CLT_OK;
}

/* Places the requests order[0..count) (sorted, merged partners left out)
 * into new arenas from first_arena on: their arena and offset, the
 * arenas' sizes into sizes (room for count). Returns the arenas used. */
static int assign(clt_graph *g, const int *order, int count, int first_arena,
                  int64_t cap, int64_t *sizes, int *near) {
  int n_new = 0;
  for (int k = 0; k < count; k++) g->requests[order[k]].arena = -1;
  for (int k = 0; k < count; k++) {
    clt_buffer_request *r = &g->requests[order[k]];
    for (int a = 0; a < n_new && r->arena < 0; a++) {
      int64_t off = lowest_fit(g, first_arena + a, r, cap, near);
      if (off >= 0) {
        r->arena = first_arena + a;
        r->offset = off;
      }
    }
    if (r->arena < 0) {
      r->arena = first_arena + n_new;
      sizes[n_new++] = 0;
      r->offset = 0;
    }
    int64_t *size = &sizes[r->arena - first_arena];
    if (r->offset + r->numel > *size) *size = r->offset + r->numel;
  }
  return n_new;
}

static int64_t total(const int64_t *sizes, int n) {
  int64_t t = 0;
  for (int i = 0; i < n; i++) t += sizes[i];
  return t;
}

/* The round's requests to place, sorted (merged partners left out). */
static int placeable(clt_graph *g, int round, int *order) {
  int count = 0;
  for (int i = 0; i < g->n_requests; i++)
    if (g->requests[i].round == round && !g->requests[i].merged)
      order[count++] = i;
  sort_requests(order, count, g->requests, before_by_size);
  return count;
}

/* Keeps a pair's forward contents for its backward (one buffer alive
 * from the forward to the backward, saving the backward the work of making
 * them again) where the plan grows by at most KEEP_GROWTH of what it was
 * before any pair was kept: memory for speed, within a bound. */
#define KEEP_GROWTH 0.125
static void try_merges(clt_graph *g, int round, int64_t cap, int *order,
                       int64_t *sizes, int *near) {
  int first = g->n_arenas;
  int count = placeable(g, round, order);
  int64_t best = total(sizes, assign(g, order, count, first, cap, sizes, near));
  int64_t limit = best + (int64_t)((double)best * KEEP_GROWTH);
  for (int i = 0; i < g->n_requests; i++) {
    clt_buffer_request *f = &g->requests[i];
    if (f->round != round || f->partner < 0) continue;
    clt_buffer_request *b = &g->requests[f->partner];
    int last = f->last;
    f->last = b->last;
    b->merged = true;
    count = placeable(g, round, order);
    int64_t t = total(sizes, assign(g, order, count, first, cap, sizes, near));
    if (t > limit) {
      f->last = last;
      b->merged = false;
    }
  }
}

clt_status clt_graph_plan_place(clt_graph *g) {
  int round = g->plan_round++;
  /* An arena is at most the device's largest buffer (and what a tensor
   * may index); a larger request gets its own and fails there, with the
   * pool's message. */
  int64_t cap = (int64_t)(g->ctx->info.max_alloc_bytes / 4);
  if (cap > INT32_MAX) cap = INT32_MAX;
  int64_t align = clt_graph_plan_align(g->ctx);
  cap = cap / align * align;
  int *order = malloc((size_t)(2 * g->n_requests + 1) * sizeof *order);
  int64_t *sizes = calloc((size_t)g->n_requests + 1, sizeof *sizes);
  if (!order || !sizes) {
    free(order);
    free(sizes);
    return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "buffer plan");
  }
  int *near = order + g->n_requests;
  for (int i = 0; i < g->n_requests; i++)
    if (g->requests[i].round == round) {
      clt_buffer_request *r = &g->requests[i];
      if (!g->share_buffers) { /* every buffer alive all the time */
        r->first = 0;
        r->last = INT_MAX;
      }
      g->requested_bytes += r->numel * 4;
    }
  try_merges(g, round, cap, order, sizes, near);
  int count = placeable(g, round, order);
  int first_arena = g->n_arenas;
  int n_new = assign(g, order, count, first_arena, cap, sizes, near);
  clt_status st = CLT_OK;
  for (int a = 0; st == CLT_OK && a < n_new; a++) st = add_arena(g, sizes[a]);
  for (int i = 0; st == CLT_OK && i < g->n_requests; i++) {
    clt_buffer_request *r = &g->requests[i];
    if (r->round != round) continue;
    const clt_buffer_request *at = r;
    if (r->merged) { /* the backward half of a kept pair: the forward's */
      for (int j = 0; j < g->n_requests; j++)
        if (g->requests[j].partner == i) at = &g->requests[j];
      r->arena = at->arena;
      r->offset = at->offset;
    }
    if (r->kept) *r->kept = r->partner >= 0 && g->requests[r->partner].merged;
    clt_tensor **slot = slot_of(g, r);
    st = clt_tensor_view(g->arenas[at->arena], at->offset, 1, &r->numel, slot);
    if (st == CLT_OK && clt_dtype_size(r->dtype) == 2) {
      /* Kernels index an f16 view in halves: its offset and length too. */
      clt_tensor *t = *slot;
      t->offset *= 2;
      t->numel = t->shape[0] = r->elems;
    }
    if (st == CLT_OK) (*slot)->dtype = r->dtype;
  }
  if (st == CLT_OK && count > 0)
    clt_ctx_log(g->ctx, CLT_LOG_INFO,
                "buffer plan, round %d: %d buffers; so far %.1f MiB asked, "
                "%.1f MiB held in %d shared buffers",
                round, count, (double)g->requested_bytes / 1048576.0,
                (double)g->arena_bytes / 1048576.0, g->n_arenas);
  free(order);
  free(sizes);
  return st;
}

void clt_graph_plan_release(clt_graph *g) {
  for (int i = 0; i < g->n_requests; i++) {
    clt_buffer_request *r = &g->requests[i];
    if (r->kind != CLT_REQ_WORK) continue; /* the nodes' own: graph.c */
    clt_tensor_destroy(*r->slot);
    *r->slot = NULL;
  }
  g->n_requests = 0;
  for (int a = 0; a < g->n_arenas; a++) clt_tensor_destroy(g->arenas[a]);
  g->n_arenas = 0;
  g->plan_round = 0;
  g->requested_bytes = g->arena_bytes = 0;
}
