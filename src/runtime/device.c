/* Platform and device enumeration, and the --device / CLT_DEVICE grammar. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/cache.h"
#include "runtime/runtime.h"

static const char no_platform_hint[] =
    "no OpenCL platform found: no OpenCL driver (ICD) is installed. On "
    "Debian or Ubuntu install one with `apt-get install ocl-icd-libopencl1 "
    "pocl-opencl-icd` (any CPU) or `mesa-opencl-icd` (Mesa's rusticl, run "
    "with RUSTICL_ENABLE=llvmpipe or your GPU's driver name); for a GPU, "
    "install its vendor's OpenCL driver (nvidia-opencl-icd, "
    "intel-opencl-icd, AMD ROCm)";

static void copy_info_string(cl_device_id dev, cl_device_info param, char *out,
                             size_t outlen) {
  out[0] = '\0';
  if (clGetDeviceInfo(dev, param, outlen, out, NULL) != CL_SUCCESS)
    out[0] = '\0';
  out[outlen - 1] = '\0';
}

bool clt_device_has_extension(cl_device_id dev, const char *ext) {
  size_t size = 0;
  if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS)
    return false;
  char *all = malloc(size + 1);
  if (!all) return false;
  bool found = false;
  if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, size, all, NULL) ==
      CL_SUCCESS) {
    all[size] = '\0';
    size_t len = strlen(ext);
    for (char *p = strstr(all, ext); p; p = strstr(p + 1, ext)) {
      bool starts = p == all || p[-1] == ' ';
      bool ends = p[len] == '\0' || p[len] == ' ';
      if (starts && ends) {
        found = true;
        break;
      }
    }
  }
  free(all);
  return found;
}

static void fill_device_info(cl_platform_id plat, cl_device_id dev,
                             clt_device_info *d) {
  clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof d->platform_name,
                    d->platform_name, NULL);
  d->platform_name[sizeof d->platform_name - 1] = '\0';
  clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof d->platform_version,
                    d->platform_version, NULL);
  d->platform_version[sizeof d->platform_version - 1] = '\0';
  copy_info_string(dev, CL_DEVICE_NAME, d->name, sizeof d->name);
  copy_info_string(dev, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
  copy_info_string(dev, CL_DRIVER_VERSION, d->driver_version,
                   sizeof d->driver_version);
  copy_info_string(dev, CL_DEVICE_OPENCL_C_VERSION, d->opencl_c_version,
                   sizeof d->opencl_c_version);
  cl_device_type type = 0;
  clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  d->type = (type & CL_DEVICE_TYPE_GPU)           ? CLT_DEVICE_GPU
            : (type & CL_DEVICE_TYPE_CPU)         ? CLT_DEVICE_CPU
            : (type & CL_DEVICE_TYPE_ACCELERATOR) ? CLT_DEVICE_ACCELERATOR
                                                  : CLT_DEVICE_OTHER;
  cl_uint units = 0;
  clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
  d->compute_units = units;
  cl_ulong v = 0;
  clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof v, &v, NULL);
  d->global_mem_bytes = v;
  v = 0;
  clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof v, &v, NULL);
  d->local_mem_bytes = v;
  v = 0;
  clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof v, &v, NULL);
  d->max_alloc_bytes = v;
  size_t wg = 0;
  clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  d->max_work_group_size = wg;
  d->fp16 = clt_device_has_extension(dev, "cl_khr_fp16");
  d->fp64 = clt_device_has_extension(dev, "cl_khr_fp64");
  d->ptx = clt_device_has_extension(dev, "cl_nv_device_attribute_query");
}

/* Calls fn(platform, device, flat index, user) for every device; returns
 * the number of platforms, or a negative OpenCL error. */
typedef void (*device_visit_fn)(cl_platform_id, cl_device_id, int p, int d,
                                void *user);

