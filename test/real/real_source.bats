#!/usr/bin/env bats
# The real-source tier: the real upstream repository (a git bundle), real
# quilt, real kbuild against Debian's kernel headers (6.1 installed, 6.12
# extracted, 7.2 and 7.3 in chroots), real modules, QEMU, depmod. Slow.
# What this machine cannot do is SKIPped, visibly, with the reason; a stage
# the time budget left out is SKIPped with the budget's numbers.
#
# Environment (.ci/run sets these):
#   NVP2P_TEST_GIT          bare git repository holding the upstream tags
#                           (default: cloned from NVP2P_UPSTREAM_BUNDLE)
#   NVP2P_UPSTREAM_BUNDLE   the git bundle (default: ../shared/upstream/
#                           open-gpu-kernel-modules.bundle beside the checkout)
#   NVP2P_TEST_SOURCES      directory of Debian's orig tarballs
#   NVP2P_TEST_CACHE        build.sh cache (default: a temporary one)
#   NVP2P_TEST_WORK         work directory (default: a temporary one)
#   NVP2P_TEST_CHROOTS      where ci/setup/chroot.sh keeps its chroots
#   NVP2P_TEST_DEADLINE     when the whole tier must be done (seconds since
#                           1970): the matrix's budget is what is left of it
#                           less 12 minutes for the tests after it (measured:
#                           about 7.5) and a build that overruns its estimate
#   NVP2P_TEST_BUDGET       or: minutes the matrix may take (default: no limit)
#   NVP2P_TEST_K612         a 6.12 header directory (else one is extracted)
#   NVP2P_TEST_HISTORY      when each stage last ran (default: in
#                           NVP2P_TEST_CACHE): the stages left out longest
#                           go first, so runs that cannot fit every stage
#                           take turns (ci/heavy/matrix.sh --history)
#   NVP2P_TEST_FULL_SAMPLE / NVP2P_TEST_COMPILE_SAMPLE
#                           tags sampled for gate (b) / gate (a) (1 / 6;
#                           gate (a) reuses cached conftest results, ~30 s a tag)

load ../test_helper

# Minutes: a 7.x chroot not made yet is not made when fewer are left before
# the deadline than the matrix's reserve (12) and the shortest build in a
# chroot (about 10) need: the matrix could not use it (CHROOT_NEW_MIN; making
# one took 1-2 minutes here). The merge rebase round trip is a full build in a
# work directory of its own (a fixed path, so ccache hits from one run to the
# next): 3-3.5 minutes measured here with a warm ccache (REBASE_MERGE_MIN, with
# a margin), 17 with a cold one (REBASE_MERGE_COLD_MIN: CI of 2026-11-25 ran
# it at a path ccache had never seen and overran its deadline by 5 minutes).
# REBASE_MERGE_MARK in the cache says a run built at that path before.
CHROOT_NEW_MIN=25
REBASE_MERGE_MIN=8
REBASE_MERGE_COLD_MIN=18
REBASE_MERGE_MARK=rebase-merge-built

