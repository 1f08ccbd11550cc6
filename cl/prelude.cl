/* Helpers shared by the programs of cl/; tools/embed_cl.py puts this file
 * in front of each of them. */

/* The sum of v over a work-group of exactly CLT_WG items (a power of two,
 * set by the host in the build options), returned to every item. Each tree
 * step is fenced by a barrier: POCL runs a group's items as a loop, so a
 * missing barrier gives wrong sums deterministically. */
static float group_sum(__local float *scratch, float v) {
  int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = CLT_WG / 2; step > 0; step /= 2) {
    if (lid < step) scratch[lid] += scratch[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE); /* scratch may be reused right after */
  return total;
}

/* The sum of a vector's 16 lanes, pairwise (the reductions that read runs
 * with vload16 keep 16 partial sums). */
static float sum16(float16 v) {
  float8 a = v.lo + v.hi;
  float4 b = a.lo + a.hi;
  return (b.x + b.y) + (b.z + b.w);
}
