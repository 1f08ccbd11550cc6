#!/usr/bin/env bash
# Adds a second cltrain, built from an earlier revision, to the GPU
# machine's bundle, so that `gpu_session.sh ab` can time this tree against
# it in one call (only ratios from one session hold). Run from the
# project's root after ../shared/tools/gpu-bundle:
#     bash samples/bench/gpu_ab_bundle.sh REV
# It builds REV (a commit, tag or branch) in a temporary git worktree with
# gpu-bundle's options (release, no OpenBLAS) and copies its cltrain to
# .gpu/bin/cltrain-ab (about 1 MB; its libraries are this tree's, already in
# .gpu/lib) and REV's commit to .gpu/ab_rev.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: gpu_ab_bundle.sh REV (the revision to compare this tree with)" >&2
  exit 2
fi
root=$(git rev-parse --show-toplevel)
cd "$root"
[ -x .gpu/bin/cltrain ] || {
  echo "gpu_ab_bundle.sh: no .gpu/bin/cltrain: run ../shared/tools/gpu-bundle first" >&2
  exit 1
}
rev=$(git rev-parse --verify "$1^{commit}") || {
  echo "gpu_ab_bundle.sh: no revision '$1'" >&2
  exit 1
}
tree=$(mktemp -d)
cleanup() { git worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"; }
trap cleanup EXIT
git worktree add --detach -q "$tree" "$rev"
# Same options as gpu-bundle, so that only the revision differs.
meson setup "$tree/build-ab" "$tree" -Dbuildtype=release -Dopenblas=disabled >/dev/null
ninja -C "$tree/build-ab" cltrain >/dev/null
cp "$tree/build-ab/cltrain" .gpu/bin/cltrain-ab
echo "$rev" > .gpu/ab_rev
missing=$(ldd .gpu/bin/cltrain-ab | awk '$3 ~ /^\// {print $3}' |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|libz)\.so' |
  while read -r lib; do [ -e ".gpu/lib/$(basename "$lib")" ] || echo "$lib"; done)
if [ -n "$missing" ]; then
  echo "gpu_ab_bundle.sh: cltrain-ab needs libraries .gpu/lib lacks: $missing" >&2
  exit 1
fi
echo ".gpu/bin/cltrain-ab is $(git log -1 --format='%h %s' "$rev" | cut -c1-72)"
du -sh .gpu | awk '{print ".gpu holds " $1 " (at most 64 MiB may travel with the tree)"}'
