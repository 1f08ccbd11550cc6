/* ptx_probe: can OpenCL on an NVIDIA Hopper GPU reach the warpgroup
 * tensor-core instruction (wgmma) that cuBLAS uses there?
 *
 * NVIDIA's OpenCL compiler accepts inline PTX, but it builds for the
 * baseline target (sm_90), and wgmma exists only on the
 * architecture-specific one (sm_90a). This program tries the two routes
 * that could get around that, each on one 64 x 8 x 16 product checked
 * against the host:
 *   1. build options: the kernel with wgmma written inline, built with
 *      each of a few `-cl-nv-arch` spellings;
 *   2. the program's PTX: a kernel built with a placeholder where the
 *      instructions go, its PTX fetched (CL_PROGRAM_BINARIES: NVIDIA's
 *      driver returns PTX text), the placeholder replaced by wgmma and
 *      `.target sm_90` by `sm_90a`, then loaded again with
 *      clCreateProgramWithBinary.
 * The shared-memory descriptors' two strides are tried both ways round
 * (the result says which reading of the PTX manual holds).
 *
 * Run it on the GPU machine (samples/bench/gpu_session.sh probe); with
 * $OUT set, the PTX before and after the patch is written there. On a
 * device that is not NVIDIA's it says so and stops (exit 0): there is
 * nothing to probe. Exit 1: an OpenCL call failed; the routes' own
 * failures are results, printed, not errors. `ptx_probe --emulate`
 * checks the probe's own layouts on any device (emulate() below). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001

enum { M = 64, N = 8, K = 16, THREADS = 128 };

/* The kernel: A (M x K) and B (N x K, both k-contiguous) arrive laid out
 * as 8 x 8 core matrices of 128 bytes (A's: M-block i, k-block j at
 * (2 i + j) * 128 bytes; B's k-block j at j * 128), are copied to local
 * memory (B's with 256 zero bytes after it, so that the strides' other
 * reading stays inside) and multiplied by one warpgroup; thread t writes its
 * four accumulators to d[4 t ..]. PROBE_BODY is the product (wgmma, or the
 * placeholder), PROBE_FENCE what makes the local writes visible to it. */
static const char *kernel_src =
    "ulong desc(uint addr, uint lbo, uint sbo) {\n"
    "  return (ulong)((addr & 0x3ffff) >> 4) |\n"
    "         ((ulong)((lbo >> 4) & 0x3fff) << 16) |\n"
    "         ((ulong)((sbo >> 4) & 0x3fff) << 32);\n"
    "}\n"
    "__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void\n"
    "probe(__global const uint4 *a, __global const uint4 *b,\n"
    "      __global float *d, uint lbo, uint sbo) {\n"
    "  __local uint4 sa[128], sb[32];\n"
    "  int t = get_local_id(0);\n"
    "  sa[t] = a[t];\n"
    "  if (t < 32) sb[t] = t < 16 ? b[t] : (uint4)(0);\n"
    "  PROBE_FENCE;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;\n"
    "  ulong da = desc((uint)(ulong)sa, lbo, sbo);\n"
    "  ulong db = desc((uint)(ulong)sb, lbo, sbo);\n"
    "  PROBE_BODY;\n"
    "  d[4 * t] = d0; d[4 * t + 1] = d1;\n"
    "  d[4 * t + 2] = d2; d[4 * t + 3] = d3;\n"
    "}\n";

/* The product as PTX, its lines ended by NL: "\\n\\t" inside OpenCL C's
 * asm strings, "\n\t" in the PTX itself. D = A B (scale-d false). */
#define WGMMA_TEXT(NL, D0, D1, D2, D3, DA, DB)                                 \
  "wgmma.fence.sync.aligned;" NL "{" NL ".reg .pred p;" NL ".reg .b32 s;" NL   \
  "mov.b32 s, 0;" NL "setp.ne.b32 p, s, 0;" NL                                 \
  "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "                         \
  "{" D0 ", " D1 ", " D2 ", " D3 "}, " DA ", " DB ", p, 1, 1, 0, 0;" NL "}" NL \
  "wgmma.commit_group.sync.aligned;" NL "wgmma.wait_group.sync.aligned 0;"

/* Route 1: wgmma inline. */
static const char *inline_defs =
    "#define PROBE_FENCE asm volatile(\"fence.proxy.async.shared::cta;\" ::: "
    "\"memory\")\n"
    "#define PROBE_BODY asm volatile(\"" WGMMA_TEXT(
        "\\n\\t", "%0", "%1", "%2", "%3", "%4",
        "%5") "\" : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3) : "
              "\"l\"(da), \"l\"(db) : \"memory\")\n";