static cl_int visit_devices(device_visit_fn fn, void *user,
                            cl_uint *platform_count) {
  cl_uint np = 0;
  cl_int rc = clGetPlatformIDs(0, NULL, &np);
  if (rc != CL_SUCCESS || np == 0) {
    *platform_count = 0;
    return rc == CL_SUCCESS ? -1001 : rc;
  }
  cl_platform_id *plats = calloc(np, sizeof *plats);
  if (!plats) return CL_OUT_OF_HOST_MEMORY;
  clGetPlatformIDs(np, plats, NULL);
  for (cl_uint p = 0; p < np; p++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) !=
            CL_SUCCESS ||
        nd == 0)
      continue; /* a platform with no device (rusticl without its env) */
    cl_device_id *devs = calloc(nd, sizeof *devs);
    if (!devs) break;
    clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
    for (cl_uint d = 0; d < nd; d++) fn(plats[p], devs[d], (int)p, (int)d, user);
    free(devs);
  }
  free(plats);
  *platform_count = np;
  return CL_SUCCESS;
}

typedef struct list_builder {
  clt_device_list *list;
  size_t cap;
  bool oom;
} list_builder;

static void add_to_list(cl_platform_id plat, cl_device_id dev, int p, int d,
                        void *user) {
  list_builder *b = user;
  if (b->oom) return;
  if (b->list->count == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 8;
    clt_device_info *grown =
        realloc(b->list->devices, cap * sizeof *grown);
    if (!grown) {
      b->oom = true;
      return;
    }
    b->list->devices = grown;
    b->cap = cap;
  }
  clt_device_info *info = &b->list->devices[b->list->count];
  memset(info, 0, sizeof *info);
  fill_device_info(plat, dev, info);
  info->index = (int)b->list->count;
  info->platform_index = p;
  info->device_index = d;
  b->list->count++;
}

/* Why platforms may show no device. The common cause on a machine where
 * POCL is installed: POCL cannot create its kernel cache folder (a home
 * folder that is not writable, a service user without one) and then offers
 * no device at all, which reads as "no device" unless we look. */
static void no_device_message(cl_uint platforms, char *err, size_t errlen) {
  int w = snprintf(err, errlen,
                   "%u OpenCL platform(s) found but no device on any of them",
                   platforms);
  char pocl[CLT_CACHE_PATH_MAX], ours[CLT_CACHE_PATH_MAX], why[512];
  bool pocl_bad = clt_pocl_cache_dir(pocl, sizeof pocl) &&
                  !clt_dir_creatable(pocl, why, sizeof why);
  if (pocl_bad && w >= 0 && (size_t)w < errlen) {
    clt_err ignored = {0};
    bool ours_bad =
        clt_cache_dir_resolve(NULL, ours, sizeof ours, &ignored) == CLT_OK &&
        !clt_dir_creatable(ours, why + 256, 256);
    w += snprintf(err + w, errlen - (size_t)w,
                  ": POCL cannot create its kernel cache folder %s (%.200s), "
                  "and without it POCL offers no device. Point POCL_CACHE_DIR "
                  "at a writable folder%s, e.g. POCL_CACHE_DIR=/tmp/pocl-cache"
                  "%s",
                  pocl, why,
                  ours_bad ? " and CLT_CACHE_DIR too (cltrain's own kernel "
                             "cache cannot be created either)"
                           : "",
                  ours_bad ? " CLT_CACHE_DIR=/tmp/cltrain-cache" : "");
  }
  if (w >= 0 && (size_t)w < errlen)
    snprintf(err + w, errlen - (size_t)w,
             " (for Mesa's rusticl set RUSTICL_ENABLE=llvmpipe)");
}

CLT_API clt_status clt_device_list_get(clt_device_list *list, char *err,
                                       size_t errlen) {
  memset(list, 0, sizeof *list);
  list_builder b = {list, 0, false};
  cl_uint np = 0;
  cl_int rc = visit_devices(add_to_list, &b, &np);
  list->platform_count = np;
  if (b.oom) {
    clt_device_list_free(list);
    if (err) snprintf(err, errlen, "out of host memory listing devices");
    return CLT_ERR_HOST_MEMORY;
  }
  if (np == 0) {
    if (err) snprintf(err, errlen, "%s (clGetPlatformIDs: %s)", no_platform_hint,
                      clt_cl_error_name(rc));
    return CLT_ERR_NO_PLATFORM;
  }
  if (list->count == 0) {
    if (err) no_device_message(np, err, errlen);
    return CLT_ERR_NO_DEVICE;
  }
  return CLT_OK;
}

