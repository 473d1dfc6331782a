#!/usr/bin/env bats
# The documentation: README.md stays short, every section it had lives on in
# docs/ and is reachable from it, every relative link and #anchor of
# README.md, CONTRIBUTING.md and docs/*.md resolves (ci/helpers/check-links.sh, shown
# to fail on broken fixtures), and every command's help names its page.

load ../test_helper

setup() {
  common_setup
  CHECK="${REPO_ROOT}/ci/helpers/check-links.sh"
}

# The former top-level sections of README.md (and their subsections), each
# with the page that holds it now: TITLE<TAB>FILE.
SECTIONS="Quick start	README.md
Supported GPUs, tags and families	docs/families-and-rebase.md
How it works	docs/how-it-works.md
Switching P2P off	docs/how-it-works.md
Mixed boxes	docs/how-it-works.md
Prior art, and what differs	docs/how-it-works.md
Kernels	docs/kernels.md
Commands	docs/commands.md
A new upstream release: \`rebase\`	docs/families-and-rebase.md
Install is a transaction	docs/install.md
Userspace: your distribution's packages, or NVIDIA's \`.run\`	docs/install.md
Exit codes	docs/commands.md
versions.conf: tags and pins	docs/versions-conf.md
Kernel updates: DKMS	docs/install.md
Secure Boot: signing	docs/install.md
The Debian package	docs/packaging.md
A signed apt repository for fleets: \`repo\`	docs/packaging.md
The verification tool	docs/verify-tool.md
Diagnosis: \`build.sh doctor\`	docs/diagnosis.md
What was verified	docs/verification-record.md
Tests	docs/tests-and-ci.md
Troubleshooting	docs/troubleshooting.md
Layout	docs/layout.md
License	README.md"

@test "README.md stays under 300 lines" {
  local n
  n=$(wc -l <"${REPO_ROOT}/README.md")
  [[ ${n} -lt 300 ]] || fail "README.md has ${n} lines (at most 299)"
}

@test "every relative link and #anchor of README.md, CONTRIBUTING.md and docs/*.md resolves" {
  run "${CHECK}"
  assert_success
  assert_output ""
}

@test "every former section of README.md is a heading of its page, and README.md links to that page" {
  local title file n=0
  while IFS=$'\t' read -r title file; do
    n=$((n + 1))
    assert_file_exist "${REPO_ROOT}/${file}"
    grep -q -x -E -e "#+ .*" "${REPO_ROOT}/${file}" || fail "${file} has no heading"
    sed -n -E 's/^#+ //p' "${REPO_ROOT}/${file}" | grep -q -x -F -- "${title}" ||
      fail "${file} has no heading '${title}'"
    [[ ${file} == README.md ]] || grep -q -F "](${file}" "${REPO_ROOT}/README.md" ||
      fail "README.md does not link to ${file} (which holds '${title}')"
  done <<<"${SECTIONS}"
  [[ ${n} -eq 24 ]] || fail "expected 24 sections, read ${n}"
}

@test "README.md's first screen sets up a fresh Debian/Ubuntu machine: the build's and the tests' command" {
  run head -n 40 "${REPO_ROOT}/README.md"
  assert_line --regexp '^ci/setup/deps\.sh build && \./build\.sh [0-9.]+ --dry-run '
  assert_line --regexp '^ci/setup/deps\.sh unit && test/run unit '
  # The commands it names exist and take those arguments.
  assert_file_executable "${REPO_ROOT}/ci/setup/deps.sh"
  assert_file_executable "${REPO_ROOT}/test/run"
  grep -q -E '^  (unit|build)\) ' "${REPO_ROOT}/ci/setup/deps.sh" || fail "ci/setup/deps.sh lacks its unit/build tiers"
  local tag
  tag=$(head -n 40 "${REPO_ROOT}/README.md" | sed -n -E 's/^ci\/setup\/deps\.sh build && \.\/build\.sh ([0-9.]+) --dry-run.*/\1/p')
  run_build check "${tag}"
  assert_success
}

@test "check-links.sh: good links pass; a missing file, a wrong anchor, an anchor into a non-Markdown file fail" {
  local d="${BATS_TEST_TMPDIR}/md"
  mkdir -p "${d}/docs"
  cat >"${d}/docs/page.md" <<'EOF'
# A page

## Diagnosis: `build.sh doctor`

## Userspace: your distribution's packages, or NVIDIA's `.run`

## Notes

## Notes

```sh
# not a heading
[a link in code](missing-in-code.md)
```
EOF
  printf 'x\n' >"${d}/LICENSE"
  cat >"${d}/good.md" <<'EOF'
# Good

[page](docs/page.md), [doctor](docs/page.md#diagnosis-buildsh-doctor),
[userspace](docs/page.md#userspace-your-distributions-packages-or-nvidias-run),
[the second Notes](docs/page.md#notes-1), [here](#good), [dir](docs/), [license](LICENSE),
[web](https://example.org/x#y), `[in code](missing.md)`, [titled](docs/page.md "a title")
EOF
  run "${CHECK}" "${d}/good.md" "${d}/docs/page.md"
  assert_success
  assert_output ""

  cat >"${d}/bad.md" <<'EOF'
# Bad

[gone](docs/gone.md)
[wrong anchor](docs/page.md#diagnosis-build-sh-doctor) and [not here](#nowhere)
[third Notes](docs/page.md#notes-2)
[into a file](LICENSE#L1)
EOF
  run "${CHECK}" "${d}/good.md" "${d}/bad.md"
  assert_failure 1
  assert_line "${d}/bad.md:3: docs/gone.md: no such file or directory"
  assert_line "${d}/bad.md:4: docs/page.md#diagnosis-build-sh-doctor: no heading with that anchor in docs/page.md"
  assert_line "${d}/bad.md:4: #nowhere: no heading with that anchor in ${d}/bad.md"
  assert_line "${d}/bad.md:5: docs/page.md#notes-2: no heading with that anchor in docs/page.md"
  assert_line "${d}/bad.md:6: LICENSE#L1: an anchor into a file that is not Markdown"
  assert_equal "${#lines[@]}" 5

  run "${CHECK}" "${d}/nonexistent.md"
  assert_failure 2
}

@test "check-links.sh fails on this repository's docs once a page is gone or a heading renamed" {
  local d="${BATS_TEST_TMPDIR}/repo"
  mkdir -p "${d}"
  cp -a "${REPO_ROOT}/README.md" "${REPO_ROOT}/CONTRIBUTING.md" "${REPO_ROOT}/docs" "${REPO_ROOT}/LICENSE" "${REPO_ROOT}/verify" "${d}/"
  local -a files=("${d}/README.md" "${d}/CONTRIBUTING.md" "${d}"/docs/*.md)
  run "${CHECK}" "${files[@]}"
  assert_success
  sed -i 's/^## Mixed boxes$/## Mixed machines/' "${d}/docs/how-it-works.md"
  rm "${d}/docs/layout.md"
  files=("${d}/README.md" "${d}/CONTRIBUTING.md" "${d}"/docs/*.md)
  run "${CHECK}" "${files[@]}"
  assert_failure 1
  assert_output --partial "how-it-works.md#mixed-boxes: no heading with that anchor"
  assert_output --partial "docs/layout.md: no such file or directory"
}

@test "every command's help ends with the docs page that documents it" {
  local c last page
  for c in all fetch patch build install uninstall package repo preflight doctor verify list check rebase exit-codes; do
    run_build help "${c}"
    assert_success
    last=${lines[${#lines[@]} - 1]}
    [[ ${last} =~ ^More:\ (docs/[a-z-]+\.md)$ ]] || fail "help ${c} ends with '${last}', not 'More: docs/<page>.md'"
    page=${BASH_REMATCH[1]}
    assert_file_exist "${REPO_ROOT}/${page}"
  done
  run_build help doctor
  assert_line "More: docs/diagnosis.md"
  run_build help repo
  assert_line "More: docs/packaging.md"
  run_build help rebase
  assert_line "More: docs/families-and-rebase.md"
}

@test "every family of versions.conf is named in a column of the Mixed boxes table (a family rebase writes makes it fail until a person reads its code)" {
  local header fam missing=()
  header=$(sed -n '/^## Mixed boxes$/,/^## /{/^| case |/p}' "${REPO_ROOT}/docs/how-it-works.md")
  [[ -n ${header} ]]
  while IFS= read -r fam; do
    [[ ${header} =~ [|,][[:space:]]${fam//./\\.}[[:space:],|] ]] || missing+=("how-it-works.md:${fam}")
  done < <(awk '!/^#/ && NF { print $2 }' "${REPO_ROOT}/versions.conf" | sort -u)
  [[ ${#missing[@]} -eq 0 ]] || fail "families without a column: ${missing[*]} (a new family from rebase: read its code and add it)"
}

@test "README.md speaks to newcomers: no changelog warnings on it (troubleshooting has the ccache one), no sudo a root-only machine lacks" {
  run grep -c 'Rebuild if you built with ccache' "${REPO_ROOT}/README.md"
  assert_output 0
  run grep -c 'Rebuild if you built with ccache' "${REPO_ROOT}/docs/troubleshooting.md"
  assert_output 1
  # the set-up lines of the first screen run as root as well as through sudo
  run grep -n -E '^sudo ci/deps' "${REPO_ROOT}/README.md"
  assert_failure
}

@test "ci/setup/deps.sh as a normal user runs itself through sudo; without sudo it says to run it as root" {
  stub id - <<<'echo 1000'
  stub sudo - <<<'exit 0'
  run "${REPO_ROOT}/ci/setup/deps.sh" unit
  assert_success
  run cat "${STUB_LOG}"
  assert_line --regexp "^sudo -- .*/ci/setup/deps\.sh unit$"
  rm -f "${STUBS}/sudo"
  PATH="$(path_hiding sudo)" run "${REPO_ROOT}/ci/setup/deps.sh" build
  assert_failure 1
  assert_output --partial 'needs root to run apt-get, and sudo is not installed: run it as root'
}

@test "ci/setup/deps.sh build takes linux-source-6.1 at the version of the headers it installs (the clang kernel test needs both)" {
  # apt-cache as Debian's security archive had it: the source at -3 before
  # linux-headers-amd64 followed (-2).
  stub apt-cache - <<'EOF2'
case "$*" in
"show linux-source-6.1" | "show linux-source-6.1=6.1.192-2" | "show linux-source-6.1=6.1.192-3") exit 0 ;;
"policy linux-headers-amd64") printf 'linux-headers-amd64:\n  Installed: (none)\n  Candidate: %s\n' "${CANDIDATE}" ;;
*) exit 100 ;;
esac
EOF2
  source "${REPO_ROOT}/ci/setup/deps.sh"
  CANDIDATE=6.1.192-2 run linux_source_package linux-headers-amd64
  assert_output linux-source-6.1=6.1.192-2
  # no source of the headers' version: the newest (the clang test then SKIPs, saying so)
  CANDIDATE=6.1.170-1 run linux_source_package linux-headers-amd64
  assert_output linux-source-6.1
  # no linux-source-6.1 at all (Ubuntu): nothing
  stub apt-cache - <<<'exit 100'
  run linux_source_package linux-headers-generic
  assert_success
  assert_output ""
}

@test "every package doctor names for a program it collects with is in a tier of ci/setup/deps.sh (lspci: pciutils)" {
  local pkgs pkg
  # mokutil is the machine's Secure Boot tool: neither a build nor the tests need it
  pkgs=$(sed -n -E 's/.*\(package ([a-z0-9.+-]+)\).*/\1/p' "${REPO_ROOT}/lib/85-doctor.sh" | grep -v -x mokutil)
  [[ ${pkgs} == *pciutils* ]] || fail "doctor no longer names pciutils for lspci: update this test"
  source "${REPO_ROOT}/ci/setup/deps.sh"
  for pkg in ${pkgs}; do
    [[ " ${UNIT_PACKAGES[*]} ${BUILD_PACKAGES[*]} " == *" ${pkg} "* ]] || fail "${pkg} (named by doctor) is in no tier of ci/setup/deps.sh"
  done
}
