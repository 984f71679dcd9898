#!/usr/bin/env bash
# scripts/install-deps.sh: install the Debian 12 packages nstbatch needs to build, run and test.
# Idempotent: installs only what is missing (apt-get update only then), so it is cheap to call
# before every build; `make demo` and `make test` do. Runs apt-get as root, or through sudo.
#
#   scripts/install-deps.sh          build and run
#   scripts/install-deps.sh --test   also what only the tests use: a real Slurm (slurm-wlm, munge),
#                                    gnuplot for the plot command, Prometheus and node_exporter
#                                    (with promtool) and curl for the monitoring test, Chromium and
#                                    Node.js with npm (then npm ci in tests/browser: playwright-core)
#                                    for the viewer's browser test (make test); npm also lets make
#                                    fetch OpenSeadragon for the viewer page (make viewer); OpenCV's
#                                    video module for the optical flow (DIS) the flow tests measure;
#                                    the ffmpeg program, with which the video tests make clips with
#                                    sound or a variable rate and check what was written; iproute2
#                                    for the two hosts of the multi-node test (network namespaces;
#                                    util-linux's unshare and nsenter are always there) and iptables
#                                    for a firewall between them; PyTorch (Debian's, for the CPU:
#                                    the GPU benchmark's peer and the quality scorer, run at tiny
#                                    sizes by test_bench); Debian's locale sources (locales), from
#                                    which test_runner makes a locale that writes 0,5 to run a
#                                    script under
#   scripts/install-deps.sh --dev    also OpenBLAS (make bench-conv; make bench's fair PyTorch peer)
set -euo pipefail

pkgs=(
  make gcc pkg-config                         # build
  openmpi-bin libopenmpi-dev                  # MPI (mpicc, mpirun)
  libhdf5-openmpi-dev hdf5-tools              # parallel HDF5; h5dump for the tests
  libtiff-dev libtiff-tools                   # TIFF; tiffinfo/tiffdump for the tests
  libpng-dev libjpeg62-turbo-dev              # PNG, JPEG
  libdnnl-dev                                 # oneDNN: the CPU backend's convolutions
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev
                                              # FFmpeg's libraries: video files in and out
  clang libclang-rt-14-dev                    # libFuzzer targets, sanitizers
  libvips-tools python3-h5py python3-tifffile python3-numpy python3-pil
                                              # readers we did not write, for the output tests
)
test_pkgs=(slurm-wlm munge gnuplot-nox prometheus prometheus-node-exporter curl chromium libopencv-video-dev ffmpeg iproute2 iptables python3-torch python3-torchvision locales)
case "${1:-}" in
  --test) pkgs+=("${test_pkgs[@]}") ;;
  --dev) pkgs+=("${test_pkgs[@]}" libopenblas-dev libopenblas0-openmp) ;; # OpenBLAS: make bench-conv's comparison, PyTorch's BLAS
esac
# Node.js and npm for the viewer (make viewer, the browser test): Debian's, unless an npm is there
# already (NodeSource's nodejs carries its own npm and conflicts with Debian's package)
case "${1:-}" in
  --test | --dev) command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm) ;;
esac

# the browser test's driver, playwright-core (pinned in tests/browser/package-lock.json; it drives
# the system's Chromium and downloads no browser); again when the lock changes
browser_test_deps() {
  case "${1:-}" in --test | --dev) ;; *) return 0 ;; esac
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/browser"
  [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ] && return 0
  echo "install-deps: npm ci in tests/browser (playwright-core)"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) ||
    echo "install-deps: npm ci in tests/browser failed (is the npm registry reachable?): test_viewer skips its browser part" >&2
}

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  browser_test_deps "${1:-}"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=
elif command -v sudo >/dev/null 2>&1; then
  SUDO=sudo
else
  echo "install-deps: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
browser_test_deps "${1:-}"
echo "install-deps: done"