setup_file() {
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  export REAL_CACHE="${NVP2P_TEST_CACHE:-${BATS_FILE_TMPDIR}/cache}"
  export REAL_WORK="${NVP2P_TEST_WORK:-${BATS_FILE_TMPDIR}/work}"
  export REAL_SUMMARY="${REAL_WORK}/summary.txt"
  export REAL_RESULTS="${REAL_WORK}/results.tsv"
  export REAL_LOG="${REAL_WORK}/matrix.log"
  mkdir -p "${REAL_WORK}" "${REAL_CACHE}"
  : >"${REAL_RESULTS}"
  real_git
  K61=$(newest_installed_headers)
  export K61
  if [[ -z ${K61} ]]; then
    export REAL_SKIP="no kernel headers installed (Debian: linux-headers-amd64)"
    return 0
  fi
  K612=${NVP2P_TEST_K612:-$("${REPO_ROOT}/ci/setup/kernel-sysroot.sh" "${REAL_CACHE}/kernels/6.12" 6.12 2>/dev/null || true)}
  export K612
  real_chroots
  local -a args=(--cache-dir "${REAL_CACHE}" --work-dir "${REAL_WORK}" --summary "${REAL_SUMMARY}"
    --results "${REAL_RESULTS}" --history "${NVP2P_TEST_HISTORY:-${REAL_CACHE}/matrix-history.tsv}"
    --kernel "${K61}" --qemu "${K61}" --bisect
    --full "newest,first,sample:${NVP2P_TEST_FULL_SAMPLE:-1}" --compile "sample:${NVP2P_TEST_COMPILE_SAMPLE:-6}")
  [[ -n ${REAL_GIT} ]] && args+=(--git "${REAL_GIT}")
  [[ -n ${NVP2P_TEST_SOURCES:-} ]] && args+=(--sources "${NVP2P_TEST_SOURCES}")
  [[ -n ${K612} ]] && args+=(--kernel-src "${K612}")
  local budget
  if [[ -n ${NVP2P_TEST_DEADLINE:-} ]]; then
    budget=$(((NVP2P_TEST_DEADLINE - $(date +%s)) / 60 - 12))
    [[ ${budget} -ge 1 ]] || budget=1
    args+=(--budget "${budget}")
  elif [[ -n ${NVP2P_TEST_BUDGET:-} ]]; then
    args+=(--budget "${NVP2P_TEST_BUDGET}")
  fi
  local c
  for c in ${REAL_CHROOTS}; do
    args+=(--chroot "${c}:${REAL_CHROOT_DIR}")
  done
  REAL_RC=0
  "${REPO_ROOT}/ci/heavy/matrix.sh" "${args[@]}" >"${REAL_LOG}" 2>&1 || REAL_RC=$?
  export REAL_RC
}

# real_git: REAL_GIT, the upstream repository (or REAL_GIT_SKIP, why not).
real_git() {
  local bundle=${NVP2P_UPSTREAM_BUNDLE:-${REPO_ROOT}/../shared/upstream/open-gpu-kernel-modules.bundle}
  REAL_GIT=${NVP2P_TEST_GIT:-}
  REAL_GIT_SKIP=""
  if [[ -z ${REAL_GIT} ]]; then
    if [[ -f ${bundle} ]]; then
      REAL_GIT=$("${REPO_ROOT}/ci/setup/upstream-git.sh" "${bundle}" "${REAL_CACHE}/upstream.git" 2>&1) ||
        { REAL_GIT_SKIP="the upstream bundle is unusable: ${REAL_GIT}" && REAL_GIT=""; }
    else
      REAL_GIT_SKIP="no upstream git repository: set NVP2P_TEST_GIT, or put the bundle at ${bundle}"
    fi
  fi
  export REAL_GIT REAL_GIT_SKIP
}

# real_chroots: REAL_CHROOTS, the chroots made (ci/setup/chroot.sh) under
# REAL_CHROOT_DIR; REAL_CHROOT_SKIP says why others are missing. A chroot
# not made yet is left out when the deadline leaves less than CHROOT_NEW_MIN.
real_chroots() {
  local c out left
  REAL_CHROOT_DIR=${NVP2P_TEST_CHROOTS:-${REAL_CACHE}/chroots}
  REAL_CHROOTS=""
  REAL_CHROOT_SKIP=""
  for c in 7.2 7.3; do
    left=$(minutes_left)
    if [[ ! -d ${REAL_CHROOT_DIR}/${c}/root && -n ${left} && ${left} -lt ${CHROOT_NEW_MIN} ]]; then
      REAL_CHROOT_SKIP+="chroot ${c}: time budget: not made yet, and ${left} min are left before the deadline, making it and a build there need ${CHROOT_NEW_MIN}; "
      continue
    fi
    if out=$("${REPO_ROOT}/ci/setup/chroot.sh" make "${c}" "${REAL_CHROOT_DIR}" 2>&1); then
      REAL_CHROOTS+="${c} "
    else
      REAL_CHROOT_SKIP+="chroot ${c}: $(tail -n 1 <<<"${out}"); "
    fi
  done
  export REAL_CHROOT_DIR REAL_CHROOTS REAL_CHROOT_SKIP
}

