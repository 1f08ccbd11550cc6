/* Option tables read by getopt_long; see options.h. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"

#define HELP_COLUMN 24
#define VAL_BASE 256 /* getopt_long's val of option i: VAL_BASE + i */

static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return (size_t)-1;
  size_t row[65];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

const char *cli_nearest(const char *word, const char *const *names, int n) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  for (int i = 0; i < n; i++) {
    size_t d = edit_distance(word, names[i]);
    if (d < best_d) {
      best_d = d;
      best = names[i];
    }
  }
  /* A typo: a third of the word, at least 2 (swapped letters). */
  size_t len = strlen(word), limit = len / 3 > 2 ? len / 3 : 2;
  return best && best_d <= limit && best_d < len ? best : NULL;
}

static void print_wrapped(FILE *out, const char *text, int indent) {
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    int len = nl ? (int)(nl - p) : (int)strlen(p);
    fprintf(out, "%.*s\n", len, p);
    if (!nl) break;
    p = nl + 1;
    fprintf(out, "%*s", indent, "");
  }
}

void cli_print_help(const cli_command *cmd, FILE *out) {
  fprintf(out, "usage: cltrain %s %s\n", cmd->name, cmd->usage);
  if (cmd->about) fprintf(out, "%s", cmd->about);
  fprintf(out, "options:\n");
  for (int i = 0; i < cmd->option_count; i++) {
    const cli_option *o = &cmd->options[i];
    char head[96];
    int n = snprintf(head, sizeof head, "  --%s%s%s", o->name,
                     o->value_name ? " " : "",
                     o->value_name ? o->value_name : "");
    if (n >= HELP_COLUMN - 1)
      fprintf(out, "%s\n%*s", head, HELP_COLUMN, "");
    else
      fprintf(out, "%-*s", HELP_COLUMN, head);
    print_wrapped(out, o->help, HELP_COLUMN);
  }
  fprintf(out, "%-*s%s\n", HELP_COLUMN, "  -h, --help", "this help");
}

static bool parse_int(const cli_command *cmd, const cli_option *o,
                      const char *s) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || isspace((unsigned char)*s)) {
    fprintf(stderr, "cltrain %s: --%s expects a whole number, got '%s'\n",
            cmd->name, o->name, s);
    return false;
  }
  if (errno == ERANGE || (double)v < o->min || (double)v > o->max) {
    fprintf(stderr, "cltrain %s: --%s must be between %.0f and %.0f, got "
                    "'%s'%s\n",
            cmd->name, o->name, o->min, o->max, s,
            errno == ERANGE ? " (too large to represent)" : "");
    return false;
  }
  *(long long *)o->target = v;
  return true;
}

static bool parse_double(const cli_command *cmd, const cli_option *o,
                         const char *s) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || isspace((unsigned char)*s) || v != v) {
    fprintf(stderr, "cltrain %s: --%s expects a number, got '%s'\n",
            cmd->name, o->name, s);
    return false;
  }
  if (isinf(v) || (errno == ERANGE && v != 0.0)) {
    fprintf(stderr, "cltrain %s: --%s is out of range, got '%s'\n",
            cmd->name, o->name, s);
    return false;
  }
  bool bounded = o->min != 0.0 || o->max != 0.0 || o->min_open;
  bool low = o->min_open ? v <= o->min : v < o->min;
  if (bounded && (low || v > o->max)) {
    char range[128];
    if (isinf(o->max))
      snprintf(range, sizeof range, "%s %g", o->min_open ? "above" : "at least",
               o->min);
    else
      snprintf(range, sizeof range, "%s %g and at most %g",
               o->min_open ? "above" : "at least", o->min, o->max);
    fprintf(stderr, "cltrain %s: --%s must be %s, got '%s'\n", cmd->name,
            o->name, range, s);
    return false;
  }
  *(double *)o->target = v;
  return true;
}

static bool parse_choice(const cli_command *cmd, const cli_option *o,
                         const char *s) {
  int n = 0;
  while (o->choices[n]) n++;
  for (int i = 0; i < n; i++)
    if (!strcmp(s, o->choices[i])) {
      *(int *)o->target = i;
      return true;
    }
  fprintf(stderr, "cltrain %s: --%s must be ", cmd->name, o->name);
  for (int i = 0; i < n; i++) { /* a symbol in quotes: ',' */
    bool word = isalnum((unsigned char)o->choices[i][0]);
    fprintf(stderr, "%s%s%s%s", word ? "" : "'", o->choices[i],
            word ? "" : "'", i + 2 < n ? ", " : i + 2 == n ? " or " : "");
  }
  const char *near = cli_nearest(s, o->choices, n);
  fprintf(stderr, ", got '%s'", s);
  if (near) fprintf(stderr, "; did you mean '%s'?", near);
  fprintf(stderr, "\n");
  return false;
}

static bool take_value(const cli_command *cmd, const cli_option *o,
                       const char *value) {
  if (o->given) *o->given = true;
  if (o->kind == CLI_FLAG) {
    *(bool *)o->target = true;
    return true;
  }
  /* An empty value (`--device ''`, a variable that expanded to nothing)
   * never means the default: every option's default is its absence. */
  if (!value || !*value) {
    fprintf(stderr, "cltrain %s: option --%s needs a value, got an empty "
                    "one\n",
            cmd->name, o->name);
    return false;
  }
  switch (o->kind) {
  case CLI_STRING: *(const char **)o->target = value; return true;
  case CLI_INT: return parse_int(cmd, o, value);
  case CLI_DOUBLE: return parse_double(cmd, o, value);
  case CLI_CHOICE: return parse_choice(cmd, o, value);
  case CLI_FLAG: break;
  }
  return false;
}

