#!/usr/bin/env bash
# ci/workflows/job.sh TAG [compile|full]: one hosted-CI job of the matrix (see
# .github/workflows/matrix.yml). Needs network access to GitHub; run on
# Debian 12 as root (a container will do). Fetches TAG from GitHub (verified
# against versions.conf), then runs the matrix for it against the newest
# installed Debian kernel headers: gate (a) (compile, the default), or gate
# (b) (full: all modules, the QEMU module-load test and the bisect check).
set -euo pipefail

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  help_exit "$@"
  [[ $# -ge 1 && $# -le 2 ]] || usage_error "needs TAG [compile|full]"
  local tag=$1 level=${2:-compile} repo krel
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
  krel=$(newest_headers)
  "${repo}/build.sh" fetch "${tag}" --no-run
  case ${level} in
  compile) "${repo}/ci/heavy/matrix.sh" --tags "${tag}" --require "${tag}" --kernel "${krel}" --compile "${tag}" ;;
  full) "${repo}/ci/heavy/matrix.sh" --tags "${tag}" --require "${tag}" --kernel "${krel}" --full "${tag}" --qemu "${krel}" --bisect ;;
  *) usage_error "unknown level ${level} (compile or full)" ;;
  esac
}

# newest_headers: the newest kernel release with headers under /lib/modules.
newest_headers() {
  local d krel=""
  for d in /lib/modules/*/build; do
    [[ -e ${d}/Makefile ]] && krel=$(basename "$(dirname "${d}")")
  done
  [[ -n ${krel} ]] || { printf 'job.sh: no kernel headers installed\n' >&2 && exit 1; }
  printf '%s\n' "${krel}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
