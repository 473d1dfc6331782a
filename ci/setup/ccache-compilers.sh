#!/usr/bin/env bash
# ci/setup/ccache-compilers.sh: inside a throwaway test chroot (never on a machine
# of users), make every versioned gcc (/usr/bin/gcc-N, what Debian's kernel
# headers name as CC) run through ccache: dpkg-divert moves the compiler to
# /usr/libexec/ccache-compilers/gcc-N (the same name, so `gcc-N --version`
# says what it said) and a two-line wrapper takes its place. dpkg resets
# PATH for maintainer scripts, so /usr/lib/ccache first in PATH does not
# reach the DKMS builds that apt's postinst and kernel hooks start; this
# does. CCACHE_DIR must be set for the builds (the tests set it).
#
#   ci/setup/ccache-compilers.sh     wrap the compilers (again: nothing to do)
#
# Exit: 0 done, 1 a diversion failed, 77 no ccache in the chroot.
set -euo pipefail

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  help_exit "$@"
  local c name real dir=/usr/libexec/ccache-compilers
  command -v ccache >/dev/null 2>&1 || { echo "ccache-compilers.sh: no ccache here" >&2 && exit 77; }
  for c in /usr/bin/gcc-[0-9]*; do
    name=${c##*/}
    [[ ${name} =~ ^gcc-[0-9]+$ && -x ${c} ]] || continue
    if [[ ! -e ${dir}/${name} ]]; then
      real=$(readlink -f -- "${c}")
      mkdir -p "${dir}"
      dpkg-divert --quiet --local --rename --divert "${dir}/${name}" --add "${c}"
      # Debian's gcc-N is a relative link (x86_64-linux-gnu-gcc-N)
      [[ ! -L ${dir}/${name} ]] || ln -sfn -- "${real}" "${dir}/${name}"
    fi
    printf '#!/bin/sh\nexec ccache %s "$@"\n' "${dir}/${name}" >"${c}.tmp"
    chmod 0755 "${c}.tmp"
    mv -f -- "${c}.tmp" "${c}"
    printf '%s -> ccache %s\n' "${c}" "${dir}/${name}"
  done
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
