#!/usr/bin/env bats
# build.sh doctor and verify/p2p-doctor: real field reports and synthetic cases
# give their expected finding ids; --collect writes a bundle and nothing else;
# bad inputs give clear messages and documented exit codes; preflight and the
# pipeline show doctor's findings; verify points to doctor.

load ../test_helper

SHARED_REPORTS="${REPO_ROOT}/../shared/field-reports"

setup() {
  common_setup
  DOCTOR="${NVP2P_DOCTOR_BIN}"
  SYS="${BATS_TEST_TMPDIR}/sys"
  export NVP2P_SYSFS="${SYS}"
  mkdir -p "${SYS}/bus/pci/devices" "${NVP2P_PROCFS}"
  export TMPDIR="${BATS_TEST_TMPDIR}/tmp"
  mkdir -p "${TMPDIR}"
}

# case_ids DIR: the finding ids p2p-doctor reports for DIR, one line.
case_ids() {
  "${DOCTOR}" --from "$1" --brief | awk -F'\t' '$1 == "finding" { print $2 }' | sort -u | tr '\n' ' '
}

# case_exit DIR: p2p-doctor's exit status for DIR.
case_exit() {
  local rc=0
  "${DOCTOR}" --from "$1" --brief >/dev/null 2>&1 || rc=$?
  printf '%s\n' "${rc}"
}

