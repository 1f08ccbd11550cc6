/* SVG line charts of a training history. */
#include "cli/plot.h"


#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WIDTH 960
#define HEIGHT 420
#define PANEL_W 400
#define PANEL_H 270
#define LEFT 70
#define TOP 60
#define GAP 80

static const char *const TRAIN_COLOR = "#1f77b4";
static const char *const TEST_COLOR = "#ff7f0e";

static void put_escaped(cli_text *b, const char *text) {
  for (const char *p = text; *p; p++) {
    switch (*p) {
    case '&': cli_put(b, "&amp;"); break;
    case '<': cli_put(b, "&lt;"); break;
    case '>': cli_put(b, "&gt;"); break;
    case '"': cli_put(b, "&quot;"); break;
    case '\'': cli_put(b, "&apos;"); break;
    default:
      /* Control characters are not allowed in XML 1.0. */
      if ((unsigned char)*p >= 0x20 || *p == '\t') cli_put(b, "%c", *p);
    }
  }
}

/* 1, 2 or 5 times a power of ten, near span / target. */
static double nice_step(double span, int target) {
  double raw = span / target;
  double mag = pow(10.0, floor(log10(raw)));
  double f = raw / mag;
  return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

typedef struct axis {
  double lo, hi, step;
} axis;

/* A y axis covering every finite value of both series, on nice bounds. */
static axis y_axis(const double *a, const double *b, int n) {
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < n; i++) {
    if (isfinite(a[i])) lo = fmin(lo, a[i]), hi = fmax(hi, a[i]);
    if (isfinite(b[i])) lo = fmin(lo, b[i]), hi = fmax(hi, b[i]);
  }
  if (!isfinite(lo)) lo = 0.0, hi = 1.0;
  if (hi - lo < 1e-9) {
    double pad = fabs(lo) > 1e-9 ? fabs(lo) * 0.1 : 0.5;
    lo -= pad;
    hi += pad;
  }
  axis ax;
  ax.step = nice_step(hi - lo, 5);
  ax.lo = floor(lo / ax.step) * ax.step;
  ax.hi = ceil(hi / ax.step) * ax.step;
  return ax;
}

typedef struct panel {
  double x0, y0; /* top-left of the plot area */
  axis x, y;
} panel;

static double px(const panel *p, double x) {
  return p->x0 + (x - p->x.lo) / (p->x.hi - p->x.lo) * PANEL_W;
}

static double py(const panel *p, double y) {
  return p->y0 + PANEL_H - (y - p->y.lo) / (p->y.hi - p->y.lo) * PANEL_H;
}

static void draw_axes(cli_text *b, const panel *p, const char *ylabel) {
  cli_put(b, "<g class=\"axes\" font-size=\"12\" fill=\"#333\">\n");
  int ny = (int)llround((p->y.hi - p->y.lo) / p->y.step);
  for (int i = 0; i <= ny; i++) {
    double v = p->y.lo + i * p->y.step;
    double y = py(p, v);
    cli_put(b,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"#e5e5e5\"/>\n",
        p->x0, y, p->x0 + PANEL_W, y);
    cli_put(b,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"#333\"/>\n",
        p->x0 - 5, y, p->x0, y);
    cli_put(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
        p->x0 - 8, y + 4, fabs(v) < 1e-12 ? 0.0 : v);
  }
  int nx = (int)llround((p->x.hi - p->x.lo) / p->x.step);
  for (int i = 0; i <= nx; i++) {
    double v = p->x.lo + i * p->x.step;
    double x = px(p, v);
    cli_put(b,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"#333\"/>\n",
        x, p->y0 + PANEL_H, x, p->y0 + PANEL_H + 5);
    cli_put(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
        x, p->y0 + PANEL_H + 19, v);
  }
  cli_put(b,
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" "
      "stroke=\"#333\"/>\n",
      p->x0, p->y0, PANEL_W, PANEL_H);
  cli_put(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">epoch</text>\n",
      p->x0 + PANEL_W / 2.0, p->y0 + PANEL_H + 38);
  cli_put(b,
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
      "font-size=\"14\" font-weight=\"bold\">%s</text>\n",
      p->x0 + PANEL_W / 2.0, p->y0 - 10, ylabel);
  cli_put(b, "</g>\n");
}

/* A polyline per run of finite values, and a dot on each. */
static void draw_series(cli_text *b, const panel *p, const double *x,
                        const double *y, int n, const char *color,
                        const char *name) {
  cli_put(b, "<g class=\"series\" data-name=\"%s\">\n", name);
  for (int i = 0; i < n;) {
    if (!isfinite(y[i])) {
      i++;
      continue;
    }
    cli_put(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
        color);
    for (; i < n && isfinite(y[i]); i++)
      cli_put(b, "%.1f,%.1f ", px(p, x[i]), py(p, y[i]));
    cli_put(b, "\"/>\n");
  }
  for (int i = 0; i < n; i++)
    if (isfinite(y[i]))
      cli_put(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
          px(p, x[i]), py(p, y[i]), color);
  cli_put(b, "</g>\n");
}