/* Route 2: placeholders that build for sm_90; their comments name the
 * registers the compiler gave the operands. */
static const char *placeholder_defs =
    "#define PROBE_FENCE asm volatile(\"// CLT_PROBE_FENCE\" ::: \"memory\")\n"
    "#define PROBE_BODY asm volatile(\"// CLT_PROBE_BODY %0 %1 %2 %3 %4 "
    "%5\\n\\tmov.f32 %0, %0;\" : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), "
    "\"+f\"(d3) : \"l\"(da), \"l\"(db) : \"memory\")\n";

/* --emulate: wgmma's product as this probe reads the PTX manual (the
 * descriptor's LBO the step between core matrices along k, SBO along the
 * rows), in OpenCL C, for any device: checks the operands' layout, the
 * accumulators' and the descriptors' packing without a Hopper GPU. */
static const char *emulated_defs =
    "#define PROBE_FENCE\n"
    "#define PROBE_BODY do { \\\n"
    "  uint lb = (uint)((da >> 16) & 0x3fff) << 4; \\\n"
    "  uint sbo_a = (uint)((da >> 32) & 0x3fff) << 4; \\\n"
    "  __local const half *ha = (__local const half *)sa; \\\n"
    "  __local const half *hb = (__local const half *)sb; \\\n"
    "  int w = t / 32, l = t % 32; \\\n"
    "  float r[4]; \\\n"
    "  for (int i = 0; i < 4; i++) { \\\n"
    "    int row = 16 * w + l / 4 + (i >= 2 ? 8 : 0); \\\n"
    "    int col = 2 * (l % 4) + (i & 1); \\\n"
    "    float s = 0.0f; \\\n"
    "    for (int k = 0; k < 16; k++) \\\n"
    "      s += vload_half(((row / 8) * sbo_a + (k / 8) * lb + \\\n"
    "                       (row % 8) * 16 + (k % 8) * 2) / 2, ha) * \\\n"
    "           vload_half(((k / 8) * lb + col * 16 + (k % 8) * 2) / 2, hb); "
    "\\\n"
    "    r[i] = s; \\\n"
    "  } \\\n"
    "  d0 = r[0]; d1 = r[1]; d2 = r[2]; d3 = r[3]; \\\n"
    "} while (0)\n";

static cl_context ctx;
static cl_command_queue queue;
static cl_device_id dev;
static cl_mem buf_a, buf_b, buf_d;
static float want[M * N];

#define CHECK(call)                                                            \
  do {                                                                         \
    cl_int rc_ = (call);                                                       \
    if (rc_ != CL_SUCCESS) {                                                   \
      fprintf(stderr, "ptx_probe: %s: OpenCL error %d\n", #call, (int)rc_);    \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* The fp16 bits of a small integer (exact). */
static uint16_t half_of(int v) {
  if (v == 0)
    return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  unsigned u = (unsigned)(v < 0 ? -v : v);
  int e = 0;
  while ((u >> e) > 1)
    e++;
  unsigned mant = ((u << 10) >> e) & 0x3ff;
  return (uint16_t)(sign | (unsigned)(e + 15) << 10 | mant);
}

static void make_operands(void) {
  uint16_t a[M * K], b[N * K];
  int av[M][K], bv[N][K];
  for (int m = 0; m < M; m++)
    for (int k = 0; k < K; k++) {
      av[m][k] = (m * 3 + k * 5) % 7 - 3;
      a[((m / 8) * 2 + k / 8) * 64 + (m % 8) * 8 + k % 8] = half_of(av[m][k]);
    }
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++) {
      bv[n][k] = (n * 2 + k) % 5 - 2;
      b[(k / 8) * 64 + n * 8 + k % 8] = half_of(bv[n][k]);
    }
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      int s = 0;
      for (int k = 0; k < K; k++)
        s += av[m][k] * bv[n][k];
      want[m * N + n] = (float)s;
    }
  cl_int rc;
  buf_a = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof a,
                         a, &rc);
  CHECK(rc);
  buf_b = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof b,
                         b, &rc);
  CHECK(rc);
  buf_d =
      clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(float) * M * N, NULL, &rc);
  CHECK(rc);
}

