/* The command line's options, declared as tables: each command lists its
 * options once (name, kind, range, help), and one parser (getopt_long
 * underneath) reads argv, checks every value against its range, blames a
 * bad value on the option that carries it, suggests the nearest option for
 * a mistyped one, and prints the command's help from the same table. */
#ifndef CLT_CLI_OPTIONS_H
#define CLT_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

typedef enum cli_opt_kind {
  CLI_FLAG,   /* no value: *(bool *)target = true */
  CLI_STRING, /* *(const char **)target = the value (never empty) */
  CLI_INT,    /* *(long long *)target, within [min, max] */
  CLI_DOUBLE, /* *(double *)target, finite, within [min, max] (open at
                 min when min_open: "above 0") */
  CLI_CHOICE, /* *(int *)target = the index of the value in choices */
} cli_opt_kind;

typedef struct cli_option {
  const char *name; /* without the dashes: "epochs" */
  cli_opt_kind kind;
  void *target;
  const char *value_name; /* in the help: "N", "FILE"; NULL for flags */
  const char *help;       /* may hold '\n' for continuation lines */
  double min, max;        /* CLI_INT, CLI_DOUBLE */
  bool min_open;          /* CLI_DOUBLE: min itself is refused */
  const char *const *choices; /* CLI_CHOICE: NULL-terminated */
  bool *given;                /* set to true when the option was seen */
} cli_option;

typedef struct cli_command {
  const char *name;  /* "train", "bench train" */
  const char *usage; /* after "usage: cltrain NAME ": "MODEL --data DATA ..." */
  const char *about; /* lines printed before the options; may be NULL */
  const cli_option *options;
  int option_count;
  /* Positional arguments: at least min, at most max (-1: any number),
   * stored in order into positional (room for max, or argc when -1). */
  int min_positional, max_positional;
  const char *positional_name; /* "MODEL", for "no MODEL given" */
} cli_command;

/* Parses argv (argv[0] is the command's first argument, not its name) by
 * the table. `-h` and `--help` print the help to stdout and return 0; an
 * error is printed to stderr, naming the option, and returns 2; success
 * returns -1 with the positional arguments in positional[0..*npos). `--`
 * ends the options. */
int cli_parse(const cli_command *cmd, int argc, char **argv,
              const char **positional, int *npos);

/* The help text of cmd, as -h prints it. */
void cli_print_help(const cli_command *cmd, FILE *out);

/* The entry of names nearest to `word` by edit distance, when near enough to
 * be a typo of it, else NULL. */
const char *cli_nearest(const char *word, const char *const *names, int n);

/* Writes s as a JSON string (quoted, escaped). */
void cli_json_string(FILE *out, const char *s);
/* Writes a number as JSON: null for NaN or infinity. */
void cli_json_number(FILE *out, double v);

#endif