/* One row under both panels, centred: which colour is which run. (It
 * once sat right of the accuracy panel, outside the canvas.) */
static void draw_legend(cli_text *b) {
  const char *names[2] = {"train", "test"};
  const char *colors[2] = {TRAIN_COLOR, TEST_COLOR};
  const double entry = 90.0, y = HEIGHT - 16;
  double x = WIDTH / 2.0 - entry;
  cli_put(b, "<g class=\"legend\" font-size=\"12\">\n");
  for (int i = 0; i < 2; i++, x += entry) {
    cli_put(b,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
        "stroke-width=\"2\"/>\n",
        x, y, x + 22, y, colors[i]);
    cli_put(b, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 28, y + 4,
        names[i]);
  }
  cli_put(b, "</g>\n");
}

clt_status clt_plot_history_render(const clt_epoch_stats *h, int n,
                                   const char *title, char **svg,
                                   cli_err *err) {
  *svg = NULL;
  if (n < 0 || (n > 0 && !h))
    return cli_err_set(err, CLT_ERR_INVALID_ARGUMENT, "plot: %d epochs", n);
  double *v = malloc(5 * (size_t)(n > 0 ? n : 1) * sizeof *v);
  if (!v) return cli_err_set(err, CLT_ERR_HOST_MEMORY, "plot");
  double *ep = v, *trl = v + n, *tel = v + 2 * n, *tra = v + 3 * n,
         *tea = v + 4 * n;
  /* The second panel: the accuracy, or, where no epoch has one, a
   * regression's mean absolute error. */
  bool acc_any = false, mae_any = false;
  for (int i = 0; i < n; i++) {
    acc_any = acc_any || !isnan(h[i].train_acc) || !isnan(h[i].test_acc);
    mae_any = mae_any || !isnan(h[i].train_mae) || !isnan(h[i].test_mae);
  }
  bool mae = mae_any && !acc_any;
  int max_epoch = 1;
  for (int i = 0; i < n; i++) {
    ep[i] = h[i].epoch > 0 ? h[i].epoch : i + 1;
    if (ep[i] > max_epoch) max_epoch = (int)ep[i];
    trl[i] = h[i].train_loss;
    tel[i] = h[i].test_loss;
    tra[i] = mae ? h[i].train_mae : h[i].train_acc;
    tea[i] = mae ? h[i].test_mae : h[i].test_acc;
  }
  axis x = {1.0, max_epoch > 1 ? max_epoch : 2, 1.0};
  x.step = fmax(1.0, nice_step(x.hi - x.lo, 8));
  x.hi = x.lo + ceil((x.hi - x.lo) / x.step) * x.step;
  panel loss = {LEFT, TOP, x, y_axis(trl, tel, n)};
  panel acc = {LEFT + PANEL_W + GAP, TOP, x, y_axis(tra, tea, n)};

  cli_text b = {0};
  cli_put(&b,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<title>",
      WIDTH, HEIGHT, WIDTH, HEIGHT);
  put_escaped(&b, title ? title : "training history");
  cli_put(&b, "</title>\n<text x=\"%d\" y=\"24\" text-anchor=\"middle\" "
          "font-size=\"16\">",
      WIDTH / 2);
  put_escaped(&b, title ? title : "training history");
  cli_put(&b, "</text>\n");
  draw_axes(&b, &loss, "loss");
  draw_series(&b, &loss, ep, trl, n, TRAIN_COLOR, "train loss");
  draw_series(&b, &loss, ep, tel, n, TEST_COLOR, "test loss");
  draw_axes(&b, &acc, mae ? "mean absolute error" : "accuracy");
  draw_series(&b, &acc, ep, tra, n, TRAIN_COLOR,
              mae ? "train mae" : "train accuracy");
  draw_series(&b, &acc, ep, tea, n, TEST_COLOR,
              mae ? "test mae" : "test accuracy");
  draw_legend(&b);
  cli_put(&b, "</svg>\n");
  free(v);
  if (b.failed) {
    free(b.s);
    return cli_err_set(err, CLT_ERR_HOST_MEMORY, "plot");
  }
  *svg = b.s;
  return CLT_OK;
}

clt_status clt_plot_history_svg(const clt_epoch_stats *history, int epochs,
                                const char *title, const char *path,
                                cli_err *err) {
  char *svg = NULL;
  CLI_TRY(clt_plot_history_render(history, epochs, title, &svg, err));
  char msg[sizeof err->msg];
  clt_status st = clt_file_write_atomic(path, svg, strlen(svg), msg,
                                        sizeof msg);
  if (st != CLT_OK) cli_err_set(err, st, "%s", msg);
  free(svg);
  return st;
}