/* The first lines of a program's build log. */
static void print_log(cl_program p, int lines) {
  size_t n = 0;
  clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
  char *log = calloc(n + 1, 1);
  if (!log)
    return;
  clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
  char *s = log;
  for (int i = 0; i < lines && *s; i++) {
    char *e = strchr(s, '\n');
    if (e)
      *e = 0;
    if (*s)
      printf("      | %s\n", s);
    if (!e)
      break;
    s = e + 1;
  }
  free(log);
}

/* Runs probe with the strides both ways round; prints each result.
 * Returns the ways that gave the host's product: bit 0 LBO 128 / SBO 256,
 * bit 1 the other way round. */
static int run_checks(cl_program p, const char *route) {
  cl_int rc;
  cl_kernel k = clCreateKernel(p, "probe", &rc);
  if (rc != CL_SUCCESS) {
    printf("  %s: clCreateKernel failed (%d)\n", route, (int)rc);
    return 0;
  }
  static const cl_uint ways[2][2] = {{128, 256}, {256, 128}};
  int ok_ways = 0;
  for (int w = 0; w < 2; w++) {
    cl_uint lbo = ways[w][0], sbo = ways[w][1];
    CHECK(clSetKernelArg(k, 0, sizeof buf_a, &buf_a));
    CHECK(clSetKernelArg(k, 1, sizeof buf_b, &buf_b));
    CHECK(clSetKernelArg(k, 2, sizeof buf_d, &buf_d));
    CHECK(clSetKernelArg(k, 3, sizeof lbo, &lbo));
    CHECK(clSetKernelArg(k, 4, sizeof sbo, &sbo));
    float zero = -12345.0f;
    CHECK(clEnqueueFillBuffer(queue, buf_d, &zero, sizeof zero, 0,
                              sizeof(float) * M * N, 0, NULL, NULL));
    size_t global = THREADS, local = THREADS;
    rc = clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, &local, 0, NULL,
                                NULL);
    if (rc == CL_SUCCESS)
      rc = clFinish(queue);
    if (rc != CL_SUCCESS) {
      printf("  %s, LBO %u SBO %u: the launch failed (%d)\n", route, lbo, sbo,
             (int)rc);
      continue;
    }
    float got[THREADS * 4];
    CHECK(clEnqueueReadBuffer(queue, buf_d, CL_TRUE, 0, sizeof got, got, 0,
                              NULL, NULL));
    /* Thread t = 32 w + l holds rows 16 w + l / 4 (+ 8) and columns
     * 2 (l % 4) (+ 1): mma.sync's accumulator layout, warp by warp. */
    int bad = 0;
    char first[160] = "";
    for (int t = 0; t < THREADS; t++)
      for (int i = 0; i < 4; i++) {
        int w4 = t / 32, l = t % 32;
        int row = 16 * w4 + l / 4 + (i >= 2 ? 8 : 0);
        int col = 2 * (l % 4) + (i & 1);
        float e = want[row * N + col];
        if (got[4 * t + i] != e && bad++ == 0)
          snprintf(first, sizeof first, "first: row %d col %d got %g want %g",
                   row, col, (double)got[4 * t + i], (double)e);
      }
    if (!bad)
      ok_ways |= 1 << w;
    printf("  %s, LBO %u SBO %u: %s (%d of %d wrong%s%s)\n", route, lbo, sbo,
           bad ? "WRONG" : "right", bad, M * N, bad ? "; " : "", first);
  }
  clReleaseKernel(k);
  return ok_ways;
}

static cl_program build_source(const char *defs, const char *options,
                               cl_int *build_rc) {
  const char *parts[2] = {defs, kernel_src};
  cl_int rc;
  cl_program p = clCreateProgramWithSource(ctx, 2, parts, NULL, &rc);
  CHECK(rc);
  *build_rc = clBuildProgram(p, 1, &dev, options, NULL, NULL);
  return p;
}

static void save(const char *name, const char *text) {
  const char *out = getenv("OUT");
  if (!out || !*out)
    return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", out, name);
  FILE *f = fopen(path, "w");
  if (!f)
    return;
  fputs(text, f);
  fclose(f);
  printf("  (written: %s)\n", path);
}