# check_case DIR: DIR's expected.txt holds for the ids reported; prints what
# does not and fails then. A line "a|b": one of them; "!id": not that one;
# "exit:N" (or "exit:N|M"): the exit status.
check_case() {
  local dir=$1 ids line alt hit bad="" rc=""
  local -a alts
  ids=" $(case_ids "${dir}")"
  while IFS= read -r line || [[ -n ${line} ]]; do
    line=${line%%#*}
    line=${line//[[:space:]]/}
    [[ -n ${line} ]] || continue
    if [[ ${line} == exit:* ]]; then
      [[ -n ${rc} ]] || rc=$(case_exit "${dir}")
      [[ "|${line#exit:}|" == *"|${rc}|"* ]] || bad+=" exits ${rc}, not ${line#exit:}"
      continue
    fi
    if [[ ${line} == !* ]]; then
      [[ ${ids} != *" ${line#!} "* ]] || bad+=" reports ${line#!}"
      continue
    fi
    hit=0
    IFS='|' read -r -a alts <<<"${line}"
    for alt in "${alts[@]}"; do
      [[ ${ids} == *" ${alt} "* ]] && hit=1
    done
    [[ ${hit} -eq 1 ]] || bad+=" lacks ${line}"
  done <"${dir}/expected.txt"
  if [[ -n ${bad} ]]; then
    printf '%s:%s (reported:%s)\n' "${dir##*/}" "${bad}" "${ids}"
    return 1
  fi
}

# check_corpus DIR: every case of DIR; fails listing the cases that do not hold.
check_corpus() {
  local corpus=$1 d n=0 failed=""
  for d in "${corpus}"/*/; do
    [[ -f ${d}expected.txt ]] || continue
    n=$((n + 1))
    check_case "${d%/}" || failed+=" ${d%/}"
  done
  # (return: under `run`, errexit is off, and fail alone would not end this)
  [[ ${n} -gt 0 ]] || { fail "no case in ${corpus}" || return 1; }
  [[ -z ${failed} ]] || { fail "cases not diagnosed as expected:${failed}" || return 1; }
  printf '%d cases\n' "${n}"
}

@test "field reports of ../shared/field-reports: every case gives its established cause" {
  [[ -d ${SHARED_REPORTS} ]] || skip "no ${SHARED_REPORTS} on this machine (the project's shared field reports)"
  check_corpus "${SHARED_REPORTS}"
}

@test "field reports collected here from public threads (test/fixtures/field-reports): every case" {
  run check_corpus "${REPO_ROOT}/test/fixtures/field-reports"
  assert_success
  assert_output --regexp '^[0-9]+ cases$'
}

@test "synthetic edge cases (test/fixtures/doctor): every case" {
  run check_corpus "${REPO_ROOT}/test/fixtures/doctor"
  assert_success
}

@test "the case check can fail: a wrong expectation, a forbidden id reported" {
  local d="${BATS_TEST_TMPDIR}/case"
  mkdir -p "${d}"
  cp "${REPO_ROOT}/test/fixtures/doctor/s14-proprietary-module/"*.txt "${d}/"
  printf 'rebar-off\n' >"${d}/expected.txt"
  run check_case "${d}"
  assert_failure
  assert_output --partial "lacks rebar-off"
  printf '!stock-module-loaded\n' >"${d}/expected.txt"
  run check_case "${d}"
  assert_failure
  assert_output --partial "reports stock-module-loaded"
}

@test "nvidia-p2p-dkms upgraded, the old open module still loaded: reboot, not another driver; another package: stock" {
  local fx="${REPO_ROOT}/test/fixtures/doctor" d="${BATS_TEST_TMPDIR}/case"
  run "${DOCTOR}" --from "${fx}/s35-p2p-dkms-upgraded-before-reboot"
  assert_failure 30
  assert_output --partial "nvidia-p2p-dkms was upgraded to 550.163.01; the open module 535.261.03 is still loaded"
  assert_output --partial "fix: reboot (or unload and reload the modules"
  assert_output --partial "fix: reboot (or unload and reload the nvidia modules): nvidia-p2p-dkms 550.163.01 is installed"
  refute_output --partial "remove the other driver"
  refute_output --partial "stock-module-loaded"
  # Debian's proprietary nvidia-kernel-dkms in its place: another driver, named
  run "${DOCTOR}" --from "${fx}/s36-debian-kernel-dkms-replaced-ours"
  assert_failure 30
  assert_output --partial "stock-module-loaded [blocks, certain]"
  assert_output --partial "fix: remove the other driver's kernel modules (installed: sudo apt-get purge nvidia-kernel-dkms)"
  refute_output --partial "p2p-module-upgraded-not-loaded"
  # the state of s35 with another open module package installed: that one may be the loaded module
  mkdir -p "${d}"
  cp "${fx}/s35-p2p-dkms-upgraded-before-reboot/"*.txt "${d}/"
  sed -i 's/^other-nvidia-kernel-packages: none$/other-nvidia-kernel-packages: nvidia-open-kernel-dkms/' "${d}/nvidia-p2p.txt"
  run "${DOCTOR}" --from "${d}"
  assert_output --partial "stock-module-loaded [blocks, certain]"
  assert_output --partial "the loaded nvidia module is not the one nvidia-p2p installed"
  assert_output --partial "sudo apt-get purge nvidia-open-kernel-dkms"
  refute_output --partial "p2p-module-upgraded-not-loaded"
  # ...the other packages not listed, or no dpkg line at all (no dpkg, an older bundle): unknown, as before
  cp "${fx}/s35-p2p-dkms-upgraded-before-reboot/nvidia-p2p.txt" "${d}/"
  sed -i '/^other-nvidia-kernel-packages:/d' "${d}/nvidia-p2p.txt"
  run "${DOCTOR}" --from "${d}"
  assert_output --partial "the loaded nvidia module is not the one nvidia-p2p installed"
  refute_output --partial "p2p-module-upgraded-not-loaded"
  sed -i '/^nvidia-p2p-dkms:/d' "${d}/nvidia-p2p.txt"
  run "${DOCTOR}" --from "${d}"
  assert_output --partial "the loaded nvidia module is not the one nvidia-p2p installed"
  refute_output --partial "p2p-module-upgraded-not-loaded"
  # ...a proprietary 535.261.03 loaded (a .run, no package): another driver, no reboot advice
  cp "${fx}/s35-p2p-dkms-upgraded-before-reboot/nvidia-p2p.txt" "${d}/"
  sed -i 's/Open Kernel Module for x86_64/x86_64 Kernel Module/' "${d}/nvidia-version.txt" "${d}/dmesg.txt"
  run "${DOCTOR}" --from "${d}"
  assert_output --partial "NVIDIA's proprietary one"
  refute_output --partial "fix: reboot"
  cp "${fx}/s35-p2p-dkms-upgraded-before-reboot/"*.txt "${d}/"
  # ...and the package at the loaded version (srcversions differ: a rebuilt module): not an upgrade
  cp "${fx}/s35-p2p-dkms-upgraded-before-reboot/nvidia-p2p.txt" "${d}/"
  sed -i 's/^nvidia-p2p-dkms: .*/nvidia-p2p-dkms: 535.261.03-1/' "${d}/nvidia-p2p.txt"
  run "${DOCTOR}" --from "${d}"
  refute_output --partial "p2p-module-upgraded-not-loaded"
}

@test "--json is valid JSON of schema 1 with the documented members, for every case" {
  command -v python3 >/dev/null || skip "python3 not installed"
  local d ids
  ids=$("${DOCTOR}" --list-ids | tr '\n' ' ')
  for d in "${REPO_ROOT}"/test/fixtures/doctor/*/ "${REPO_ROOT}"/test/fixtures/field-reports/*/; do
    run python3 - "${d}" "${DOCTOR}" "${ids}" <<'PY'
import json, subprocess, sys
d, tool, ids = sys.argv[1], sys.argv[2], sys.argv[3].split()
p = subprocess.run([tool, "--from", d, "--json"], capture_output=True, text=True)
j = json.loads(p.stdout)
assert j["tool"] == "p2p-doctor" and j["schema"] == 1, "header"
for k in ("inputs", "notes", "gpus", "findings", "pairs", "collect", "verdict", "driver", "inputs_consistent"):
    assert k in j, k
assert j["verdict"]["exit_code"] == p.returncode, (j["verdict"], p.returncode)
for f in j["findings"]:
    assert f["id"] in ids, f["id"]
    assert f["scope"] in ("machine", "gpu", "pair") and f["severity"] in ("blocks", "degrades", "info")
    assert f["certainty"] in ("certain", "likely", "possible") and f["summary"]
    for e in f["evidence"]:
        assert e["file"] and e["line"] >= 1 and isinstance(e["text"], str)
n = len(j["gpus"])
assert len(j["pairs"]) == (n * (n - 1) if n > 1 else 0)
for p2 in j["pairs"]:
    assert p2["verdict"] in ("p2p-bar1", "p2p-nvlink", "p2p", "host-staged", "not-possible", "unknown")
    assert p2["basis"] in ("observed", "inferred", "none")
PY
    [[ ${status} -eq 0 ]] || fail "${d}: ${output}"
  done
}

@test "exit codes: 0 healthy, 30 blocked, 31 insufficient data, 32 no pair, 33 nothing readable, 2 usage" {
  local fx="${REPO_ROOT}/test/fixtures/doctor"
  run "${DOCTOR}" --from "${fx}/s01-working-2x4090-bundle"
  assert_success
  assert_output --partial "== VERDICT: OK (exit 0) =="
  run "${DOCTOR}" --from "${fx}/s02-amd-vi-io-page-fault"
  assert_failure 30
  # every pair with an observed verdict, nothing that stops P2P, data unchecked: 0, and said
  run "${DOCTOR}" --from "${REPO_ROOT}/test/fixtures/field-reports/44-2x3090-working-debian"
  assert_success
  assert_output --partial "== VERDICT: OK (exit 0) =="
  assert_line "  - P2P is seen on 2 pairs, but no output checked that its data arrives intact: build.sh doctor --verify checks every byte"
  # a pair's state that cannot be told, or a symptom whose cause cannot: 31
  run "${DOCTOR}" --from "${fx}/s33-bad-matrices"
  assert_failure 31
  run "${DOCTOR}" --from "${fx}/s28-p2p-slower-no-cause"
  assert_failure 31
  assert_output --partial "or why P2P fails where it does"
  mkdir -p "${BATS_TEST_TMPDIR}/nogpu" "${BATS_TEST_TMPDIR}/empty"
  printf 'iommu-present: 0\nsysfs-gpus: 0\n' >"${BATS_TEST_TMPDIR}/nogpu/sysfs.txt"
  run "${DOCTOR}" --from "${BATS_TEST_TMPDIR}/nogpu"
  assert_failure 32
  run "${DOCTOR}" --from "${BATS_TEST_TMPDIR}/empty"
  assert_failure 33
  assert_output --partial "no readable file"
  run "${DOCTOR}" --from "${BATS_TEST_TMPDIR}/missing"
  assert_failure 33
  assert_output --partial "cannot read directory"
  run "${DOCTOR}" --bogus
  assert_failure 2
  run "${DOCTOR}"
  assert_failure 2
  run "${DOCTOR}" --from "${fx}/s01-working-2x4090-bundle" --json --brief
  assert_failure 2
}

@test "bad inputs: empty, truncated, binary, unreadable, a link, a 100 MB dmesg: clear messages, never a crash" {
  local d="${BATS_TEST_TMPDIR}/bad"
  mkdir -p "${d}"
  : >"${d}/empty.txt"
  printf '|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:0' >"${d}/nvidia-smi.txt"
  head -c 4096 /bin/sh >"${d}/binary.txt"
  ln -s /dev/zero "${d}/zero.txt"
  printf 'x\n' >"${d}/unreadable.txt"
  chmod 000 "${d}/unreadable.txt"
  { yes '[  123.456789] usb 1-1: new high-speed USB device number 7 using xhci_hcd' | head -c 104857600
    printf '\n[99999.000001] nvidia 0000:41:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0d address=0x0 flags=0x20]\n'; } >"${d}/dmesg.txt"
  local start=${SECONDS}
  run "${DOCTOR}" --from "${d}"
  [[ $((SECONDS - start)) -lt 30 ]] || fail "100 MB took $((SECONDS - start)) s"
  [[ ${status} -eq 30 || ${status} -eq 31 ]] || fail "exit ${status}: ${output}"
  assert_line --regexp '^  empty\.txt +empty'
  assert_line --regexp '^  binary\.txt +skipped +binary data'
  assert_line --regexp '^  zero\.txt +skipped +a symbolic link \(not followed\)'
  assert_line --regexp '^  dmesg\.txt +read +[0-9]+ lines: kernel log'
  assert_output --partial "dmesg.txt:"
  assert_output --partial "IO_PAGE_FAULT"
  if [[ $(id -u) -ne 0 ]]; then
    assert_line --regexp '^  unreadable\.txt +unreadable'
  fi
  # the per-file limit is said, not silent
  run "${DOCTOR}" --from "${d}" --max-file-mib 1
  assert_line --regexp '^  dmesg\.txt +partial .*read the first 1 MiB of 100 MiB'
}

@test "a healthy 4x H100 NVLink box (issue 25): every pair p2p-nvlink observed, no finding that stops P2P, exit 0" {
  local d="${REPO_ROOT}/test/fixtures/doctor/s27-4xh100-nvlink-healthy"
  run "${DOCTOR}" --from "${d}" --brief
  assert_success
  assert_equal "$(grep -c $'^pair\t.*\tp2p-nvlink\tobserved\t' <<<"${output}")" 12
  refute_line --regexp $'^finding\t[a-z0-9-]+\t(blocks|degrades)\t'
  assert_line $'verdict\tOK\t0'
  run "${DOCTOR}" --from "${d}"
  assert_line "  - P2P is seen on 10 pairs, but no output checked that its data arrives intact: build.sh doctor --verify checks every byte"
  assert_line --regexp '^  nvbandwidth\.txt +read +[0-9]+ lines: nvbandwidth$'
}

@test "real 2x H100 NVLink bundles (device machine, 2026-11-26): --collect --verify exits 0; the host-path stand-in fires p2p-latency-high" {
  local fx="${REPO_ROOT}/test/fixtures/doctor"
  # the positive control: every pair p2p-nvlink, observed, its data checked by p2p-verify
  run "${DOCTOR}" --from "${fx}/r02-h100x2-nvlink-verified" --brief
  assert_success
  assert_equal "$(grep -c $'^pair\t.*\tp2p-nvlink\tobserved\t' <<<"${output}")" 2
  refute_line --regexp $'^finding\t[a-z0-9-]+\t(blocks|degrades)\t'
  refute_line --regexp $'^finding\tinsufficient-data\t'
  assert_line $'verdict\tOK\t0'
  # p2p-verify --perf-peer-off: P2P=Enabled measured over the host path, on real GPUs
  run "${DOCTOR}" --from "${fx}/r03-h100x2-perf-peer-off"
  assert_failure 31
  assert_output --partial "p2p-latency-high (GPU0-GPU1) [degrades, certain]"
  assert_output --partial "GPU0->GPU1 14.61 us with P2P, 13.22 us without (p2p-verify)"
  assert_output --partial "1. virtual-machine [possible]"
  refute_output --partial "p2p-slower-than-host"
}

@test "symptoms: P2P slower than host staging, side by side with the link's limit, causes ranked with their certainty" {
  local fx="${REPO_ROOT}/test/fixtures/doctor"
  # ACS on the switch ports, read from lspci -tv and setpci: the likely cause, blocked
  run "${DOCTOR}" --from "${fx}/s30-lspci-tree-setpci-acs"
  assert_failure 30
  assert_output --partial "p2p-slower-than-host (GPU0-GPU1) [degrades, certain]"
  assert_output --partial "GPU0->GPU1 3.0 GB/s with P2P vs 11.8 host-staged; GPU1->GPU0 3.1 vs 11.9 (p2pBandwidthLatencyTest, unidirectional)"
  assert_line "      1. acs-redirect [likely]: PCIe switch port 0000:02:08.0 between the two GPUs has ACS ReqRedir/CmpltRedir on: peer requests are sent up to the root complex instead of across the switch"
  assert_line "    ruled out: the CPU interconnect (one PCIe switch, lspci)"
  assert_output --partial "evidence: setpci.txt:3: 02:08.0: 001d"
  # nvbandwidth against the host path, the IOMMU translating
  run "${DOCTOR}" --from "${fx}/s29-nvbandwidth-iommu-translated"
  assert_failure 30
  assert_output --partial "GPU0->GPU1 5.9 GB/s with P2P vs 25.2 on its host path"
  assert_line --regexp '^      1\. iommu-translated \[likely\]: '
  assert_line "    ruled out: a virtual machine (no hypervisor in the kernel log)"
  # p2p-verify's JSON: its limit, and NCCL with P2P against NCCL_P2P_DISABLE=1
  run "${DOCTOR}" --from "${fx}/s34-verify-json-slow-pcie"
  assert_failure 31
  assert_output --partial "the link's limit is 31.5 GB/s per direction (p2p-verify's figure for its pcie path), P2P reaches 21% of it"
  assert_output --partial "NCCL's all-reduce reaches a bus bandwidth of 5.8 GB/s with P2P allowed, 19.4 with NCCL_P2P_DISABLE=1"
  # nothing else known: said, with what to collect, not a bare insufficient-data
  run "${DOCTOR}" --from "${fx}/s28-p2p-slower-no-cause"
  assert_line "    likely causes: none that the outputs read show"
  assert_output --partial "not shown by the outputs (collect them): ACS on the bridges between them"
  assert_output --partial "the IOMMU mode (cat /proc/cmdline; sudo dmesg)"
  # nccl-tests pasted twice, with and without NCCL_P2P_DISABLE=1
  run "${DOCTOR}" --from "${fx}/s31-nccl-p2p-slower-than-shm" --json
  command -v python3 >/dev/null || skip "python3 not installed"
  run python3 -c '
import json, sys
j = json.loads(sys.argv[1])
f = [x for x in j["findings"] if x["id"] == "p2p-slower-than-host"][0]
assert f["scope"] == "pair" and f["causes"] == [] and "IOMMU" in f["not_shown"], f
assert "5.8 GB/s with P2P allowed, 18.2 with NCCL_P2P_DISABLE=1" in f["summary"], f["summary"]
print("ok")' "${output}"
  assert_output ok
}

@test "runs over GPU subsets (field report 95, NVIDIA/nccl#428): one GPU is one GPU, each run's numbers are its own, NODE pairs named to measure" {
  local d="${REPO_ROOT}/test/fixtures/field-reports/95-4xt4-nccl-node-pair-p2p-slow-cvd-runs"
  run "${DOCTOR}" --from "${d}" --brief
  assert_failure 30
  # topo -m numbers 4 GPUs; the runs name 3 by address, as device 0/1 of CUDA_VISIBLE_DEVICES=0,1 and =1,2:
  # 4 GPUs, not 3 + 4, and bus 86 is GPU1 in both runs
  assert_equal "$(grep -c $'^gpu\t' <<<"${output}")" 4
  assert_line $'gpu\tGPU0\t0000:3b:00.0\tTesla T4\tBAR1 unknown'
  assert_line $'gpu\tGPU1\t0000:86:00.0\tTesla T4\tBAR1 unknown'
  assert_line $'gpu\tGPU2\t0000:af:00.0\tTesla T4\tBAR1 unknown'
  # the SYS pairs are judged on the right GPUs; the NODE pairs are not guessed at
  assert_line --regexp $'^finding\tcross-root-complex\tblocks\tlikely\tGPU0-GPU1\t'
  refute_line --regexp $'^finding\tcross-root-complex\t.*\tGPU1-GPU2\t'
  run "${DOCTOR}" --from "${d}"
  assert_line "  - P2P against host memory, GPU1-GPU2, GPU1-GPU3, GPU2-GPU3 (topo NODE: P2P is often slower there): build.sh verify"
  assert_line --partial "note: GPU numbers of nvidia-smi and of CUDA were taken as equal for GPU0, GPU1, GPU2"
  run "${DOCTOR}" --from "${d}" --json
  assert_output --partial '"inputs_consistent": true'
}

@test "real setpci and lspci -t pastes (field reports 88-90): each is read as such, cut lines are not, no fault is made up" {
  local fr="${REPO_ROOT}/test/fixtures/field-reports"
  # setpci -v's writes (NVIDIA's ACS script), the last line cut before its value
  run "${DOCTOR}" --from "${fr}/88-2xa6000-epyc-nccl-hang-setpci-v-acs-writes"
  assert_failure 31
  assert_line --regexp '^  setpci\.txt +read +33 lines: setpci$'
  refute_output --partial "acs-redirect"
  # a write in a shell loop over bridges ("$bdf"): the loop's devices, not "nothing recognised"
  run "${DOCTOR}" --from "${fr}/89-2x5880ada-nccl-hang-acs-root-ports-setpci-loop"
  assert_failure 31
  assert_line --regexp '^  setpci\.txt +read +3 lines: setpci$'
  refute_output --partial "cross-root-complex"
  # lspci -t without names, indented, starting inside a branch; wrapped GPU list: could not read
  # the GPUs, so 31 (their number cannot be told), not 32 (fewer than two)
  run "${DOCTOR}" --from "${fr}/90-3090-4090-epyc-lspci-t-indented-wrapped"
  assert_failure 31
  assert_output --partial "no NVIDIA GPU could be identified in what was read"
  assert_line --regexp '^  lspci\.txt +read +[0-9]+ lines: lspci -t$'
  refute_output --partial "link-degraded"
}

@test "bad input: decimal commas and a cut row are not read and said; a matrix of fewer GPUs maps by PCI address" {
  run "${DOCTOR}" --from "${REPO_ROOT}/test/fixtures/doctor/s33-bad-matrices"
  assert_failure 31
  assert_line "  note: p2pBandwidthLatencyTest.txt: 1 matrix row cut or wrapped (fewer values than the header, or a value without the decimals the tools print): the cut value was not read"
  assert_line "  note: p2pBandwidthLatencyTest.txt: 4 matrix values are not a number p2p-doctor reads (e.g. '20,30': decimal commas, thousands separators): not read"
  assert_line --regexp '^  GPU2 -> GPU3 +p2p +observed +peer access reported by CUDA; data integrity not checked$'
  refute_output --partial "slower than host staging"
}

@test "p2p-verify --json's hazard tests: a failed one is its own finding, the pair not-possible; a self-test's is none" {
  # the fixture lives beside p2p-verify's unit tests (verify/tests/fixtures): a 2x 4090 JSON whose
  # ordering test failed GPU0->GPU1 and stale test GPU1->GPU0, the rest passed, refused or not applicable
  local d="${BATS_TEST_TMPDIR}/hz"
  mkdir -p "${d}"
  cp "${REPO_ROOT}/verify/tests/fixtures/verify-json-hazards.json" "${d}/p2p-verify.json"
  run "${DOCTOR}" --from "${d}"
  assert_failure 30
  assert_line --regexp '^  verify-ordering \(GPU0-GPU1\) \[blocks, certain\]$'
  assert_line --regexp '^  verify-stale \(GPU0-GPU1\) \[blocks, certain\]$'
  assert_output --partial "hazards: GPU0->GPU1 ordering: FAIL: round 3: the reader on GPU1 saw the flag before the data"
  assert_output --partial "p2p-verify's hazard test failed (stale): P2P must not be used as it is"
  refute_output --partial "p2p-data-corruption"
  refute_output --partial "verify-atomics-lost"
  local id
  for id in verify-compressible-corrupt verify-atomics-lost verify-ordering verify-stale verify-managed; do
    run "${DOCTOR}" --list-ids
    assert_line "${id}"
  done
  # the same JSON from a hazard self-test: injected on purpose, nothing found
  sed -i 's/"self_test": null,$/"self_test": "stale",/' "${d}/p2p-verify.json"
  run "${DOCTOR}" --from "${d}"
  refute_output --partial "verify-ordering"
  refute_output --partial "verify-stale"
  assert_output --partial "p2p-verify --self-test injected corruption on purpose"
}

@test "the NVLink keep risk of 535-570 (p2p-0006): a bridged pair failing peer access is named with --nvlink off" {
  run "${DOCTOR}" --from "${REPO_ROOT}/test/fixtures/doctor/s32-nvlink-keep-570-peer-fails"
  assert_failure 30
  assert_output --partial "nvlink-keep-failed (GPU0-GPU1) [blocks, likely]"
  assert_output --partial "GSP firmware gets RMForceP2PType=2 too, and whether it still sets up NVLink peers then cannot be read from the source"
  assert_output --partial "fix: BAR1 P2P for every pair: sudo build.sh install <tag> --nvlink off"
}

@test "outputs that disagree on the GPU count are reported as such, nothing certain about the extra GPUs" {
  run "${DOCTOR}" --from "${REPO_ROOT}/test/fixtures/doctor/s18-gpu-counts-differ"
  assert_output --partial "the outputs list different numbers of GPUs"
  refute_line --regexp '(GPU[23]).*\[[a-z]+, certain\]|\[[a-z]+, certain\].*(GPU[23])'
  run "${DOCTOR}" --from "${REPO_ROOT}/test/fixtures/doctor/s18-gpu-counts-differ" --json
  assert_output --partial '"inputs_consistent": false'
}

# fake_gpu ADDR BAR1-SIZE-HEX IOMMU-TYPE: an NVIDIA GPU in the fixture sysfs.
fake_gpu() {
  local dev="${SYS}/bus/pci/devices/$1" grp="${SYS}/kernel/iommu_groups/${1//[:.]/}"
  mkdir -p "${dev}" "${grp}"
  echo 0x10de >"${dev}/vendor"
  echo 0x030000 >"${dev}/class"
  printf '%s\n' "0x00000000f0000000 0x00000000f0ffffff 0x0000000000040200" \
    "0x0000038000000000 $(printf '0x%016x' $((0x38000000000 + $2 - 1))) 0x000000000014220c" \
    "0x0000000000000000 0x0000000000000000 0x0000000000000000" \
    "0x0000038800000000 0x0000038801ffffff 0x000000000014220c" \
    "0x0000000000000000 0x0000000000000000 0x0000000000000000" \
    "0x0000000000000000 0x0000000000000000 0x0000000000000000" >"${dev}/resource"
  echo 0 >"${dev}/boot_vga"
  echo "16.0 GT/s PCIe" >"${dev}/max_link_speed"
  echo 16 >"${dev}/max_link_width"
  echo 16 >"${dev}/current_link_width"
  echo "$3" >"${grp}/type"
  ln -s "${grp}" "${dev}/iommu_group"
}

# files_outside: every file under HOME, the cache, TMPDIR and ROOT.
files_outside() {
  find "${HOME}" "${CACHE}" "${TMPDIR}" "${ROOT}" -mindepth 1 2>/dev/null | sort
}

@test "build.sh doctor on a machine without GPUs: says what it could and could not read, exit 32, writes nothing" {
  printf 'BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n' >"${NVP2P_PROCFS}/cmdline"
  stub dmesg - <<<'echo "dmesg: read kernel buffer failed: Operation not permitted" >&2; exit 1'
  stub journalctl - <<<'exit 1'
  rm -f "${STUBS}/nvidia-smi" "${STUBS}/lspci"
  local before
  before=$(files_outside)
  PATH="$(path_hiding nvidia-smi modinfo mokutil lspci)" run_build doctor
  assert_failure 32
  assert_output --partial "from this machine"
  assert_output --partial "not collected: nvidia-smi-q.txt: nvidia-smi is not installed (no NVIDIA driver yet)"
  assert_output --partial "not collected: lspci.txt: lspci is not installed (package pciutils)"
  assert_output --partial "modinfo is not installed (package kmod)"
  assert_output --partial "not collected: dmesg.txt: the kernel log could not be read"
  assert_output --partial "not collected: nvidia-version.txt: ${NVP2P_PROCFS}/driver/nvidia/version does not exist (the nvidia module is not loaded)"
  assert_line --regexp '^  cmdline\.txt +read +1 line: command line'
  assert_output --partial "== VERDICT: FEWER-THAN-2-GPUS (exit 32) =="
  assert_equal "$(files_outside)" "${before}"
}

@test "build.sh doctor builds its reader in a temporary directory and removes it" {
  unset NVP2P_DOCTOR_BIN
  rm -f "${STUBS}/nvidia-smi"
  local before
  before=$(files_outside)
  PATH="$(path_hiding nvidia-smi)" run_build doctor --json
  assert_failure 32
  assert_output --partial '"tool": "p2p-doctor"'
  assert_equal "$(files_outside)" "${before}"
  assert_not_exist "${REPO_ROOT}/verify/p2p-doctor.tmp"
}

@test "build.sh doctor without a C compiler says so (10); --collect still works" {
  unset NVP2P_DOCTOR_BIN
  CC=no-such-cc run_build doctor
  assert_failure 10
  assert_output --partial "doctor needs a C compiler"
  assert_output --partial "--collect DIR' still works"
  CC=no-such-cc run_build doctor --collect "${BATS_TEST_TMPDIR}/bundle"
  assert_success
  assert_file_exist "${BATS_TEST_TMPDIR}/bundle/MANIFEST.txt"
}

@test "--collect writes the bundle with a manifest, serial numbers and UUIDs removed, nothing elsewhere; --from diagnoses it" {
  as_root
  fake_gpu 0000:01:00.0 $((32 << 30)) DMA-FQ
  fake_gpu 0000:41:00.0 $((256 << 20)) DMA-FQ
  mkdir -p "${SYS}/class/iommu/ivhd0" "${SYS}/module/nvidia"
  echo 565.57.01 >"${SYS}/module/nvidia/version"
  mkdir -p "${NVP2P_PROCFS}/driver/nvidia"
  printf 'BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro amd_iommu=on\n' >"${NVP2P_PROCFS}/cmdline"
  printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (u@h)  Tue Nov 25 2026\n' \
    >"${NVP2P_PROCFS}/driver/nvidia/version"
  printf 'EnableResizableBar: 1\nRegistryDwords: "ForceP2P=0x11;RMForceP2PType=2"\n' >"${NVP2P_PROCFS}/driver/nvidia/params"
  stub nvidia-smi - <<'STUB'
case "$*" in
  -q) printf 'Driver Version : 565.57.01\nAttached GPUs : 2\n'
      for b in 01 41; do
        printf 'GPU 00000000:%s:00.0\n    Product Name : NVIDIA GeForce RTX 4090\n' "${b}"
        printf '    Serial Number : 13232220400%s\n    GPU UUID : GPU-3f1c2d4e-1111-2222-3333-4444555566%s\n' "${b}" "${b}"
      done ;;
  "topo -m") printf '\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n GPU0\t X \tPHB\t0-31\t0\n GPU1\tPHB\t X \t0-31\t0\n' ;;
  "topo -p2p r"|"topo -p2p w") printf ' \tGPU0\tGPU1\n GPU0\tX\tNS\n GPU1\tNS\tX\n' ;;
  "nvlink -s") echo "NVML: Unable to retrieve NVLink information as all links are inActive" ;;
  *) printf '|   %s  NVIDIA GeForce RTX 4090        Off |   00000000:%s:00.0 Off |                  Off |\n' 0 01 1 41 ;;
