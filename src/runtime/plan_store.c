/* Measured plans on disk, beside the kernel cache (see plan_store.h). */
#include "runtime/plan_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

clt_status clt_plan_mode_get(clt_context *ctx, clt_plan_mode *mode) {
  if (ctx->plan_option != CLT_PLAN_ENV) {
    *mode = ctx->plan_option;
    return CLT_OK;
  }
  const char *v = getenv("CLT_PLAN");
  if (!v || !*v) {
    *mode = ctx->cache_on ? CLT_PLAN_ON : CLT_PLAN_OFF;
    return CLT_OK;
  }
  static const struct {
    const char *name;
    clt_plan_mode mode;
  } names[] = {{"off", CLT_PLAN_OFF},
               {"on", CLT_PLAN_ON},
               {"remeasure", CLT_PLAN_REMEASURE}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(v, names[i].name) == 0) {
      *mode = names[i].mode;
      return CLT_OK;
    }
  return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                      "CLT_PLAN=%s: expected off, on or remeasure", v);
}

static bool plan_dir(const clt_context *ctx, char *out, size_t len) {
  if (!ctx->cache_on || !ctx->cache_dir[0]) return false;
  int n = snprintf(out, len, "%s/plans", ctx->cache_dir);
  return n > 0 && (size_t)n < len;
}

static void plan_key(const clt_context *ctx, const char *description,
                     uint8_t key[32]) {
  char format[64];
  snprintf(format, sizeof format, "cltrain measured plan, format %d",
           CLT_PLAN_FORMAT_VERSION);
  clt_cache_key_parts parts = {description, format, ctx->info.name,
                               ctx->info.driver_version,
                               ctx->info.platform_version};
  clt_cache_key(&parts, key);
}

clt_cache_result clt_plan_store_load(clt_context *ctx, const char *description,
                                     char **text) {
  *text = NULL;
  char dir[CLT_CACHE_PATH_MAX];
  if (!plan_dir(ctx, dir, sizeof dir)) return CLT_CACHE_MISS;
  uint8_t key[32];
  plan_key(ctx, description, key);
  uint8_t *data = NULL;
  size_t len = 0;
  clt_cache_result r = clt_cache_load(dir, key, &data, &len);
  if (r != CLT_CACHE_HIT) return r;
  char *s = malloc(len + 1);
  if (!s) {
    free(data);
    return CLT_CACHE_MISS;
  }
  memcpy(s, data, len);
  s[len] = '\0';
  free(data);
  *text = s;
  return CLT_CACHE_HIT;
}

void clt_plan_store_save(clt_context *ctx, const char *description,
                         const char *text) {
  char dir[CLT_CACHE_PATH_MAX];
  if (!plan_dir(ctx, dir, sizeof dir)) return;
  uint8_t key[32];
  plan_key(ctx, description, key);
  clt_err err = {0};
  if (clt_cache_store(dir, key, text, strlen(text), &err) != CLT_OK)
    clt_ctx_log(ctx, CLT_LOG_WARN, "plan cache: %s", err.msg);
}
