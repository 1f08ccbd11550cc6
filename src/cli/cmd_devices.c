/* cltrain devices: every OpenCL platform and device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"

static const char *type_name(clt_device_type t) {
  switch (t) {
  case CLT_DEVICE_GPU: return "GPU";
  case CLT_DEVICE_CPU: return "CPU";
  case CLT_DEVICE_ACCELERATOR: return "accelerator";
  default: return "other";
  }
}

static void json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

/* Platforms that have at least one device in the list. */
static size_t platforms_listed(const clt_device_list *list) {
  size_t n = 0;
  for (size_t i = 0; i < list->count; i++) {
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = list->devices[j].platform_index == list->devices[i].platform_index;
    if (!seen) n++;
  }
  return n;
}

/* "platforms" counts the platforms whose devices follow; the others that
 * the loader found (rusticl without RUSTICL_ENABLE, Clover) are counted
 * apart, so that a script never looks for devices that are not there. */
/* The route mixed precision's products take (clt_fp16_route_get), as far as
 * known without building anything: the probe decides on first use. */
static const char *mixed_route(const clt_device_info *d) {
  return d->ptx ? "mma" : "sgemm";
}

static void print_json(const clt_device_list *list, size_t chosen) {
  size_t listed = platforms_listed(list);
  printf("{\"platforms\": %zu, \"platforms_without_devices\": %zu, "
         "\"devices\": [",
         listed, list->platform_count - listed);
  for (size_t i = 0; i < list->count; i++) {
    const clt_device_info *d = &list->devices[i];
    printf("%s\n  {\"index\": %d, \"id\": \"%d:%d\", \"platform\": ",
           i ? "," : "", d->index, d->platform_index, d->device_index);
    json_string(d->platform_name);
    printf(", \"platform_version\": ");
    json_string(d->platform_version);
    printf(", \"name\": ");
    json_string(d->name);
    printf(", \"type\": \"%s\", \"compute_units\": %u, "
           "\"global_mem_bytes\": %llu, \"local_mem_bytes\": %llu, "
           "\"max_alloc_bytes\": %llu, \"fp16\": %s, \"fp64\": %s, "
           "\"mixed_products\": \"%s\", \"driver_version\": ",
           type_name(d->type), d->compute_units,
           (unsigned long long)d->global_mem_bytes,
           (unsigned long long)d->local_mem_bytes,
           (unsigned long long)d->max_alloc_bytes, d->fp16 ? "true" : "false",
           d->fp64 ? "true" : "false", mixed_route(d));
    json_string(d->driver_version);
    printf(", \"opencl_c_version\": ");
    json_string(d->opencl_c_version);
    printf(", \"chosen\": %s}", i == chosen ? "true" : "false");
  }
  printf("\n]}\n");
}

static void print_table(const clt_device_list *list, size_t chosen) {
  printf("  %-5s %-4s %-28s %-36s %-5s %5s %10s %9s %4s %4s %-6s %s\n",
         "index", "id", "platform", "device", "type", "CUs", "global", "local",
         "fp16", "fp64", "mixed", "driver");
  for (size_t i = 0; i < list->count; i++) {
    const clt_device_info *d = &list->devices[i];
    char id[16];
    snprintf(id, sizeof id, "%d:%d", d->platform_index, d->device_index);
    printf("%s %-5d %-4s %-28.28s %-36.36s %-5s %5u %7.1f GiB %5.0f KiB %4s "
           "%4s %-6s %s\n",
           i == chosen ? "*" : " ", d->index, id, d->platform_name, d->name,
           type_name(d->type), d->compute_units,
           (double)d->global_mem_bytes / (1024.0 * 1024 * 1024),
           (double)d->local_mem_bytes / 1024.0, d->fp16 ? "yes" : "no",
           d->fp64 ? "yes" : "no", mixed_route(d), d->driver_version);
  }
  printf("(* = the device chosen by default or by --device / CLT_DEVICE;\n"
         " mixed = how --precision mixed runs its products: sgemm on fp16\n"
         " values, or mma = tensor cores through inline PTX where the probe\n"
         " on first use builds and checks them, else sgemm)\n");
}

int cli_devices(int argc, char **argv) {
  bool json = false;
  const char *device = getenv("CLT_DEVICE");
  const cli_option options[] = {
      {"json", CLI_FLAG, &json, NULL,
       "one JSON object: platforms, devices, the default", 0, 0, 0, 0, 0},
      {"device", CLI_STRING, &device, "D",
       "mark this device as chosen (as --device elsewhere)", 0, 0, 0, 0, 0},
  };
  const cli_command cmd = {
      "devices", "[--json] [--device D]",
      "  lists the OpenCL platforms and devices, and the one chosen\n",
      options, 2, 0, 0, NULL};
  int npos = 0;
  int rc = cli_parse(&cmd, argc, argv, NULL, &npos);
  if (rc >= 0) return rc;
  clt_device_list list;
  char err[8192];
  clt_status st = clt_device_list_get(&list, err, sizeof err);
  if (st != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", err);
    return 1;
  }
  size_t chosen = 0;
  st = clt_device_select(&list, device, &chosen, err, sizeof err);
  if (st != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", err);
    clt_device_list_free(&list);
    return 1;
  }
  if (json)
    print_json(&list, chosen);
  else
    print_table(&list, chosen);
  clt_device_list_free(&list);
  return 0;
}