esac
STUB
  stub lspci - <<<'printf "01:00.0 VGA compatible controller: NVIDIA Corporation AD102 [GeForce RTX 4090] (rev a1)\n\tCapabilities: [100 v1] Device Serial Number 48-b0-2d-ff-ff-12-34-56\n"'
  stub dmesg - <<<'printf "[    1.0] iommu: Default domain type: Translated\n[    2.0] usb 1-1: unrelated\n[    3.0] NVRM: GPU at PCI:0000:01:00: GPU-3f1c2d4e-1111-2222-3333-444455556666\n"'
  stub mokutil - <<<'echo "SecureBoot disabled"'
  stub modinfo - <<<'printf "filename:       /lib/modules/x/updates/dkms/nvidia.ko\nversion:        565.57.01\nlicense:        Dual MIT/GPL\n"'
  local b="${BATS_TEST_TMPDIR}/bundle" before
  before=$(files_outside)
  run_build --root "${ROOT}" doctor --collect "${b}"
  assert_success
  assert_output --partial "bundle ${b}:"
  assert_output --partial "build.sh doctor --from ${b}"
  assert_equal "$(files_outside)" "${before}"
  local f
  for f in MANIFEST.txt nvidia-smi.txt nvidia-smi-q.txt nvidia-smi-topo-m.txt nvidia-smi-topo-p2p.txt \
    nvidia-smi-nvlink.txt lspci.txt dmesg.txt cmdline.txt nvidia-version.txt nvidia-params.txt modinfo.txt \
    modprobe.txt secure-boot.txt sysfs.txt userspace.txt nvidia-p2p.txt; do
    assert_file_exist "${b}/${f}"
  done
  assert_equal "$(find "${b}" -name '.*' | wc -l)" 0
  run grep -c $'^ok\t' "${b}/MANIFEST.txt"
  assert_output 16
  run grep -rE '13232220400|48-b0-2d|3f1c2d4e' "${b}"
  assert_failure
  run grep -c 'unrelated' "${b}/dmesg.txt"
  assert_output 0
  run grep -F 'sysfs-gpu 0000:41:00.0' "${b}/sysfs.txt"
  assert_success
  run "${DOCTOR}" --from "${b}"
  assert_failure 30
  assert_output --partial "rebar-off (GPU1)"
  assert_output --partial "iommu-translated"
  assert_output --regexp "evidence: sysfs.txt:[0-9]+: iommu_group_type DMA-FQ"
}