/* Route 2's patch of the PTX text; NULL (and why) where a step fails. */
static char *patch_ptx(const char *ptx, char *why, size_t why_len) {
  size_t len = strlen(ptx);
  char *out = malloc(len + 4096);
  if (!out)
    return NULL;
  char *o = out;
  const char *s = ptx;
  int body = 0, fence = 0, target = 0;
  while (*s) {
    const char *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
    char line[1024];
    size_t ln = n < sizeof line - 1 ? n : sizeof line - 1;
    memcpy(line, s, ln);
    line[ln] = 0;
    char *p;
    if ((p = strstr(line, ".target")) && strstr(line, "sm_90") &&
        !strstr(line, "sm_90a")) {
      char *sm = strstr(line, "sm_90");
      o += sprintf(o, "%.*ssm_90a%s", (int)(sm - line), line, sm + 5);
      target = 1;
    } else if ((p = strstr(line, ".version")) != NULL) {
      int major = 0, minor = 0;
      if (sscanf(p, ".version %d.%d", &major, &minor) == 2 &&
          (major < 8)) /* wgmma and sm_90a: PTX ISA 8.0 */
        o += sprintf(o, ".version 8.0\n");
      else {
        memcpy(o, s, n);
        o += n;
      }
    } else if (strstr(line, "CLT_PROBE_FENCE")) {
      o += sprintf(o, "\tfence.proxy.async.shared::cta;\n");
      fence = 1;
    } else if ((p = strstr(line, "CLT_PROBE_BODY")) != NULL) {
      char r[6][32];
      if (sscanf(p, "CLT_PROBE_BODY %31s %31s %31s %31s %31s %31s", r[0], r[1],
                 r[2], r[3], r[4], r[5]) != 6) {
        snprintf(why, why_len, "the placeholder's registers: '%s'", line);
        free(out);
        return NULL;
      }
      o += sprintf(
          o, "\t" WGMMA_TEXT("\n\t", "%s", "%s", "%s", "%s", "%s", "%s") "\n",
          r[0], r[1], r[2], r[3], r[4], r[5]);
      /* drop the placeholder's mov on the next line */
      const char *next = e ? e + 1 : s + n;
      const char *ne = strchr(next, '\n');
      if (ne && strstr(next, "mov.f32") && strstr(next, "mov.f32") < ne)
        e = ne;
      body = 1;
    } else {
      memcpy(o, s, n); /* verbatim, however long */
      o += n;
    }
    s = e ? e + 1 : s + n;
  }
  *o = 0;
  if (!body || !fence || !target) {
    snprintf(why, why_len, "not found in the PTX:%s%s%s",
             body ? "" : " the body placeholder",
             fence ? "" : " the fence placeholder",
             target ? "" : " a .target sm_90 line");
    free(out);
    return NULL;
  }
  return out;
}

static int route_ptx(void) {
  printf("route 2: the program's PTX patched\n");
  cl_int rc;
  cl_program p = build_source(placeholder_defs, "", &rc);
  if (rc != CL_SUCCESS) {
    printf("  the placeholder kernel does not build (%d):\n", (int)rc);
    print_log(p, 12);
    clReleaseProgram(p);
    return 0;
  }
  size_t size = 0;
  CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL));
  unsigned char *bin = calloc(size + 1, 1);
  if (!bin)
    return 0;
  unsigned char *bins[1] = {bin};
  CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL));
  clReleaseProgram(p);
  const char *ptx = (const char *)bin;
  if (!strstr(ptx, ".target")) {
    printf("  the program's binary (%zu bytes) is not PTX text\n", size);
    free(bin);
    return 0;
  }
  for (const char *key = ".version"; key; key = key[1] == 'v' ? ".target" : 0) {
    const char *l = strstr(ptx, key);
    const char *e = l ? strchr(l, '\n') : NULL;
    if (l && e)
      printf("  the driver's PTX: %.*s\n", (int)(e - l), l);
  }
  save("ptx_probe_placeholder.ptx", ptx);
  char why[1200] = "";
  char *patched = patch_ptx(ptx, why, sizeof why);
  free(bin);
  if (!patched) {
    printf("  patch: %s\n", why);
    return 0;
  }
  save("ptx_probe_wgmma.ptx", patched);
  size_t plen = strlen(patched) + 1;
  const unsigned char *pbins[1] = {(const unsigned char *)patched};
  cl_int bin_status = CL_SUCCESS;
  p = clCreateProgramWithBinary(ctx, 1, &dev, &plen, pbins, &bin_status, &rc);
  if (rc != CL_SUCCESS) {
    printf("  clCreateProgramWithBinary refuses the patched PTX (%d, %d)\n",
           (int)rc, (int)bin_status);
    free(patched);
    return 0;
  }
  rc = clBuildProgram(p, 1, &dev, "", NULL, NULL);
  int ok = 0;
  if (rc != CL_SUCCESS) {
    printf("  the patched PTX does not build (%d):\n", (int)rc);
    print_log(p, 12);
  } else {
    printf("  the patched PTX builds\n");
    ok = run_checks(p, "patched PTX");
  }
  clReleaseProgram(p);
  free(patched);
  return ok;
}