newest_installed_headers() {
  local d k=""
  for d in /lib/modules/*/build; do
    [[ -e ${d}/Makefile ]] && k=$(basename "$(dirname "${d}")")
  done
  printf '%s\n' "${k}"
}

setup() {
  [[ -z ${REAL_SKIP:-} ]] || skip "${REAL_SKIP}"
}

# result TAG COLUMN: PASS, FAIL or SKIP from the matrix's results ("-" if none).
result() {
  awk -F'\t' -v t="$1" -v c="$2" '$1 == t && $2 == c { r = $3 } END { print (r == "" ? "-" : r) }' "${REAL_RESULTS}"
}

reason() {
  awk -F'\t' -v t="$1" -v c="$2" '$1 == t && $2 == c { r = $5 } END { print r }' "${REAL_RESULTS}"
}

# columns_of TAG: the stages the matrix ran or skipped for TAG.
columns_of() {
  awk -F'\t' -v t="$1" '$1 == t { print $2 }' "${REAL_RESULTS}" | sort -u
}

# check_stages TAG...: every stage of every TAG PASSed; stages the time
# budget skipped make the test SKIP (listed), any other SKIP or FAIL fails.
check_stages() {
  local tag col r skipped=""
  for tag in "$@"; do
    [[ -n $(columns_of "${tag}") ]] || fail "the matrix ran nothing for ${tag} (log: ${REAL_LOG})"
    while IFS= read -r col; do
      r=$(result "${tag}" "${col}")
      case ${r} in
      PASS) ;;
      SKIP)
        [[ $(reason "${tag}" "${col}") == "time budget"* ]] ||
          fail "${tag} ${col}: SKIP: $(reason "${tag}" "${col}")"
        skipped+="${tag} ${col}; "
        ;;
      *) fail "${tag} ${col}: ${r}: $(reason "${tag}" "${col}") (matrix log: ${REAL_LOG})" ;;
      esac
    done < <(columns_of "${tag}")
  done
  [[ -z ${skipped} ]] || skip "passed, but the time budget left out: ${skipped}"
}

@test "real-source matrix ran; summary (tag x stage)" {
  [[ -f ${REAL_SUMMARY} ]] || fail "no summary; matrix exit ${REAL_RC}: $(tail -n 30 "${REAL_LOG}")"
  grep -v -E '^[0-9]{3}\.[0-9.]+ +PASS +PASS *$' "${REAL_SUMMARY}" | sed 's/^/# /' >&3
  printf '# (%s tags applied only, PASS PASS, not shown)\n' "$(grep -c -E '^[0-9]{3}\.[0-9.]+ +PASS +PASS *$' "${REAL_SUMMARY}")" >&3
  run grep -c '^FAIL ' "${REAL_SUMMARY}"
  assert_output 0
  assert_equal "${REAL_RC}" 0
}

@test "every tag in versions.conf: source pinned in the upstream repository, series applies at fuzz 0" {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  local tag n=0
  while read -r tag _; do
    [[ ${tag} =~ ^[0-9]{3}\. ]] || continue
    n=$((n + 1))
    assert_equal "${tag} source $(result "${tag}" source)" "${tag} source PASS"
    assert_equal "${tag} apply $(result "${tag}" apply)" "${tag} apply PASS"
  done <"${REPO_ROOT}/versions.conf"
  printf '# %s tags applied at fuzz 0\n' "${n}" >&3
}

# family_ends_of WHICH...: the newest / first tag of every family (build.sh's
# family_ends), one per line.
family_ends_of() {
  (cd "${REPO_ROOT}" && bash -c 'source ./build.sh; versions_load; for w in "$@"; do family_ends "${w}"; done' _ "$@")
}

# check_family_ends WHICH: gate (b) with every stage for those tags.
check_family_ends() {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  [[ -n ${K612} ]] || skip "no 6.12 headers could be extracted here (ci/setup/kernel-sysroot.sh)"
  local -a tags
  mapfile -t tags < <(family_ends_of "$1")
  printf '# %s\n' "${tags[*]}" >&3
  check_stages "${tags[@]}"
}

@test "the newest tag of every family: all modules for 6.1 and 6.12, module checks, QEMU load, bisect" {
  check_family_ends newest
}

@test "the first tag of every family: all modules for 6.1 and 6.12, module checks, QEMU load, bisect" {
  check_family_ends first
}

@test "the latest tag builds all modules on Debian's Linux 7.2 (sid) and 7.3 (trixie-backports), in chroots" {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  [[ -z ${REAL_CHROOT_SKIP} ]] || skip "${REAL_CHROOT_SKIP}"
  local latest c krel r
  latest=$(grep -o -E '^[0-9]{3}\.[0-9.]+' "${REPO_ROOT}/versions.conf" | sort -V | tail -n 1)
  for c in ${REAL_CHROOTS}; do
    krel=$("${REPO_ROOT}/ci/setup/chroot.sh" kernel "${c}" "${REAL_CHROOT_DIR}")
    r=$(result "${latest}" "build:${krel}")
    [[ ${r} == PASS ]] && { printf '# %s on %s: PASS\n' "${latest}" "${krel}" >&3 && continue; }
    [[ ${r} == SKIP && $(reason "${latest}" "build:${krel}") == "time budget"* ]] &&
      skip "time budget: ${latest} on ${krel} did not run"
    fail "${latest} build:${krel}: ${r}: $(reason "${latest}" "build:${krel}") (matrix log: ${REAL_LOG})"
  done
}

@test "rotating sample: other tags pass gate (a) or gate (b)" {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  local -a sampled
  mapfile -t sampled < <(awk -F'\t' '$2 == "compile" || $2 ~ /^bisect$/ { print $1 }' "${REAL_RESULTS}" | sort -u |
    grep -v -x -F -f <(family_ends_of newest first))
  [[ ${#sampled[@]} -gt 0 ]] || skip "no tag was sampled in this run"
  printf '# %s\n' "${sampled[*]}" >&3
  check_stages "${sampled[@]}"
}

@test "every pin in versions.conf equals what the upstream repository's tag gives (ci/workflows/pin-tags.sh check)" {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  run "${REPO_ROOT}/ci/workflows/pin-tags.sh" check "${REAL_GIT}"
  assert_success
  assert_output --partial "$(grep -c -E '^[0-9]{3}\.' "${REPO_ROOT}/versions.conf") tags checked"
}

@test "Debian's orig tarballs verify against the core pin and patch at fuzz 0" {
  [[ -n ${NVP2P_TEST_SOURCES:-} ]] || skip "no Debian orig tarballs here (NVP2P_TEST_SOURCES)"
  local f tag n=0
  for f in "${NVP2P_TEST_SOURCES}"/*.orig.tar.*; do
    [[ -f ${f} ]] || continue
    tag=$(sed -E 's/.*_([0-9.]+)\.orig\.tar\..*/\1/' <<<"${f##*/}")
    run "${REPO_ROOT}/build.sh" --verbose --cache-dir "${BATS_TEST_TMPDIR}/cache" --work-dir "${BATS_TEST_TMPDIR}/work" \
      patch "${tag}" --source "${f}"
    assert_success
    assert_output --partial "= pinned core (release tarball form)"
    n=$((n + 1))
  done
  [[ ${n} -gt 0 ]] || skip "no orig tarball in ${NVP2P_TEST_SOURCES}"
}