# fake_verify_data DIR: a data directory whose verify/Makefile "builds"
# p2p-verify (a script printing a passing p2p-verify --json) where
# VERIFY_BIN says, with the NVCC it is given.
fake_verify_data() {
  mkdir -p "$1/verify"
  cat >"$1/verify/Makefile" <<'MAKE'
VERIFY_BIN ?= p2p-verify
all: $(VERIFY_BIN)
$(VERIFY_BIN): fake-verify
	test -x "$(NVCC)"
	cp fake-verify $@
MAKE
  printf '#!/bin/sh\necho "{\\"tool\\": \\"p2p-verify\\", \\"verdict\\": {\\"exit_code\\": 0, \\"status\\": \\"PASS\\"}}"\n' \
    >"$1/verify/fake-verify"
  chmod +x "$1/verify/fake-verify"
}

@test "--collect --verify builds p2p-verify with nvcc in a temporary directory, and says so when there is no nvcc" {
  local data="${BATS_TEST_TMPDIR}/data" before
  fake_verify_data "${data}"
  stub nvcc
  before=$(files_outside)
  NVCC="${STUBS}/nvcc" NVP2P_DATA_DIR="${data}" run_build doctor --collect "${BATS_TEST_TMPDIR}/b1" --verify
  assert_success
  assert_output --partial "doctor --verify: building verify/p2p-verify with ${STUBS}/nvcc into a temporary directory"
  run grep -F $'ok\tp2p-verify.json\tp2p-verify --json --quick (exit 0; built now with '"${STUBS}/nvcc)" "${BATS_TEST_TMPDIR}/b1/MANIFEST.txt"
  assert_success
  run grep -c '"tool": "p2p-verify"' "${BATS_TEST_TMPDIR}/b1/p2p-verify.json"
  assert_output 1
  assert_not_exist "${data}/verify/p2p-verify"
  assert_equal "$(files_outside)" "${before}"
  # no nvcc: not built, and the bundle says why
  NVCC=/nonexistent/nvcc NVP2P_DATA_DIR="${data}" run_build doctor --collect "${BATS_TEST_TMPDIR}/b2" --verify
  assert_success
  assert_output --partial "p2p-verify.json	verify/p2p-verify is not built, and no nvcc was found to build it"
  assert_not_exist "${BATS_TEST_TMPDIR}/b2/p2p-verify.json"
  # doctor --verify says it in its report
  rm -f "${STUBS}/nvidia-smi"
  NVCC=/nonexistent/nvcc NVP2P_DATA_DIR="${data}" PATH="$(path_hiding nvidia-smi)" run_build doctor --verify
  assert_output --partial "not collected: p2p-verify.json: verify/p2p-verify is not built, and no nvcc was found"
}

