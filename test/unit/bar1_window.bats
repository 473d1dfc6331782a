#!/usr/bin/env bats
# The BAR1 window bookkeeping of p2p-0014 (bar1_p2p_window.h, plain C) on the
# host: the header is taken out of each family's patch, exactly as it ships,
# and test/kernel/bar1_p2p_window_test.c is built against it with the
# stand-ins of test/kernel/shim/ (nvtypes.h, nvstatus.h) and run under
# AddressSanitizer and UBSan.

HEADER_PATH="src/nvidia/inc/kernel/gpu/bus/bar1_p2p_window.h"
PATCH_NAME="p2p-0014-bar1-windows-without-static-bar1.patch"

setup() {
  load '../test_helper'
  common_setup
  KDIR="${REPO_ROOT}/test/kernel"
}

# families_with_windows: the families that carry p2p-0014, one per line.
families_with_windows() {
  local p
  for p in "${REPO_ROOT}"/patches/*/"${PATCH_NAME}"; do
    [[ -f ${p} ]] || continue
    basename "$(dirname "${p}")"
  done
}

sorted_families() {
  families_with_windows | LC_ALL=C sort
}

# extract_header PATCH OUTDIR: the file the patch adds at HEADER_PATH, under
# OUTDIR/gpu/bus/ (a new file: every line of its hunk is an addition).
extract_header() {
  mkdir -p "$2/gpu/bus"
  awk -v want="+++ b/${HEADER_PATH}" '
    /^\+\+\+ / { inside = ($0 == want); next }
    inside && /^@@/ { next }
    inside && /^(--- |diff )/ { inside = 0; next }
    inside && /^\+/ { print substr($0, 2); next }
    inside { inside = 0 }
  ' "$1" >"$2/gpu/bus/bar1_p2p_window.h"
  [[ -s "$2/gpu/bus/bar1_p2p_window.h" ]]
}

# build_test INCDIR OUT: the host test against the header under INCDIR.
build_test() {
  gcc -std=gnu99 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
    -I "${KDIR}/shim" -I "$1" "${KDIR}/bar1_p2p_window_test.c" -o "$2"
}

@test "bar1 window: the families that claim windows carry p2p-0014, the others say why not" {
  run sorted_families
  assert_success
  assert_output "$(printf '%s\n' 580-590 595 595.71 610 | LC_ALL=C sort)"
  local fam
  for fam in 535 545-550 555-560 565 570 575; do
    run grep -c "^${PATCH_NAME} " "${REPO_ROOT}/patches/${fam}/dropped.conf"
    assert_output 1
  done
}

@test "bar1 window: every family ships the same bar1_p2p_window.h" {
  local fam first=""
  while read -r fam; do
    extract_header "${REPO_ROOT}/patches/${fam}/${PATCH_NAME}" "${BATS_TEST_TMPDIR}/${fam}"
    if [[ -z ${first} ]]; then
      first=${fam}
    else
      run cmp "${BATS_TEST_TMPDIR}/${first}/gpu/bus/bar1_p2p_window.h" \
        "${BATS_TEST_TMPDIR}/${fam}/gpu/bus/bar1_p2p_window.h"
      assert_success
    fi
  done < <(families_with_windows)
  [[ -n ${first} ]]
}

@test "bar1 window: sizes, budget, placement, encoding and the list pass on the host (each family's header)" {
  local fam
  while read -r fam; do
    extract_header "${REPO_ROOT}/patches/${fam}/${PATCH_NAME}" "${BATS_TEST_TMPDIR}/${fam}"
    build_test "${BATS_TEST_TMPDIR}/${fam}" "${BATS_TEST_TMPDIR}/${fam}/t"
    run "${BATS_TEST_TMPDIR}/${fam}/t"
    assert_success
    assert_output --regexp '^[0-9]+ checks, 0 failed$'
  done < <(families_with_windows)
}

@test "bar1 window: the host test fails when the header is wrong" {
  local fam inc
  fam=$(families_with_windows | head -n 1)
  inc="${BATS_TEST_TMPDIR}/broken"
  extract_header "${REPO_ROOT}/patches/${fam}/${PATCH_NAME}" "${inc}"
  # no reserve kept: the budget and size checks must notice
  sed -i 's/^#define BAR1_P2P_WINDOW_RESERVE .*/#define BAR1_P2P_WINDOW_RESERVE  (0ULL)/' \
    "${inc}/gpu/bus/bar1_p2p_window.h"
  build_test "${inc}" "${inc}/t1"
  run "${inc}/t1"
  assert_failure 1
  assert_output --partial 'FAIL line'
  # encoded addresses not checked against the page size
  extract_header "${REPO_ROOT}/patches/${fam}/${PATCH_NAME}" "${inc}"
  sed -i 's/((pWindow->dmaBase + offset) & (pageSize - 1)) != 0/0/' "${inc}/gpu/bus/bar1_p2p_window.h"
  build_test "${inc}" "${inc}/t2"
  run "${inc}/t2"
  assert_failure 1
  assert_output --partial 'FAIL line'
}