/* An unknown option: says so, with the nearest known one. */
static void unknown_option(const cli_command *cmd, const char *arg) {
  const char *word = arg;
  while (*word == '-') word++;
  char name[128];
  snprintf(name, sizeof name, "%.*s", (int)strcspn(word, "="), word);
  const char *names[128];
  int n = 0;
  for (int i = 0; i < cmd->option_count && n < 127; i++)
    names[n++] = cmd->options[i].name;
  names[n++] = "help";
  /* A prefix of several: getopt_long takes unambiguous abbreviations. */
  int prefixed = 0;
  for (int i = 0; i < n; i++)
    if (*name && !strncmp(names[i], name, strlen(name))) prefixed++;
  if (arg[0] == '-' && arg[1] == '-' && prefixed > 1) {
    fprintf(stderr, "cltrain %s: option '%s' is ambiguous; it begins", cmd->name,
            arg);
    for (int i = 0, k = 0; i < n; i++)
      if (!strncmp(names[i], name, strlen(name)))
        fprintf(stderr, "%s--%s", k++ ? ", " : " ", names[i]);
    fprintf(stderr, "\n");
    return;
  }
  const char *near = cli_nearest(name, names, n);
  fprintf(stderr, "cltrain %s: unknown option '%s'", cmd->name, arg);
  if (near) fprintf(stderr, "; did you mean '--%s'?", near);
  fprintf(stderr, " (see cltrain %s --help)\n", cmd->name);
}

int cli_parse(const cli_command *cmd, int argc, char **argv,
              const char **positional, int *npos) {
  *npos = 0;
  int n = cmd->option_count;
  struct option *longs = calloc((size_t)n + 2, sizeof *longs);
  char **args = calloc((size_t)argc + 2, sizeof *args);
  if (!longs || !args) {
    free(longs);
    free(args);
    fprintf(stderr, "cltrain %s: out of memory\n", cmd->name);
    return 2;
  }
  for (int i = 0; i < n; i++)
    longs[i] = (struct option){cmd->options[i].name,
                               cmd->options[i].kind == CLI_FLAG
                                   ? no_argument
                                   : required_argument,
                               NULL, VAL_BASE + i};
  longs[n] = (struct option){"help", no_argument, NULL, 'h'};
  args[0] = (char *)cmd->name;
  for (int i = 0; i < argc; i++) args[i + 1] = argv[i];
  int rc = -1;
  opterr = 0;
  optind = 0; /* glibc: start afresh (several commands parse in a run) */
  for (;;) {
    int index = -1;
    int c = getopt_long(argc + 1, args, ":h", longs, &index);
    if (c == -1) break;
    if (c == 'h') {
      cli_print_help(cmd, stdout);
      rc = 0;
      break;
    }
    if (c >= VAL_BASE && c < VAL_BASE + n) {
      if (!take_value(cmd, &cmd->options[c - VAL_BASE], optarg)) {
        rc = 2;
        break;
      }
      continue;
    }
    rc = 2;
    if (c == ':') {
      if (optopt >= VAL_BASE && optopt < VAL_BASE + n)
        fprintf(stderr, "cltrain %s: option --%s needs a value\n", cmd->name,
                cmd->options[optopt - VAL_BASE].name);
      else
        fprintf(stderr, "cltrain %s: option '%s' needs a value\n", cmd->name,
                args[optind - 1]);
    } else if (optopt >= VAL_BASE && optopt < VAL_BASE + n) {
      fprintf(stderr, "cltrain %s: option --%s takes no value\n", cmd->name,
              cmd->options[optopt - VAL_BASE].name);
    } else if (optopt == 'h') {
      fprintf(stderr, "cltrain %s: option --help takes no value\n",
              cmd->name);
    } else if (optopt != 0) {
      /* An unknown short option: most often a long one with one dash. */
      const char *arg = NULL;
      for (int i = 1; i <= argc && !arg; i++)
        if (args[i][0] == '-' && args[i][1] != '-' &&
            strchr(args[i] + 1, optopt))
          arg = args[i];
      unknown_option(cmd, arg ? arg : "-?");
    } else {
      unknown_option(cmd, args[optind - 1]);
    }
    break;
  }
  if (rc < 0) {
    int max = cmd->max_positional;
    for (int i = optind; i <= argc; i++) {
      if (max >= 0 && *npos >= max) {
        fprintf(stderr, "cltrain %s: unexpected argument '%s'\n", cmd->name,
                args[i]);
        rc = 2;
        break;
      }
      positional[(*npos)++] = args[i];
    }
  }
  if (rc < 0 && *npos < cmd->min_positional) {
    fprintf(stderr, "cltrain %s: no %s given\n", cmd->name,
            cmd->positional_name ? cmd->positional_name : "argument");
    cli_print_help(cmd, stderr);
    rc = 2;
  }
  free(longs);
  free(args);
  return rc;
}

void cli_json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;
       p++) {
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", out);
    else if (*p == '\t')
      fputs("\\t", out);
    else if (*p < 0x20)
      fprintf(out, "\\u%04x", *p);
    else
      fputc(*p, out);
  }
  fputc('"', out);
}

void cli_json_number(FILE *out, double v) {
  if (isfinite(v))
    fprintf(out, "%.9g", v);
  else
    fputs("null", out);
}
