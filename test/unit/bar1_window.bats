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

# build_route_test INCDIR OUT: the route table's host test against the header
# under INCDIR.
build_route_test() {
  gcc -std=gnu99 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
    -I "${KDIR}/shim" -I "$1" "${KDIR}/bar1_p2p_route_test.c" -o "$2"
}

# docs_route_table PAGE: the table between the route-table markers of
# docs/PAGE.
docs_route_table() {
  sed -n '/^<!-- route-table: generated/,/^<!-- route-table: end -->/p' "${REPO_ROOT}/docs/$1" |
    sed '1d;$d'
}

@test "route table: every claim holds for every pair of GPU kinds, and the table is the reviewed one (each family's header)" {
  local fam
  while read -r fam; do
    extract_header "${REPO_ROOT}/patches/${fam}/${PATCH_NAME}" "${BATS_TEST_TMPDIR}/${fam}"
    build_route_test "${BATS_TEST_TMPDIR}/${fam}" "${BATS_TEST_TMPDIR}/${fam}/route"
    run "${BATS_TEST_TMPDIR}/${fam}/route"
    assert_success
    assert_output --regexp '^[0-9]+ checks, 0 failed$'
    run "${BATS_TEST_TMPDIR}/${fam}/route" --table
    assert_success
    assert_output "$(cat "${REPO_ROOT}/test/fixtures/route-table.txt")"
    run "${BATS_TEST_TMPDIR}/${fam}/route" --docs
    assert_success
    assert_output "$(docs_route_table bar1-windows.md)"
    assert_output "$(docs_route_table hazards.md)"
  done < <(families_with_windows)
}

@test "route table: the test fails when one gate's condition changes" {
  local fam inc hdr
  fam=$(families_with_windows | head -n 1)
  inc="${BATS_TEST_TMPDIR}/broken"
  hdr="${inc}/gpu/bus/bar1_p2p_window.h"
  # windows for any architecture again (issue 49, defect 1: RTX 5090 pairs)
  extract_header "${REPO_ROOT}/patches/${fam}/${PATCH_NAME}" "${inc}"
  sed -i '/^bar1P2PWindowRefusal/,/^}/{/if (!bar1P2PArchIsPreHopper(pGpu->arch))/{N;d}}' "${hdr}"
  run grep -c 'return BAR1_P2P_REASON_ARCH;' "${hdr}"
  assert_output 0
  build_route_test "${inc}" "${inc}/t1"
  run "${inc}/t1"
  assert_failure 1
  assert_output --partial 'FAIL line'
  assert_output --partial 'is_pre_hopper(g0->arch) && is_pre_hopper(g1->arch)'
  # managed memory kept off BAR1 only where both GPUs are pre-Hopper
  extract_header "${REPO_ROOT}/patches/${fam}/${PATCH_NAME}" "${inc}"
  sed -i 's/bar1P2PArchIsPreHopper(pGpu0->arch) ||/bar1P2PArchIsPreHopper(pGpu0->arch) \&\&/' "${hdr}"
  run grep -c 'bar1P2PArchIsPreHopper(pGpu0->arch) &&' "${hdr}"
  assert_output 1
  build_route_test "${inc}" "${inc}/t2"
  run "${inc}/t2"
  assert_failure 1
  assert_output --partial 'd.managedPeer == !preHopper'
  # windows where BAR1 covers VRAM
  extract_header "${REPO_ROOT}/patches/${fam}/${PATCH_NAME}" "${inc}"
  sed -i 's/if (pGpu->bar1Size >= pGpu->fbSize)/if (pGpu->bar1Size > pGpu->fbSize)/' "${hdr}"
  build_route_test "${inc}" "${inc}/t3"
  run "${inc}/t3"
  assert_failure 1
  assert_output --partial 'g0->bar1Size < g0->fbSize'
}

@test "route table: the patched call sites ask bar1P2PRouteOfGpus, not conditions of their own" {
  local fam p
  while read -r fam; do
    p="${REPO_ROOT}/patches/${fam}/${PATCH_NAME}"
    # which pairs are BAR1 P2P pairs (kern_bus_gh100.c), which get no P2P
    # (p2p_caps.c), which peers get a window (nv_gpu_ops.c)
    run grep -c '^+    bar1P2PRouteOfGpus(pGpu0, pGpu1, &route);' "${p}"
    assert_output 1
    run grep -c '^+            bar1P2PRouteOfGpus(pGpu, pPeerGpu, &route);' "${p}"
    assert_output 1
    run grep -c '^+    bar1P2PRouteOfGpus(pOwnerGpu, pMappingGpu, &route);' "${p}"
    assert_output 1
    run grep -c '_nvGpuOpsBar1WindowNeeded(pMemDesc->pGpu, pMappingGpu)' "${p}"
    assert_output 2
    # the old per-site conditions are gone
    run grep -c -E '^\+.*kbusIsStaticBar1Enabled\(pGpu0, pKernelBus0\) !=' "${p}"
    assert_output 0
    run grep -c -E '^\+.*withoutStatic' "${p}"
    assert_output 0
  done < <(families_with_windows)
}

# added_function PATCH NAME: the added lines (without '+') of the function
# NAME that PATCH adds, from its name to its closing brace.
added_function() {
  awk -v name="$2" '
    /^\+/ { line = substr($0, 2) } !/^\+/ { line = "" }
    line == name { on = 1 }
    on { print line }
    on && line == "}" { exit }
  ' "$1"
}

@test "bar1 window: teardown takes no lock without windows, and a window that cannot go keeps its memory" {
  local fam p body
  while read -r fam; do
    p="${REPO_ROOT}/patches/${fam}/${PATCH_NAME}"
    body=$(added_function "${p}" _nvGpuOpsBar1WindowsRelease)
    [[ -n ${body} ]]
    # the count of live windows is read before any lock is taken
    run awk '/g_bar1P2PWindowCount, 0\) == 0/ { n = NR } /_nvGpuOpsLocksAcquireAll|rmGpuLocksAcquire/ && !l { l = NR } END { exit !(n && l && n < l) }' <<<"${body}"
    assert_success
    # a count kept where windows are made and destroyed
    run grep -c -E '^\+ *portAtomic(In|De)crementS32\(&g_bar1P2PWindowCount\);' "${p}"
    assert_output 2
    # nvGpuOpsFreeDupedHandle frees the memory only when its window went
    run grep -c -E '^\+    if \(_nvGpuOpsBar1WindowsRelease\(device->session->handle, BAR1_P2P_WINDOW_MATCH_MEMORY,$' "${p}"
    assert_output 1
    run grep -c -E '^\+    if \(hPhysHandle != NV01_NULL_OBJECT\)$' "${p}"
    assert_output 1
  done < <(families_with_windows)
}