# data_copy: versions.conf, series, patches and kernels.conf in a temporary
# data directory (build.sh's NVP2P_DATA_DIR), for rebase to change.
data_copy() {
  local data="${BATS_TEST_TMPDIR}/data"
  mkdir -p "${data}"
  cp -a "${REPO_ROOT}/versions.conf" "${REPO_ROOT}/series" "${REPO_ROOT}/patches" "${REPO_ROOT}/kernels.conf" "${data}/"
  printf '%s\n' "${data}"
}

@test "rebase round trip: the newest tag of a family of several, removed from a copy, comes back from the bundle, fits, compiles" {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  local data latest before after
  data=$(data_copy)
  # (the newest tag of all, 610.57.04, has a family of its own, as 595.71.05 had: test/real/rebase_intake.bats)
  latest=$(awk '/^[0-9][0-9][0-9]\./ { n[$2]++; t[$1] = $2 } END { for (x in t) if (n[t[x]] > 1) print x }' "${data}/versions.conf" | sort -V | tail -n 1)
  before=$(awk -v t="${latest}" '$1 == t { print $1, $2, $3, $4, $5 }' "${data}/versions.conf")
  sed -i "/^${latest//./\\.} /d" "${data}/versions.conf"
  NVP2P_DATA_DIR="${data}" run "${REPO_ROOT}/build.sh" --cache-dir "${BATS_TEST_TMPDIR}/cache" \
    --work-dir "${BATS_TEST_TMPDIR}/work" rebase "${latest}" --source "${REAL_GIT}" --kernel "${K61}"
  assert_success
  assert_output --partial "rebase ${latest}: fits family"
  assert_output --regexp "three-way base [0-9]{3}\."
  # The same family and pins (computed again from the tag), tested apply,compile.
  after=$(awk -v t="${latest}" '$1 == t { print $1, $2, $3, $4, $5 }' "${data}/versions.conf")
  assert_equal "${after}" "${before}"
  assert_equal "$(awk -v t="${latest}" '$1 == t { print $8 }' "${data}/versions.conf")" "apply,compile"
}

