/* A set of names, each with its index in the order added: class names
 * read from data (CSV labels that are names). Lookups by hash. */
#ifndef CLT_DATA_NAME_TABLE_H
#define CLT_DATA_NAME_TABLE_H

#include <stdint.h>

typedef struct clt_name_table {
  char **names; /* count copies, in the order added */
  int count, cap;
  int32_t *slots; /* open addressing: a name's index + 1; 0 empty */
  int64_t n_slots; /* a power of two, at least twice count */
} clt_name_table;

/* name's index, or -1 if it is not in t. */
int clt_name_table_find(const clt_name_table *t, const char *name);

/* Adds a copy of name (not in t yet) and returns its index; -1 if out of
 * memory (t unchanged). */
int clt_name_table_add(clt_name_table *t, const char *name);

/* Frees every name and the table's arrays (t is then empty). */
void clt_name_table_free(clt_name_table *t);

#endif
