#!/usr/bin/env bash
# Adds Open MPI to the GPU machine's bundle, for issue 12's GPU + CPU ranks
# (`gpu_session.sh mpi`): that machine has no MPI and nothing can be
# installed there. Run from the project's root after ../shared/tools/gpu-bundle
# (which packs a cltrain built with MPI where libopenmpi-dev is installed):
#     ../shared/tools/gpu-bundle && bash samples/bench/gpu_mpi_bundle.sh
# It copies Debian's Open MPI (mpirun, the components that need no network
# fabric library, PMIx and its plugins, their help texts; about 10 MB) into
# .gpu/mpi and writes .gpu/mpi/env, which points Open MPI and PMIx there
# (OPAL_* and PMIX_* install paths: Open MPI's own way to move an
# installation). Checked here under strace: with that env, mpirun and the
# ranks open no file of the system's Open MPI, PMIx or hwloc.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
[ -x .gpu/bin/cltrain ] || {
  echo "gpu_mpi_bundle.sh: no .gpu/bin/cltrain: run ../shared/tools/gpu-bundle first" >&2
  exit 1
}
case $(ldd .gpu/bin/cltrain) in *libmpi*) ;; *)
  echo "gpu_mpi_bundle.sh: .gpu/bin/cltrain is built without MPI (install libopenmpi-dev, rm -rf build-gpu, run gpu-bundle again)" >&2
  exit 1 ;;
esac
orterun=$(readlink -f "$(command -v mpirun)")
ompi=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
ompi_data=$(ompi_info --path pkgdatadir --parsable | sed -n 's/^path:pkgdatadir://p')
pmix=$(dirname "$(readlink -f "$(ldconfig -p | awk '/libpmix\.so\.2 /{print $NF; exit}')")")
if [ -z "$ompi" ] || [ ! -d "$ompi" ] || [ ! -d "$pmix/pmix" ]; then
  echo "gpu_mpi_bundle.sh: Open MPI or PMIx not found (apt-get install openmpi-bin libopenmpi-dev)" >&2
  exit 1
fi
M=.gpu/mpi
rm -rf "$M"
mkdir -p "$M/bin" "$M/lib/openmpi" "$M/lib/pmix" "$M/share"
cp "$orterun" "$M/bin/orterun"
ln -s orterun "$M/bin/mpirun"
# The components, less those for network fabrics (InfiniBand, OFI, UCX,
# PSM) and OpenSHMEM: one machine's ranks talk through shared memory.
for f in "$ompi"/*.so; do
  case $(ldd "$f") in
    *libfabric* | *libucp* | *libucs* | *libuct* | *libibverbs* | *libpsm* | *liboshmem*) continue ;;
  esac
  cp "$f" "$M/lib/openmpi/"
done
cp -a "$pmix/pmix/." "$M/lib/pmix/"
cp -L "$pmix/libpmix.so.2" "$M/lib/"
cp -a "$ompi_data" "$M/share/openmpi"
[ -d "$pmix/../share/pmix" ] && cp -a "$pmix/../share/pmix" "$M/share/pmix"
# Their libraries that .gpu/lib does not hold yet.
ldd "$M/bin/orterun" "$M"/lib/openmpi/*.so "$M"/lib/pmix/*.so "$M/lib/libpmix.so.2" |
  awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|libz)\.so' |
  while read -r lib; do
    [ -e ".gpu/lib/$(basename "$lib")" ] || cp -L "$lib" "$M/lib/"
  done
cat > "$M/env" <<'ENV'
# source this on the GPU machine after .gpu/env: Open MPI from .gpu/mpi
M=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX=$M OPAL_LIBDIR=$M/lib OPAL_PKGLIBDIR=$M/lib/openmpi \
  OPAL_DATADIR=$M/share OPAL_PKGDATADIR=$M/share/openmpi OPAL_SYSCONFDIR=$M/etc \
  PMIX_PREFIX=$M PMIX_LIBDIR=$M/lib PMIX_PKGLIBDIR=$M/lib/pmix \
  PMIX_DATADIR=$M/share PMIX_PKGDATADIR=$M/share/pmix PMIX_SYSCONFDIR=$M/etc
# hwloc's plugins (OpenCL, GL, PCI, XML) stay out, as they are on the GPU
# machine, which has none of the system's.
export HWLOC_PLUGINS_PATH=$M/lib/hwloc
export PATH=$M/bin:$PATH LD_LIBRARY_PATH=$M/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ENV
du -sh "$M" | awk '{print ".gpu/mpi holds " $1}'
du -sh .gpu | awk '{print ".gpu holds " $1 " (at most 64 MiB may travel with the tree)"}'