@test "rebase stops clearly where the registry keys moved: 575.64.05 without family 575" {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  local data
  data=$(data_copy)
  sed -i '/^575\./d' "${data}/versions.conf"
  rm -rf "${data}/patches/575"
  NVP2P_DATA_DIR="${data}" run "${REPO_ROOT}/build.sh" --cache-dir "${BATS_TEST_TMPDIR}/cache" \
    --work-dir "${BATS_TEST_TMPDIR}/work" --dry-run rebase 575.64.05 --source "${REAL_GIT}"
  assert_failure 7
  assert_output --partial "family 570 does not fit 575.64.05"
  assert_output --partial 'no "#define NV_REG_STR_RM_FORCE_P2P_TYPE_BAR1P2P 0x00000002"'
}

@test "rebase needs a person where the P2P HAL moved: 595.45.04 without families 595 and 595.71, every patch reported" {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  local data
  data=$(data_copy)
  awk '$2 != "595" && $2 != "595.71"' "${REPO_ROOT}/versions.conf" >"${data}/versions.conf"
  rm -rf "${data}/patches/595" "${data}/patches/595.71"
  NVP2P_DATA_DIR="${data}" run "${REPO_ROOT}/build.sh" --cache-dir "${BATS_TEST_TMPDIR}/cache" \
    --work-dir "${BATS_TEST_TMPDIR}/work" rebase 595.45.04 --source "${REAL_GIT}"
  assert_failure 7
  assert_output --partial "rebase 595.45.04: family 580-590 (three-way base 590.48.01), per patch:"
  assert_line --regexp "^  p2p-0001-bar1-p2p-hal-for-all-gpus\.patch +conflict +does not merge with upstream's changes"
  assert_line --regexp '^  p2p-0002-route-pcie-bar1-connections\.patch +applies '
  assert_line --regexp '^  p2p-0007-no-p2p-without-static-bar1\.patch +applies '
  assert_output --partial "a person is needed for p2p-0001-bar1-p2p-hal-for-all-gpus.patch"
  assert_output --partial "gone from g_virt_mem_allocator_nvoc.c: dmaAllocBar1P2PMapping_46f6a7"
  assert_output --partial "The work tree is kept for a manual port"
  assert_file_exist "${BATS_TEST_TMPDIR}/work/rebase-595.45.04/rejects/p2p-0001-bar1-p2p-hal-for-all-gpus.patch/src/nvidia/generated/g_virt_mem_allocator_nvoc.c.rej"
  run grep -c '^595\.' "${data}/versions.conf"
  assert_output 0
}

@test "rebase stops where the P2P mechanism moved: 565.57.01 without family 565 (the static BAR1 HAL entries changed)" {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  local data
  data=$(data_copy)
  awk '$2 != "565"' "${REPO_ROOT}/versions.conf" >"${data}/versions.conf"
  rm -rf "${data}/patches/565"
  NVP2P_DATA_DIR="${data}" run "${REPO_ROOT}/build.sh" --cache-dir "${BATS_TEST_TMPDIR}/cache" \
    --work-dir "${BATS_TEST_TMPDIR}/work" --dry-run rebase 565.57.01 --source "${REAL_GIT}"
  assert_failure 7
  assert_output --partial "the P2P mechanism family 555-560 relies on moved between 560.35.03 and 565.57.01:"
  assert_output --partial "kbusIsBar1P2PCapable (HAL entry repointed by p2p-0001-bar1-p2p-hal-for-all-gpus) is gone from 565.57.01"
  refute_output --partial "per patch:"
}

