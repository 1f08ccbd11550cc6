/* See name_table.h. */
#include "data/name_table.h"

#include <stdlib.h>
#include <string.h>

static uint64_t name_hash(const char *s) { /* FNV-1a */
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

/* The slot of name, or of the empty slot where it would go. */
static int64_t name_slot(const clt_name_table *t, const char *name) {
  int64_t mask = t->n_slots - 1, at = (int64_t)(name_hash(name) & (uint64_t)mask);
  while (t->slots[at] && strcmp(t->names[t->slots[at] - 1], name))
    at = (at + 1) & mask;
  return at;
}

int clt_name_table_find(const clt_name_table *t, const char *name) {
  if (t->n_slots == 0) return -1;
  return t->slots[name_slot(t, name)] - 1;
}

/* Twice the slots (or 16), every name placed again. */
static int name_rehash(clt_name_table *t) {
  int64_t n = t->n_slots ? 2 * t->n_slots : 16;
  int32_t *slots = calloc((size_t)n, sizeof *slots);
  if (!slots) return -1;
  free(t->slots);
  t->slots = slots;
  t->n_slots = n;
  for (int i = 0; i < t->count; i++)
    t->slots[name_slot(t, t->names[i])] = i + 1;
  return 0;
}

int clt_name_table_add(clt_name_table *t, const char *name) {
  if (t->count == INT32_MAX - 1) return -1;
  if (2 * (int64_t)(t->count + 1) > t->n_slots && name_rehash(t)) return -1;
  if (t->count == t->cap) {
    int cap = t->cap ? 2 * t->cap : 16;
    char **names = realloc(t->names, (size_t)cap * sizeof *names);
    if (!names) return -1;
    t->names = names;
    t->cap = cap;
  }
  char *copy = strdup(name);
  if (!copy) return -1;
  t->names[t->count] = copy;
  t->slots[name_slot(t, copy)] = t->count + 1;
  return t->count++;
}

void clt_name_table_free(clt_name_table *t) {
  for (int i = 0; i < t->count; i++) free(t->names[i]);
  free(t->names);
  free(t->slots);
  memset(t, 0, sizeof *t);
}
