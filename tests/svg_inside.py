#!/usr/bin/env python3
"""Checks that everything an SVG draws lies inside its own canvas.

usage: svg_inside.py FILE.svg

The chart is rendered by rsvg-convert (Debian's librsvg2-bin) on a canvas
MARGIN pixels larger on every side, with its own background left out: any
pixel drawn in that margin is an element that a viewer of the real canvas
never sees (a legend placed past the right edge, a label under the bottom).
Exit 0 when the margin is empty, 1 (naming where ink was found) otherwise,
2 on a usage or tool error. Plain Python: the PNG is decoded here.
"""
import re
import struct
import subprocess
import sys
import zlib

MARGIN = 200


def decode_png(data):
    """Returns (width, height, rows of RGBA bytes) of an 8-bit RGBA PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(
                ">IIBBBBB", body)
            if depth != 8 or colour != 6 or interlace:
                raise ValueError("expected 8-bit RGBA, not interlaced")
        elif kind == b"IDAT":
            idat += body
    raw, bpp, stride = zlib.decompress(idat), 4, 4 * width
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        filt, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if filt == 1:
                line[x] = (line[x] + a) & 255
            elif filt == 2:
                line[x] = (line[x] + b) & 255
            elif filt == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pred) & 255
        rows.append(line)
        prev = line
    return width, height, rows


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    svg = open(sys.argv[1], encoding="utf-8").read()
    m = re.search(r'viewBox="0 0 (\d+) (\d+)"', svg)
    if not m:
        print("no viewBox=\"0 0 W H\" in %s" % sys.argv[1], file=sys.stderr)
        return 2
    w, h = int(m.group(1)), int(m.group(2))
    W, H = w + 2 * MARGIN, h + 2 * MARGIN
    grown = svg.replace(m.group(0),
                        'viewBox="%d %d %d %d"' % (-MARGIN, -MARGIN, W, H), 1)
    grown = re.sub(r'width="%d" height="%d"' % (w, h),
                   'width="%d" height="%d"' % (W, H), grown, count=1)
    # The background covers "100%": of the grown canvas, so it goes.
    grown = re.sub(r'<rect width="100%" height="100%"[^>]*/>', "", grown)
    png = subprocess.run(["rsvg-convert", "-f", "png"], input=grown.encode(),
                         capture_output=True, check=True).stdout
    pw, ph, rows = decode_png(png)
    if (pw, ph) != (W, H):
        print("rendered %dx%d, expected %dx%d" % (pw, ph, W, H),
              file=sys.stderr)
        return 2
    outside = []
    for y in range(H):
        row = rows[y]
        for x in range(W):
            inside = MARGIN <= x < MARGIN + w and MARGIN <= y < MARGIN + h
            if not inside and row[4 * x + 3] != 0:
                outside.append((x - MARGIN, y - MARGIN))
    if outside:
        xs = [p[0] for p in outside]
        ys = [p[1] for p in outside]
        print("%s: %d pixels drawn outside the %dx%d canvas, within x %d..%d,"
              " y %d..%d" % (sys.argv[1], len(outside), w, h, min(xs),
                             max(xs), min(ys), max(ys)), file=sys.stderr)
        return 1
    print("%s: everything drawn lies inside its %dx%d canvas"
          % (sys.argv[1], w, h))
    return 0


if __name__ == "__main__":
    sys.exit(main())