@test "rebase merge round trip: 560.35.03 without family 555-560 gets a new family by three-way merge, built; its P2P changes equal 555-560's" {
  [[ -n ${REAL_GIT} ]] || skip "${REAL_GIT_SKIP}"
  [[ -n ${K61} ]] || skip "no kernel headers installed"
  local left tag=560.35.03 data before a b f need work="${REAL_WORK}/rebase-merge"
  need=$(warm_need "${REBASE_MERGE_MIN}" "${REBASE_MERGE_COLD_MIN}" "${REAL_CACHE}/${REBASE_MERGE_MARK}")
  left=$(minutes_left)
  [[ -z ${left} || ${left} -ge ${need} ]] ||
    skip "time budget: ${left} min left before the deadline, the merge round trip needs ${need}"
  rm -rf "${work}"
  data=$(data_copy)
  before=$(awk -v t="${tag}" '$1 == t { print $1, $3, $4, $5 }' "${data}/versions.conf")
  awk '$2 != "555-560"' "${REPO_ROOT}/versions.conf" >"${data}/versions.conf"
  rm -rf "${data}/patches/555-560"
  NVP2P_DATA_DIR="${data}" run "${REPO_ROOT}/build.sh" --cache-dir "${REAL_CACHE}" \
    --work-dir "${work}" rebase "${tag}" --source "${REAL_GIT}" --kernel "${K61}"
  assert_success
  assert_output --partial "rebase    ${tag}: trying family 545-550 (nearest listed tag 550.163.01; three-way base 550.163.01)"
  assert_line --regexp '^  p2p-0001-bar1-p2p-hal-for-all-gpus\.patch +merged +three-way merge on 550\.163\.01'
  assert_output --partial "rebase ${tag}: family 545-550 needs changes for ${tag} (merged: p2p-0001; left-out: compat-0008, compat-0009, compat-0010): new family 560"
  assert_output --partial "+X-Refreshed-From: family 545-550, three-way merge on 550.163.01, by build.sh rebase ${tag}"
  assert_output --partial "${tag} added to versions.conf (family 560, tested apply,compile,build:6.1)"
  assert_equal "$(awk -v t="${tag}" '$1 == t { print $1, $3, $4, $5, $2, $8 }' "${data}/versions.conf")" \
    "${before} 560 apply,compile,build:6.1"
  run modinfo -F version "${work}/${tag}/modules-${K61}/nvidia.ko"
  assert_output "${tag}"
  : >"${REAL_CACHE}/${REBASE_MERGE_MARK}"
  # The refreshed p2p patches change the files they touch exactly as the
  # family maintained by hand does. (The compat patches were written per
  # family: the same conftest test, placed at other lines.)
  a="${BATS_TEST_TMPDIR}/tree-560" b="${BATS_TEST_TMPDIR}/tree-555-560"
  NVP2P_DATA_DIR="${data}" "${REPO_ROOT}/build.sh" --cache-dir "${REAL_CACHE}" --work-dir "${work}" \
    patch "${tag}" --out "${a}" >/dev/null
  "${REPO_ROOT}/build.sh" --cache-dir "${REAL_CACHE}" --work-dir "${work}" patch "${tag}" --out "${b}" >/dev/null
  local -a files
  mapfile -t files < <(sed -n 's|^+++ b/||p' "${data}"/patches/560/p2p-*.patch | sort -u)
  assert_equal "${files[*]}" "$(sed -n 's|^+++ b/||p' "${REPO_ROOT}"/patches/555-560/p2p-*.patch | sort -u | xargs)"
  for f in "${files[@]}"; do
    cmp "${a}/${f}" "${b}/${f}"
  done
}

# built_for_k61: "TAG DIR" of the first tag whose modules the matrix built
# for K61 (nothing when none was).
built_for_k61() {
  local t
  while IFS= read -r t; do
    if [[ -f ${REAL_WORK}/${t}/modules-${K61}/nvidia.ko ]]; then
      printf '%s %s\n' "${t}" "${REAL_WORK}/${t}/modules-${K61}"
      return 0
    fi
  done < <(awk -F'\t' -v k="build:${K61}" '$2 == k && $3 == "PASS" { print $1 }' "${REAL_RESULTS}")
}

# sig_enforce_smoke DIR TEXT...: ci/heavy/qemu-smoke.sh --sig-enforce on DIR
# passes and its output holds each TEXT (skips when QEMU or the kernel
# package cannot be had here).
sig_enforce_smoke() {
  local dir=$1 out rc=0 t
  shift
  out=$("${REPO_ROOT}/ci/heavy/qemu-smoke.sh" --kernel-release "${K61}" --modules "${dir}" --sig-enforce 2>&1) || rc=$?
  [[ ${rc} -ne 77 ]] || skip "ci/heavy/qemu-smoke.sh cannot run here: $(tail -n 1 <<<"${out}")"
  printf '# %s\n' "$(tail -n 1 <<<"${out}")" >&3
  for t in "$@"; do
    [[ ${rc} -eq 0 && ${out} == *"${t}"* ]] || { printf '%s\n(exit %s; expected: %s)\n' "${out}" "${rc}" "${t}" && return 1; }
  done
}