@test "--collect refuses a non-empty directory (2), a file (2), a place it cannot create (33)" {
  mkdir -p "${BATS_TEST_TMPDIR}/full"
  touch "${BATS_TEST_TMPDIR}/full/x" "${BATS_TEST_TMPDIR}/file"
  run_build doctor --collect "${BATS_TEST_TMPDIR}/full"
  assert_failure 2
  assert_output --partial "not empty"
  run_build doctor --collect "${BATS_TEST_TMPDIR}/file"
  assert_failure 2
  run_build doctor --collect "${BATS_TEST_TMPDIR}/file/sub"
  assert_failure 33
  assert_output --partial "cannot create it"
  run_build doctor --collect "${BATS_TEST_TMPDIR}/b" --from "${BATS_TEST_TMPDIR}/full"
  assert_failure 2
  run_build doctor --collect "${BATS_TEST_TMPDIR}/b" --json
  assert_failure 2
  run_build doctor --from "${BATS_TEST_TMPDIR}/nonexistent"
  assert_failure 33
}

@test "doctor --help documents its modes, options and exit codes; help exit-codes lists 30-33" {
  run_build doctor --help
  assert_success
  local s
  for s in "--collect DIR" "--from DIR" "--verify" "--json" "30 a finding" "31 insufficient" "32 fewer" "33 nothing"; do
    assert_output --partial "${s}"
  done
  run_build help exit-codes
  assert_output --regexp '30[[:space:]]+doctor: a finding stops or breaks P2P'
  run "${DOCTOR}" --help
  assert_success
  assert_output --partial "--brief"
}