static int route_options(void) {
  static const char *options[] = {"", "-cl-nv-arch sm_90a",
                                  "-cl-nv-arch=sm_90a", "-nv-arch sm_90a"};
  int ok = 0;
  printf("route 1: wgmma inline, build options\n");
  for (size_t i = 0; i < sizeof options / sizeof *options; i++) {
    cl_int rc;
    cl_program p = build_source(inline_defs, options[i], &rc);
    printf("  options '%s': %s (%d)\n", options[i],
           rc == CL_SUCCESS ? "builds" : "does not build", (int)rc);
    if (rc == CL_SUCCESS)
      ok |= run_checks(p, options[i]);
    else
      print_log(p, 4);
    clReleaseProgram(p);
  }
  return ok;
}

static int pick_device(void) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS)
    np = 0;
  for (cl_uint i = 0; i < np; i++) {
    char vendor[256] = "";
    clGetPlatformInfo(plats[i], CL_PLATFORM_VENDOR, sizeof vendor, vendor,
                      NULL);
    if (!strstr(vendor, "NVIDIA"))
      continue;
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, &nd) ==
            CL_SUCCESS &&
        nd > 0)
      return 1;
  }
  return 0;
}

static void release_all(void) {
  clReleaseMemObject(buf_a);
  clReleaseMemObject(buf_b);
  clReleaseMemObject(buf_d);
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx);
}

/* --emulate on the first OpenCL device: the way the manual describes must
 * give the host's product, the other must not (else the check proves
 * nothing). */
static int emulate(void) {
  cl_platform_id plat;
  cl_uint np = 0, nd = 0;
  if (clGetPlatformIDs(1, &plat, &np) != CL_SUCCESS || np == 0 ||
      clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, &nd) != CL_SUCCESS ||
      nd == 0) {
    fprintf(stderr, "ptx_probe: no OpenCL device\n");
    return 1;
  }
  cl_int rc;
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
  CHECK(rc);
  queue = clCreateCommandQueue(ctx, dev, 0, &rc);
  CHECK(rc);
  char name[256] = "";
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  printf("ptx_probe --emulate on %s\n", name);
  make_operands();
  cl_program p = build_source(emulated_defs, "", &rc);
  if (rc != CL_SUCCESS) {
    printf("ptx_probe: the emulated kernel does not build (%d)\n", (int)rc);
    print_log(p, 12);
    return 1;
  }
  int right = run_checks(p, "emulated");
  clReleaseProgram(p);
  release_all();
  /* run_checks tries LBO 128 / SBO 256 (the manual's reading for this
   * layout) first: exactly that one must be right. */
  printf("ptx_probe --emulate: %s\n",
         right == 1 ? "the layouts hold" : "the layouts do NOT hold");
  return right == 1 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--emulate") == 0)
    return emulate();
  if (argc > 1) {
    fprintf(stderr, "usage: ptx_probe [--emulate]\n");
    return 2;
  }
  if (!pick_device()) {
    printf("ptx_probe: no NVIDIA OpenCL GPU here: nothing to probe\n");
    return 0;
  }
  char name[256] = "", driver[256] = "";
  cl_uint cc[2] = {0, 0};
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof driver, driver, NULL);
  clGetDeviceInfo(dev, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof cc[0],
                  &cc[0], NULL);
  clGetDeviceInfo(dev, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof cc[1],
                  &cc[1], NULL);
  printf("ptx_probe: %s, driver %s, compute capability %u.%u\n", name, driver,
         cc[0], cc[1]);
  if (cc[0] != 9)
    printf("(wgmma is Hopper's, compute capability 9.0: expect no route)\n");
  cl_int rc;
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
  CHECK(rc);
  queue = clCreateCommandQueue(ctx, dev, 0, &rc);
  CHECK(rc);
  make_operands();
  int by_options = route_options();
  int by_ptx = route_ptx();
  printf("ptx_probe: wgmma from OpenCL: %s\n",
         by_options || by_ptx ? (by_options ? "reachable by build options"
                                            : "reachable by patching the PTX")
                              : "not reached (above: why)");
  release_all();
  return 0;
}
