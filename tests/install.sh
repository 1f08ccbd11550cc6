#!/bin/bash
# The installed tree, as a user gets it from `meson install`: libcltrain
# links no image codec (issue 9), libcltrain-image links those the build
# found; samples/embed_predict.c builds with `pkg-config cltrain`, and a
# program that loads an image folder (tests/install_folder.c) builds with
# `pkg-config cltrain-image` and runs, refusing PNGs before
# clt_image_init() and reading them after.
# usage: install.sh MESON BUILD_DIR SOURCE_DIR PREFIX MAKE_IMAGE_FOLDER CODECS
#          SANITIZE
#   (CODECS: the codecs the build found, e.g. "png jpeg", or ""; SANITIZE:
#   meson's b_sanitize, "none" or e.g. "address,undefined": a program that
#   links a sanitized library is compiled with the same sanitizers)
set -euo pipefail
MESON=$1
B=$2
S=$3
PREFIX=$4
MK=$5
CODECS=$6
SANITIZE=${7:-none}
CFLAGS_SAN=()
[ "$SANITIZE" = none ] || CFLAGS_SAN=("-fsanitize=$SANITIZE")
T=$(mktemp -d /tmp/clt_install_XXXXXX)
trap 'rm -rf "$T"' EXIT
export CLT_DATA_CACHE_DIR=$T/datacache
# shellcheck source=cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"

"$MESON" install -C "$B" --no-rebuild --destdir "$T/inst" >"$T/install.log" ||
  fail "meson install: $(tail -5 "$T/install.log")"
LIB=$(find "$T/inst" -name libcltrain.so -print -quit)
[ -n "$LIB" ] || fail "no libcltrain.so under $T/inst"
LIBDIR=$(dirname "$LIB")
for f in libcltrain.a libcltrain-image.so libcltrain-image.a \
  pkgconfig/cltrain.pc pkgconfig/cltrain-image.pc; do
  [ -e "$LIBDIR/$f" ] || fail "$f not installed in $LIBDIR"
done
for h in cltrain.h cltrain_image.h; do
  [ -e "$T/inst$PREFIX/include/$h" ] || fail "include/$h not installed"
done

ldd "$LIB" >"$T/ldd"
if grep -E 'libpng|libjpeg' "$T/ldd"; then
  fail "libcltrain.so links an image codec"
fi
echo "ok: libcltrain.so links neither libpng nor libjpeg"
ldd "$LIBDIR/libcltrain-image.so" >"$T/ldd-image"
grep -q 'libcltrain\.so' "$T/ldd-image" ||
  fail "libcltrain-image.so does not link libcltrain.so"
for codec in $CODECS; do
  grep -q "lib$codec" "$T/ldd-image" ||
    fail "libcltrain-image.so does not link lib$codec: $(cat "$T/ldd-image")"
done
echo "ok: libcltrain-image.so links libcltrain and: ${CODECS:-no codec}"

# pkg-config as a user runs it, with the prefix moved into the destdir.
pc() {
  PKG_CONFIG_PATH="$LIBDIR/pkgconfig" pkg-config \
    --define-variable=prefix="$T/inst$PREFIX" "$@"
}
pc --print-requires cltrain-image | grep -qx 'cltrain' ||
  fail "cltrain-image.pc does not require cltrain"
# shellcheck disable=SC2046
cc "${CFLAGS_SAN[@]}" -o "$T/embed_predict" "$S/samples/embed_predict.c" \
  $(pc --cflags --libs cltrain) || fail "embed_predict does not build"
echo "ok: samples/embed_predict.c builds with pkg-config cltrain"
# shellcheck disable=SC2046
cc "${CFLAGS_SAN[@]}" -o "$T/install_folder" "$S/tests/install_folder.c" \
  $(pc --cflags --libs cltrain-image) ||
  fail "install_folder does not build"
echo "ok: a program loading image folders builds with pkg-config cltrain-image"

case " $CODECS " in
*" png "*) ;;
*)
  echo "image folders: not run (this build has no libpng)"
  exit 0
  ;;
esac
"$MK" "$T/images" 2 3 8 8
LD_LIBRARY_PATH="$LIBDIR" "$T/install_folder" "$T/images" >"$T/out" 2>&1 ||
  fail "install_folder: $(cat "$T/out")"
cat "$T/out"
grep -qF "after clt_image_init: 6 images in 2 classes" "$T/out" ||
  fail "install_folder did not load the folder"
echo "ok: the installed libraries load an image folder after clt_image_init()"