CLT_API void clt_device_list_free(clt_device_list *list) {
  if (!list) return;
  free(list->devices);
  list->devices = NULL;
  list->count = 0;
}

/* Parses a whole non-negative integer; false if s is anything else. */
static bool parse_index(const char *s, long *out) {
  if (!isdigit((unsigned char)*s)) return false;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

static bool contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++)
    if (strncasecmp(p, needle, n) == 0) return true;
  return false;
}

static const char *type_word(clt_device_type t) {
  switch (t) {
  case CLT_DEVICE_GPU: return "gpu";
  case CLT_DEVICE_CPU: return "cpu";
  case CLT_DEVICE_ACCELERATOR: return "accelerator";
  default: return "other";
  }
}

static long default_choice(const clt_device_list *list) {
  for (size_t i = 0; i < list->count; i++)
    if (list->devices[i].type == CLT_DEVICE_GPU) return (long)i;
  for (size_t i = 0; i < list->count; i++)
    if (list->devices[i].type == CLT_DEVICE_CPU) return (long)i;
  return list->count ? 0 : -1;
}

static long match_spec(const clt_device_list *list, const char *spec) {
  if (!spec || strcasecmp(spec, "default") == 0)
    return default_choice(list);
  if (!*spec) return -1; /* "" is part of every name: match nothing */
  long idx;
  if (parse_index(spec, &idx))
    return idx < (long)list->count ? idx : -1;
  const char *colon = strchr(spec, ':');
  if (colon) {
    char plat[32];
    size_t len = (size_t)(colon - spec);
    long p, d;
    if (len > 0 && len < sizeof plat) {
      memcpy(plat, spec, len);
      plat[len] = '\0';
      if (parse_index(plat, &p) && parse_index(colon + 1, &d)) {
        for (size_t i = 0; i < list->count; i++)
          if (list->devices[i].platform_index == p &&
              list->devices[i].device_index == d)
            return (long)i;
        return -1;
      }
    }
  }
  for (size_t i = 0; i < list->count; i++)
    if (strcasecmp(spec, type_word(list->devices[i].type)) == 0)
      return (long)i;
  if (strcasecmp(spec, "gpu") == 0 || strcasecmp(spec, "cpu") == 0 ||
      strcasecmp(spec, "accelerator") == 0)
    return -1;
  for (size_t i = 0; i < list->count; i++)
    if (contains_ci(list->devices[i].platform_name, spec) ||
        contains_ci(list->devices[i].name, spec))
      return (long)i;
  /* Then the platform version: POCL names itself only there ("PoCL 3.1"),
   * which also mentions LLVM, so names are searched first. */
  for (size_t i = 0; i < list->count; i++)
    if (contains_ci(list->devices[i].platform_version, spec) ||
        contains_ci(list->devices[i].vendor, spec))
      return (long)i;
  return -1;
}

CLT_API clt_status clt_device_select(const clt_device_list *list,
                                     const char *spec, size_t *chosen,
                                     char *err, size_t errlen) {
  long idx = match_spec(list, spec);
  if (idx >= 0) {
    *chosen = (size_t)idx;
    return CLT_OK;
  }
  if (err && errlen) {
    int w = spec && !*spec
                ? snprintf(err, errlen,
                           "an empty device name matches no device (give an "
                           "index, a type such as gpu or cpu, or part of a "
                           "device or platform name); devices:")
                : snprintf(err, errlen,
                           "no OpenCL device matches '%s'; devices:", spec);
    for (size_t i = 0; i < list->count && w >= 0 && (size_t)w < errlen; i++) {
      const clt_device_info *d = &list->devices[i];
      w += snprintf(err + w, errlen - (size_t)w, "\n  %d (%d:%d) %s: %s [%s]",
                    d->index, d->platform_index, d->device_index,
                    d->platform_name, d->name, type_word(d->type));
    }
  }
  return CLT_ERR_NO_DEVICE;
}
