#!/usr/bin/env bats
# The real-source tier: real upstream trees, real quilt, real kbuild against
# Debian's kernel headers, real modules, QEMU, depmod. Slow (minutes per tag).
# Every tag whose verified source this machine has runs; the others are
# skipped, visibly, with the reason.

load ../test_helper

setup_file() {
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  export REAL_CACHE="${NVP2P_TEST_CACHE:-${BATS_FILE_TMPDIR}/cache}"
  export REAL_WORK="${NVP2P_TEST_WORK:-${BATS_FILE_TMPDIR}/work}"
  export REAL_SUMMARY="${REAL_WORK}/summary.txt"
  export REAL_LOG="${BATS_FILE_TMPDIR}/matrix.log"
  local -a args=(--cache-dir "${REAL_CACHE}" --work-dir "${REAL_WORK}" --summary "${REAL_SUMMARY}" --bisect)
  [[ -n ${NVP2P_TEST_SOURCES:-} ]] && args+=(--sources "${NVP2P_TEST_SOURCES}")
  K61=$(newest_installed_headers)
  export K61
  if [[ -z ${K61} ]]; then
    export REAL_SKIP="no kernel headers installed (Debian: linux-headers-amd64)"
    return 0
  fi
  args+=(--kernel "${K61}" --qemu "${K61}")
  K612=${NVP2P_TEST_K612:-$("${REPO_ROOT}/ci/kernel-sysroot.sh" "${REAL_CACHE}/kernels/6.12" 6.12 2>/dev/null || true)}
  export K612
  [[ -n ${K612} ]] && args+=(--kernel-src "${K612}")
  mkdir -p "${REAL_WORK}"
  REAL_RC=0
  "${REPO_ROOT}/ci/matrix.sh" "${args[@]}" >"${REAL_LOG}" 2>&1 || REAL_RC=$?
  export REAL_RC
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

# result TAG COLUMN: PASS, FAIL, SKIP or - from the matrix summary.
result() {
  awk -v tag="$1" -v col="$2" '
    NR==1 && $1=="" { next }
    $1=="TAG" { for (i=1;i<=NF;i++) c[$i]=i; next }
    $1==tag && (col in c) { print $(c[col]); exit }' "${REAL_SUMMARY}"
}

reason() {
  sed -n -E "s/^(SKIP|FAIL) $1 $2: //p" "${REAL_SUMMARY}" | head -n 1
}

is_required() {
  [[ ",${NVP2P_TEST_REQUIRE:-}," == *",$1,"* ]]
}

# check_tag TAG: every column PASS; a skipped source fails only when required.
check_tag() {
  local tag=$1 src col
  src=$(result "${tag}" source)
  if [[ ${src} == SKIP ]]; then
    is_required "${tag}" && fail "required tag ${tag} was skipped: $(reason "${tag}" source)"
    skip "$(reason "${tag}" source)"
  fi
  for col in $(head -n 2 "${REAL_SUMMARY}" | awk '$1=="TAG" { for (i=2;i<=NF;i++) print $i }'); do
    [[ $(result "${tag}" "${col}") == PASS ]] ||
      fail "${tag} ${col}: $(result "${tag}" "${col}") $(reason "${tag}" "${col}") (matrix log: ${REAL_LOG})"
  done
  if [[ -z ${K612} ]]; then
    skip "${tag} passed every stage run, but no 6.12 headers could be extracted here, so the 6.12 build did not run"
  fi
}

@test "real-source matrix ran; summary (tag x stage)" {
  [[ -f ${REAL_SUMMARY} ]] || fail "no summary; matrix exit ${REAL_RC}: $(tail -n 30 "${REAL_LOG}")"
  sed 's/^/# /' "${REAL_SUMMARY}" >&3
  run grep -c ' FAIL ' "${REAL_SUMMARY}"
  assert_output 0
  assert_equal "${REAL_RC}" 0
}

@test "535.261.03 (Debian orig tarball): fetch --source, patch, build 6.1 + 6.12, module checks, QEMU load, bisect" {
  check_tag 535.261.03
}

@test "555.58.02 (Debian orig tarball): fetch --source, patch, build 6.1 + 6.12, module checks, QEMU load, bisect" {
  check_tag 555.58.02
}

@test "565.57.01 (upstream git or cache): fetch --source, patch, build 6.1 + 6.12, module checks, QEMU load, bisect" {
  check_tag 565.57.01
}

@test "install into a staging root with the real depmod: the P2P modules win over a DKMS copy" {
  local tag mods="" t
  for t in 535.261.03 555.58.02 565.57.01; do
    if [[ -f ${REAL_WORK}/${t}/modules-${K61}/nvidia.ko ]]; then
      tag=${t}
      mods="${REAL_WORK}/${t}/modules-${K61}"
      break
    fi
  done
  [[ -n ${mods} ]] || skip "no tag was built for ${K61}"
  local root="${BATS_TEST_TMPDIR}/root"
  mkdir -p "${root}/lib/modules/${K61}/updates/dkms" "${root}/usr/lib/x86_64-linux-gnu" "${root}/etc"
  # A distribution/DKMS copy of nvidia.ko that must lose to ours.
  cp "${mods}/nvidia.ko" "${root}/lib/modules/${K61}/updates/dkms/nvidia.ko"
  touch "${root}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${tag}"
  STUBS="${BATS_TEST_TMPDIR}/stubs"
  mkdir -p "${STUBS}"
  printf '#!/bin/sh\nexit 0\n' >"${STUBS}/update-initramfs"
  printf '#!/bin/sh\necho 0\n' >"${STUBS}/id"
  chmod +x "${STUBS}"/*
  PATH="${STUBS}:${PATH}" run "${REPO_ROOT}/build.sh" --cache-dir "${REAL_CACHE}" --work-dir "${REAL_WORK}" \
    --root "${root}" --yes install "${tag}" --kernel "${K61}" --no-userspace
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