@test "Secure Boot: booted with module.sig_enforce=1 (QEMU), an unsigned nvidia.ko is refused as a user sees it" {
  local tag="" mods=""
  read -r tag mods < <(built_for_k61) || true
  [[ -n ${mods} ]] || skip "no tag was built for ${K61}"
  sig_enforce_smoke "${mods}" "qemu-smoke: PASS nvidia.ko refused on ${K61} under module.sig_enforce=1: insmod rc=129" \
    "kernel: Loading of unsigned module is rejected"
}

@test "Secure Boot: a nvidia.ko signed with a key the kernel does not trust (not enrolled) is refused too" {
  local tag="" mods="" signed="${BATS_TEST_TMPDIR}/signed" sf="/lib/modules/${K61}/build/scripts/sign-file" m
  read -r tag mods < <(built_for_k61) || true
  [[ -n ${mods} ]] || skip "no tag was built for ${K61}"
  [[ -x ${sf} ]] || skip "no ${sf} (Debian: linux-kbuild of ${K61})"
  command -v openssl >/dev/null || skip "openssl is not installed"
  cp -r "${mods}" "${signed}"
  openssl req -new -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=nvidia-p2p test key, not enrolled/" \
    -keyout "${BATS_TEST_TMPDIR}/key.pem" -out "${BATS_TEST_TMPDIR}/cert.pem" 2>/dev/null
  for m in "${signed}"/*.ko; do
    "${sf}" sha256 "${BATS_TEST_TMPDIR}/key.pem" "${BATS_TEST_TMPDIR}/cert.pem" "${m}"
  done
  run modinfo -F signer "${signed}/nvidia.ko"
  assert_output "nvidia-p2p test key, not enrolled"
  sig_enforce_smoke "${signed}" "kernel: Loading of module with unavailable key is rejected"
}

@test "install into a staging root with the real depmod: the P2P modules win over a DKMS copy" {
  local tag="" mods=""
  read -r tag mods < <(built_for_k61) || true
  [[ -n ${mods} ]] || skip "no tag was built for ${K61}"
  local root="${BATS_TEST_TMPDIR}/root"
  mkdir -p "${root}/lib/modules/${K61}/updates/dkms" "${root}/usr/lib/x86_64-linux-gnu" "${root}/etc"
  # A distribution/DKMS copy of nvidia.ko that must lose to ours.
  cp "${mods}/nvidia.ko" "${root}/lib/modules/${K61}/updates/dkms/nvidia.ko"
  touch "${root}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${tag}"
  mkdir -p "${root}/lib/firmware/nvidia/${tag}"
  : >"${root}/lib/firmware/nvidia/${tag}/gsp_ga10x.bin"
  STUBS="${BATS_TEST_TMPDIR}/stubs"
  mkdir -p "${STUBS}"
  printf '#!/bin/sh\nexit 0\n' >"${STUBS}/update-initramfs"
  printf '#!/bin/sh\necho 0\n' >"${STUBS}/id"
  chmod +x "${STUBS}"/*
  PATH="${STUBS}:${PATH}" run "${REPO_ROOT}/build.sh" --cache-dir "${REAL_CACHE}" --work-dir "${REAL_WORK}" \
    --root "${root}" --yes install "${tag}" --kernel "${K61}" --no-userspace --no-dkms
  assert_success
  run modprobe -d "${root}" -S "${K61}" --show-depends nvidia
  assert_success
  assert_output --partial "updates/nvidia-p2p/nvidia.ko"
  refute_output --partial "updates/dkms/nvidia.ko"
  run modinfo -F version "${root}/lib/modules/${K61}/updates/nvidia-p2p/nvidia-uvm.ko"
  assert_output "${tag}"
  PATH="${STUBS}:${PATH}" run "${REPO_ROOT}/build.sh" --cache-dir "${REAL_CACHE}" --work-dir "${REAL_WORK}" \
    --root "${root}" --yes uninstall
  assert_success
  run modprobe -d "${root}" -S "${K61}" --show-depends nvidia
  assert_output --partial "updates/dkms/nvidia.ko"
}
