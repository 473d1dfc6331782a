# shellcheck shell=bash
# lib/04-cache.sh: where the verified cache keeps a tag's source and .run, and
# the lock that keeps two runs from writing the same cache.

cache_src_dir() { printf '%s/src/%s\n' "${P2P_CACHE_DIR}" "$1"; }

cache_run_file() { printf '%s/run/NVIDIA-Linux-x86_64-%s.run\n' "${P2P_CACHE_DIR}" "$1"; }

cache_lock() {
  [[ ${P2P_DRY_RUN} -eq 1 ]] && return 0
  lock_acquire "${P2P_CACHE_DIR}"
}