@test "preflight shows doctor's findings before the install, and they do not make it fail" {
  fake_gpu 0000:01:00.0 $((256 << 20)) identity
  fake_gpu 0000:41:00.0 $((256 << 20)) identity
  run_build --root "${ROOT}" preflight --kernel "${FIXTURE_KREL}"
  assert_line --partial "warn  doctor: rebar-off (GPU0) [blocks, certain]"
  assert_line --partial "warn  doctor: the findings above would stop P2P with these modules too"
  refute_output --partial "stock-module-loaded"
}

@test "the pipeline runs doctor in its preflight, before building" {
  make_fixture
  as_user
  stub sudo
  stub_dkms
  fake_gpu 0000:01:00.0 $((256 << 20)) identity
  fake_gpu 0000:41:00.0 $((256 << 20)) identity
  run_build --root "${ROOT}" --dry-run "${FIXTURE_TAG}" --no-ccache
  assert_success
  assert_output --partial "doctor: rebar-off"
  local pre build
  pre=$(grep -n 'doctor: rebar-off' <<<"${output}" | head -n 1 | cut -d: -f1)
  build=$(grep -n '] build ' <<<"${output}" | head -n 1 | cut -d: -f1)
  [[ ${pre} -lt ${build} ]] || fail "doctor's line (${pre}) after the build stage (${build})"
}

