#!/usr/bin/env bash
# ci/job.sh TAG: one hosted-CI job of the matrix (see .github/workflows/matrix.yml).
# Needs network access to GitHub; run on Debian 12 as root (a container will do).
# Fetches TAG from GitHub (verified against versions.conf), then runs the
# matrix for it against the installed Debian kernel headers, with the QEMU
# module-load test and the bisect check.
set -euo pipefail

main() {
  local tag=${1:?usage: ci/job.sh TAG} repo krel
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
  krel=$(newest_headers)
  "${repo}/build.sh" fetch "${tag}" --no-run
  "${repo}/ci/matrix.sh" --tags "${tag}" --require "${tag}" --kernel "${krel}" --qemu "${krel}" --bisect
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
