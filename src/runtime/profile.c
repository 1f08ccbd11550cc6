/* Per-op device time from OpenCL event profiling: an event slot per
 * enqueued command (or span of commands), summed by op name on demand. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

CLT_API void clt_profile_reset(clt_context *ctx) {
  for (size_t i = 0; i < ctx->profile_count; i++) {
    if (ctx->profile[i].begin) clReleaseEvent(ctx->profile[i].begin);
    if (ctx->profile[i].event) clReleaseEvent(ctx->profile[i].event);
  }
  ctx->profile_count = 0;
}

CLT_API bool clt_profile_timed(const clt_context *ctx) {
  return ctx->profiling && ctx->profile_timed;
}

static int by_seconds_desc(const void *a, const void *b) {
  double x = ((const clt_profile_row *)a)->seconds;
  double y = ((const clt_profile_row *)b)->seconds;
  return (x < y) - (x > y);
}

/* Untimed rows: the most calls first. */
static int by_calls_desc(const void *a, const void *b) {
  uint64_t x = ((const clt_profile_row *)a)->calls;
  uint64_t y = ((const clt_profile_row *)b)->calls;
  return (x < y) - (x > y);
}

/* Sums the profiled commands per op, or per (scope, op) when by_scope. */
static clt_status summarize(clt_context *ctx, bool by_scope,
                            clt_profile_row **rows, size_t *count) {
  *rows = NULL;
  *count = 0;
  if (!ctx->profiling)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "profiling is off for this context");
  CLT_TRY(clt_context_finish(ctx));
  clt_profile_row *out = calloc(ctx->profile_count + 1, sizeof *out);
  if (!out) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "profile summary");
  size_t n = 0;
  bool timed = ctx->profile_timed;
  for (size_t i = 0; i < ctx->profile_count; i++) {
    cl_event ev = ctx->profile[i].event, begin = ctx->profile[i].begin;
    cl_ulong start = 0, end = 0;
    /* A span starts where its marker completed (all before it done). */
    if (!ev) continue;
    if (timed &&
        (clGetEventProfilingInfo(begin ? begin : ev,
                                 begin ? CL_PROFILING_COMMAND_END
                                       : CL_PROFILING_COMMAND_START,
                                 sizeof start, &start, NULL) != CL_SUCCESS ||
         clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end,
                                 &end, NULL) != CL_SUCCESS ||
         end < start))
      continue;
    const char *op = ctx->profile[i].op;
    const char *layer = by_scope && ctx->profile[i].scope
                            ? ctx->profile[i].scope
                            : "";
    size_t j = 0;
    while (j < n && (strcmp(out[j].op, op) != 0 ||
                     (by_scope && strcmp(out[j].layer, layer) != 0)))
      j++;
    if (j == n) {
      out[n].op = op;
      out[n++].layer = by_scope ? layer : NULL;
    }
    out[j].calls++;
    out[j].seconds = timed ? out[j].seconds + (double)(end - start) * 1e-9
                           : NAN;
  }
  qsort(out, n, sizeof *out, timed ? by_seconds_desc : by_calls_desc);
  *rows = out;
  *count = n;
  return CLT_OK;
}

CLT_API clt_status clt_profile_summary(clt_context *ctx, clt_profile_row **rows,
                                       size_t *count) {
  return summarize(ctx, false, rows, count);
}

CLT_API clt_status clt_profile_summary_by_layer(clt_context *ctx,
                                                clt_profile_row **rows,
                                                size_t *count) {
  return summarize(ctx, true, rows, count);
}

/* Scopes beyond this many are not told apart (their commands get none). */
#define PROFILE_SCOPES_MAX 4096

void clt_profile_scope(clt_context *ctx, const char *name, const char *pass) {
  if (!ctx->profiling) return;
  ctx->profile_scope = NULL;
  if (!name) return;
  char want[160];
  snprintf(want, sizeof want, "%s%s%s", name, pass ? " " : "",
           pass ? pass : "");
  for (size_t i = 0; i < ctx->profile_scope_count; i++)
    if (strcmp(ctx->profile_scopes[i], want) == 0) {
      ctx->profile_scope = ctx->profile_scopes[i];
      return;
    }
  if (ctx->profile_scope_count == PROFILE_SCOPES_MAX) return;
  if (ctx->profile_scope_count % 64 == 0) {
    char **grown = realloc(ctx->profile_scopes,
                           (ctx->profile_scope_count + 64) * sizeof *grown);
    if (!grown) return;
    ctx->profile_scopes = grown;
  }
  char *copy = strdup(want);
  if (!copy) return;
  ctx->profile_scopes[ctx->profile_scope_count++] = copy;
  ctx->profile_scope = copy;
}

void clt_profile_release(clt_context *ctx) {
  clt_profile_reset(ctx);
  free(ctx->profile);
  ctx->profile = NULL;
  ctx->profile_count = ctx->profile_cap = 0;
  for (size_t i = 0; i < ctx->profile_scope_count; i++)
    free(ctx->profile_scopes[i]);
  free(ctx->profile_scopes);
  ctx->profile_scopes = NULL;
  ctx->profile_scope_count = 0;
  ctx->profile_scope = NULL;
}

cl_event *clt_profile_slot(clt_context *ctx, const char *op) {
  if (!ctx->profiling) return NULL;
  if (ctx->profile_count == ctx->profile_cap) {
    size_t cap = ctx->profile_cap ? 2 * ctx->profile_cap : 1024;
    clt_profile_entry *grown = realloc(ctx->profile, cap * sizeof *grown);
    if (!grown) return NULL;
    ctx->profile = grown;
    ctx->profile_cap = cap;
  }
  clt_profile_entry *e = &ctx->profile[ctx->profile_count++];
  e->op = op;
  e->scope = ctx->profile_scope;
  e->begin = NULL;
  e->event = NULL;
  return &e->event;
}

cl_event *clt_profile_span(clt_context *ctx, const char *op) {
  if (!ctx->profiling) return NULL;
  cl_event begin = NULL;
  if (clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, &begin) != CL_SUCCESS)
    begin = NULL;
  cl_event *slot = clt_profile_slot(ctx, op);
  if (!slot) {
    if (begin) clReleaseEvent(begin);
    return NULL;
  }
  ctx->profile[ctx->profile_count - 1].begin = begin;
  return slot;
}