@test "build.sh verify points to doctor when P2P fails, and keeps the tool's exit code" {
  local data="${BATS_TEST_TMPDIR}/data"
  mkdir -p "${data}/verify"
  # verify/Makefile's targets that build.sh verify runs: nvcc-present, all
  printf 'nvcc-present:\n\t@true\nall:\n\t@true\n' >"${data}/verify/Makefile"
  printf '#!/bin/sh\necho "== VERDICT: CORRUPTION (exit 21) =="\nexit 21\n' >"${data}/verify/p2p-verify"
  chmod +x "${data}/verify/p2p-verify"
  NVP2P_DATA_DIR="${data}" run_build verify
  assert_failure 21
  assert_output --partial "build.sh doctor --verify names the cause"
  printf '#!/bin/sh\nexit 0\n' >"${data}/verify/p2p-verify"
  NVP2P_DATA_DIR="${data}" run_build verify
  assert_success
  refute_output --partial "doctor"
}

@test "display-attached says per driver version where RM puts the static BAR1 mapping beside the console" {
  local d="${BATS_TEST_TMPDIR}/case" v
  local placed="drivers 545-565 and 580+ (and 535, 570-575 with build.sh's patch p2p-0008) place"
  local above="in drivers 535 and 570-575 without build.sh's modules (patch p2p-0008), RM keeps the console"
  cp -r "${REPO_ROOT}/test/fixtures/doctor/s09-display-gpu-no-peer" "${d}"
  run "${DOCTOR}" --from "${d}" --brief
  assert_line --regexp '^finding	display-attached	blocks	likely	GPU0	GPU0 drives a display: drivers 545-565 and 580\+ \(and 535, 570-575 with build.sh.s patch p2p-0008\) place'
  for v in 535.288.01 570.86.15 570.211.01 575.64.05; do
    sed -i -E "s/^(Driver Version +: ).*/\1${v}/" "${d}/nvidia-smi-q.txt"
    run "${DOCTOR}" --from "${d}" --brief
    assert_line "finding	display-attached	blocks	likely	GPU0	GPU0 drives a display: ${above} at the bottom of BAR1 and puts the static BAR1 mapping above it, off the 512 MiB alignment its peer mapping needs, so BAR1 P2P with this GPU likely fails (docs/how-it-works.md, Mixed boxes)"
  done
  # before installing 535, 570 or 575 with build.sh (its tag): p2p-0008 places the mapping 512 MiB aligned
  for v in 535.288.01 570.211.01 575.64.05; do
    run "${DOCTOR}" --from "${d}" --brief --preinstall --tag "${v}"
    assert_line --partial "${placed}"
  done
  # --preinstall without a tag: the loaded 535 or 570 is the stock module, not p2p-0008's
  for v in 535.288.01 570.211.01; do
    sed -i -E "s/^(Driver Version +: ).*/\1${v}/" "${d}/nvidia-smi-q.txt"
    run "${DOCTOR}" --from "${d}" --brief --preinstall
    assert_line --partial "${above}"
  done

  for v in 565.77 590.48.01; do
    sed -i -E "s/^(Driver Version +: ).*/\1${v}/" "${d}/nvidia-smi-q.txt"
    run "${DOCTOR}" --from "${d}" --brief
    assert_line --partial "${placed}"
  done
}

@test "bar1-as-large-as-vram: from 565 on (or unknown), with the opt-in for that GPU's address; not before 565" {
  local d="${BATS_TEST_TMPDIR}/case"
  cp -r "${REPO_ROOT}/test/fixtures/doctor/s26-bar1-as-large-as-vram" "${d}"
  run "${DOCTOR}" --from "${d}"
  assert_output --partial "fix: opt in for this GPU: build.sh install <tag> --force-static-bar1 0000:41:00.0 (RMForceStaticBar1=1"
  run "${DOCTOR}" --from "${d}" --brief --preinstall --tag 560.35.03
  refute_output --partial "bar1-as-large-as-vram"
  run "${DOCTOR}" --from "${d}" --brief --preinstall --tag 565.57.01
  assert_line --regexp '^finding	bar1-as-large-as-vram	blocks	likely	GPU1	'
  # a GPU with 8 GiB of BAR1 to spare (GPU0, 24 GB in 32 GiB) is never reported
  refute_line --regexp '^finding	bar1-as-large-as-vram	.*	GPU0	'
}

