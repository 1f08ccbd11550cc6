/* The kernel sources of cl/, embedded at build time (tools/embed_cl.py). */
#ifndef CLT_RUNTIME_EMBEDDED_H
#define CLT_RUNTIME_EMBEDDED_H

typedef struct clt_embedded_program {
  const char *name;   /* file name without .cl */
  const char *source;
} clt_embedded_program;

extern const clt_embedded_program clt_embedded_programs[];
extern const int clt_embedded_program_count;

#endif
