#!/usr/bin/env python3
"""fit_erf.py: the two polynomials of cl/activation.cl's normal_cdf (gelu's
erf), fitted here so that they can be checked and fitted again.

With z >= 0:
  erf(z)  = z P(z^2)                        for z < 0.921875
  erfc(z) = exp(-z^2) Q(1 / (1 + z / 2))    for 0.921875 <= z < 6
P of degree 5, Q of degree 7, each fitted for the least largest relative
error over the range (weighted least squares on Chebyshev points,
reweighted toward the worst points, Lawson's way). Prints the
coefficients from the constant term up (the kernel's Horner steps run
from the highest down) and each fit's largest relative error against
Python's double erf and erfc. Needs numpy."""
import math

import numpy as np

SPLIT, TOP = 0.921875, 6.0


def fit(t, y, degree):
    """Coefficients (constant first) of the polynomial in t nearest to y in
    relative error, and that error."""
    powers = np.vstack([t ** k for k in range(degree + 1)]).T

    def solve(w):
        return np.linalg.lstsq(powers * w[:, None], y * w, rcond=None)[0]

    weights = 1.0 / np.abs(y)
    c = solve(weights)
    for _ in range(60):
        r = np.abs((powers @ c - y) / y)
        weights = weights * np.sqrt(r / r.max()) + 1e-30
        c = solve(weights / weights.max() / np.abs(y))
    return c, np.abs((powers @ c - y) / y).max()


def chebyshev(lo, hi, n):
    return lo + (np.cos(np.linspace(0.0, np.pi, n)) + 1.0) / 2.0 * (hi - lo)


t = chebyshev(0.0, SPLIT * SPLIT, 6000)
z = np.maximum(np.sqrt(t), 1e-9)
p, p_err = fit(t, np.array([math.erf(v) for v in z]) / z, 5)
z = chebyshev(SPLIT, TOP, 8000)
q, q_err = fit(1.0 / (1.0 + 0.5 * z),
               np.array([math.erfc(v) * math.exp(v * v) for v in z]), 7)
print("P (erf(z) / z in z^2), relative error %.2g:" % p_err)
print("  " + ", ".join(repr(float(v)) for v in p))
print("Q (erfc(z) exp(z^2) in 1 / (1 + z / 2)), relative error %.2g:" % q_err)
print("  " + ", ".join(repr(float(v)) for v in q))