@test "--collect's modprobe.txt: the files kmod reads, an /etc/modprobe.d file hiding the package's of its name, no comments" {
  local r="${BATS_TEST_TMPDIR}/r" b="${BATS_TEST_TMPDIR}/b"
  mkdir -p "${r}/etc/modprobe.d" "${r}/usr/lib/modprobe.d" "${r}/lib/modprobe.d" "${b}"
  # the package's options and install lines, and the admin's copy with the
  # options commented out (P2P off)
  printf 'options nvidia NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=2"\n' >"${r}/usr/lib/modprobe.d/nvidia-p2p.conf"
  printf 'install nvidia modprobe -i nvidia %s\n' "\$CMDLINE_OPTS" >"${r}/usr/lib/modprobe.d/nvidia-p2p-load.conf"
  printf '# options nvidia NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=2"\noptions nvidia NVreg_EnableResizableBar=1\n' \
    >"${r}/etc/modprobe.d/nvidia-p2p.conf"
  printf 'blacklist nouveau\n' >"${r}/lib/modprobe.d/nvidia-blacklists-nouveau.conf"
  # shellcheck disable=SC2016 # expanded by the inner bash
  run bash -c 'source "$1/build.sh" && P2P_ROOT=$2 && collect_modprobe "$3"' _ "${REPO_ROOT}" "${r}" "${b}"
  assert_success
  run cat "${b}/modprobe.txt"
  assert_line "/etc/modprobe.d/nvidia-p2p.conf:options nvidia NVreg_EnableResizableBar=1"
  assert_line "modprobe-hidden: /usr/lib/modprobe.d/nvidia-p2p.conf (overridden by /etc/modprobe.d/nvidia-p2p.conf)"
  assert_line "/usr/lib/modprobe.d/nvidia-p2p-load.conf:install nvidia modprobe -i nvidia \$CMDLINE_OPTS"
  assert_line "/lib/modprobe.d/nvidia-blacklists-nouveau.conf:blacklist nouveau"
  refute_output --partial "ForceP2P"
  # without the admin's copy: the package's options
  rm "${r}/etc/modprobe.d/nvidia-p2p.conf"
  # shellcheck disable=SC2016 # expanded by the inner bash
  run bash -c 'source "$1/build.sh" && P2P_ROOT=$2 && collect_modprobe "$3"' _ "${REPO_ROOT}" "${r}" "${b}"
  assert_success
  run cat "${b}/modprobe.txt"
  assert_line '/usr/lib/modprobe.d/nvidia-p2p.conf:options nvidia NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=2"'
  refute_output --partial "modprobe-hidden:"
  # merged /usr: /lib/modprobe.d is /usr/lib/modprobe.d, read once
  rm -r "${r:?}/lib"
  ln -s usr/lib "${r}/lib"
  # shellcheck disable=SC2016 # expanded by the inner bash
  run bash -c 'source "$1/build.sh" && P2P_ROOT=$2 && collect_modprobe "$3"' _ "${REPO_ROOT}" "${r}" "${b}"
  assert_success
  run grep -c 'nvidia-p2p.conf:options' "${b}/modprobe.txt"
  assert_output 1
  run cat "${b}/modprobe.txt"
  refute_output --partial "modprobe-hidden:"
  # nothing of nvidia: none
  rm "${r}"/usr/lib/modprobe.d/*
  # shellcheck disable=SC2016 # expanded by the inner bash
  run bash -c 'source "$1/build.sh" && P2P_ROOT=$2 && collect_modprobe "$3"' _ "${REPO_ROOT}" "${r}" "${b}"
  assert_success
  run cat "${b}/modprobe.txt"
  assert_output "modprobe-options: none (no nvidia or nouveau line in modprobe.d)"
}

@test "build.sh doctor --from a file (a saved paste) says to put it into a directory, 33" {
  printf 'GPU0 GPU1\n' >"${BATS_TEST_TMPDIR}/paste.txt"
  run_build doctor --from "${BATS_TEST_TMPDIR}/paste.txt"
  assert_failure 33
  assert_output --partial "is a file; --from reads a directory"
  assert_output --partial "mkdir pastes && mv paste.txt pastes/ && build.sh doctor --from pastes"
  run_build doctor --from "${BATS_TEST_TMPDIR}/nothing-here"
  assert_failure 33
  assert_output --partial "no such directory"
}

@test "real pastes of issue 35's classes: NVRM peer-mapping lines, a Markdown-quoted NCCL 1.x header, a test that stopped" {
  local fr="${REPO_ROOT}/test/fixtures/field-reports"
  # the driver's own lines, without timestamps: read, the cause named (30), not "nothing readable" (33)
  run "${DOCTOR}" --from "${fr}/92-2x3090-static-bar1-peer-dma-not-aligned"
  assert_failure 30
  assert_output --partial "static-bar1-peer-map-failed [blocks, certain]"
  assert_output --partial "the peer's static BAR1 starts at DMA address 0x6000400000, not on the 512 MiB boundary"
  assert_output --partial "the pair GPU0 -> GPU1 (RM's numbering)"
  refute_output --partial "insufficient-data"
  # NCCL 1.x's header with its '#' lost to Markdown: eight GPUs with their buses, and a test that stopped (31, not 33)
  run "${DOCTOR}" --from "${fr}/93-8xm40-nccl1-stall-acs-markdown-quoted"
  assert_failure 31
  assert_line --regexp '^  GPU7 +0000:91:00\.0 +Tesla M40 24GB'
  assert_output --partial "the output of the NCCL test stops at its column header, before the first result"
  # peer access on every pair, then the first bandwidth matrix never came: not a success (31, not 0)
  run "${DOCTOR}" --from "${fr}/94-4x1080ti-p2pbw-hangs-first-copy-iommu"
  assert_failure 31
  assert_output --partial "the output of p2pBandwidthLatencyTest stops at Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)"
  assert_output --partial "so the peer access it reported before is no sign that P2P works"
  # a paste that ends at the connectivity matrix (no copy yet) is no hang: field report 44 stays OK
  run "${DOCTOR}" --from "${fr}/44-2x3090-working-debian"
  assert_success
  refute_output --partial "test-output-cut"
  # nothing readable: 33, without an insufficient-data finding that repeats it
  printf 'hello\n' >"${BATS_TEST_TMPDIR}/x.txt"
  run "${DOCTOR}" --from "${BATS_TEST_TMPDIR}"
  assert_failure 33
  refute_output --partial "insufficient-data ["
}
